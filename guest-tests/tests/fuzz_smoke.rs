//! A short run of the fuzz harness (`sim::fuzz`, the same one `fuzz/` drives with cargo fuzz)
//! over random inputs, so CI exercises it: random call sequences through the component
//! boundary, against the component and the native core in lockstep, must never trap, panic,
//! diverge, or change state on a refused call.
//!
//! `FUZZ_SMOKE_INPUTS=<n>` sets how many inputs (default 3,000); `FUZZ_INPUT=<file>` replays
//! one input instead (for example a crash file from `fuzz/artifacts/`).

use sequencer_guest_tests::sim::env_u64;
use sequencer_guest_tests::sim::fuzz::{random_input, run_input};
use sequencer_guest_tests::sim::rng::Rng;

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn random_call_sequences_through_the_boundary_only_ever_get_typed_errors() {
    if let Some(path) = std::env::var_os("FUZZ_INPUT") {
        let data = std::fs::read(&path).expect("read FUZZ_INPUT");
        let report = run_input(&data).unwrap_or_else(|e| panic!("{}: {e}", hex(&data)));
        println!("{report:?}");
        return;
    }
    let inputs = env_u64("FUZZ_SMOKE_INPUTS").unwrap_or(3_000);
    let mut rng = Rng::new(0xf022);
    let (mut calls, mut refusals, mut created) = (0, 0, 0);
    let fixed: [&[u8]; 4] = [&[], &[0; 64], &[0xff; 64], &[7; 300]];
    let randoms = (0..inputs).map(|_| random_input(&mut rng, 512));
    for data in fixed.iter().map(|d| d.to_vec()).chain(randoms) {
        match run_input(&data) {
            Ok(r) => {
                calls += r.calls;
                refusals += r.refusals;
                created += usize::from(r.created);
            }
            Err(e) => panic!(
                "fuzz input failed: {e}\ninput ({} bytes): {}",
                data.len(),
                hex(&data)
            ),
        }
    }
    println!("{inputs} random inputs: {calls} calls, {refusals} typed refusals, {created} created");
    assert!(
        created > 0 && refusals > 0,
        "the inputs reach a live sequencer and misuse it"
    );
}

/// Found by the fuzz target (`fuzz/`, ~94k executions in): a stored next PLog offset of
/// `u64::MAX` let the first transaction start there and `flush` overflow (a panic natively, offset
/// 0 handed out by the component). Storage data at the end of the offset range is now refused as
/// malformed, on both engines; replay `fuzz/regressions/flush-overflow-at-u64-max.bin` with
/// `FUZZ_INPUT=<file>`.
#[test]
fn flush_at_the_last_plog_offset_is_a_typed_outcome_not_an_overflow() {
    use sequencer_guest_tests::sim::calls::{Call, Delivery, Refusal, Reply};
    use sequencer_guest_tests::sim::engine::{EngineKind, boot};
    use sequencer_guest_tests::sim::io::Io;
    use sequencer_host::runtime::GuestParams;
    use sequencer_host::runtime::bindings::sequencer::plugin::types::KindSequences;

    let params = GuestParams {
        kinds: vec![KindSequences {
            kind: 1,
            sequences: vec![(1, 1)],
        }],
        max_unflushed_values: 4,
        lru_cache_size: 8,
        batcher_delay_ns: 1,
        retry_delay_ns: 1,
        max_retry_delay_ns: 1,
        retry_jitter_percent: 0,
    };
    for kind in [EngineKind::Component, EngineKind::Native] {
        let mut io = Io::default();
        let mut e = boot(kind, &params, &mut io).unwrap().unwrap();
        let mut call =
            |c: Call, io: &mut Io| e.call(&c, io).unwrap_or_else(|f| panic!("{kind:?}: {f}"));
        // A stored next offset at the very end of the range is refused as malformed storage
        // data (no event could follow it), on both engines, and the sequencer keeps waiting.
        let refused = call(
            Call::Deliver {
                op: 0,
                outcome: Delivery::NextOffset(u64::MAX),
            },
            &mut io,
        );
        assert!(
            matches!(refused, Reply::Done(Err(Refusal::MalformedPlogPage(_)))),
            "{kind:?}: {refused:?}"
        );
        call(
            Call::Deliver {
                op: 0,
                outcome: Delivery::NextOffset(u64::MAX - 1),
            },
            &mut io,
        );
        // So is a page claiming the PLog runs to the end of the range.
        let refused = call(
            Call::Deliver {
                op: 1,
                outcome: Delivery::PlogPage {
                    values: Vec::new(),
                    next: u64::MAX,
                    end: true,
                },
            },
            &mut io,
        );
        assert!(
            matches!(refused, Reply::Done(Err(Refusal::MalformedPlogPage(_)))),
            "{kind:?}: {refused:?}"
        );
    }
}
