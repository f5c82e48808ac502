//! Random call sequences against a model: numbers stay dense and are never reused, across
//! flush failures, torn writes, actualizations and restarts; memory stays within its bounds.

use core::time::Duration;
use std::collections::HashMap;

use proptest::prelude::*;
use sequencer::testkit::{Driver, MemStorage};
use sequencer::{NotNowReason, NumberKey, Params, SeqValue, Start, Status};

const MAX_UNFLUSHED: usize = 4;
const LRU: usize = 8;
const WIDEST_KIND: usize = 3;

fn params() -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 50)
        .with_seq(1, 3, 7)
        .with_seq(2, 1, 1)
        .with_seq(2, 9, 1000)
        .with_max_unflushed_values(MAX_UNFLUSHED)
        .with_lru_cache_size(LRU)
}

fn seqs_of(kind: u16) -> &'static [u16] {
    if kind == 1 { &[1, 2, 3] } else { &[1, 9] }
}

fn initial(kind: u16, seq: u16) -> u64 {
    match (kind, seq) {
        (1, 2) => 50,
        (1, 3) => 7,
        (2, 9) => 1000,
        _ => 1,
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// A command on workspace `ws`: start, `nexts` numbers, then commit (append + flush) or
    /// fail (actualize).
    Event {
        kind: u16,
        ws: u64,
        nexts: Vec<u8>,
        commit: bool,
    },
    /// The flusher and actualizer run.
    Run,
    /// Time passes.
    Advance(u64),
    /// Writes start failing / stop failing.
    FailWrites(u32),
    /// Reads fail.
    FailReads(u32),
    /// Writes are held / released.
    HoldWrites(bool),
    /// A crash: memory is lost; optionally a held write lands half (values, no offset).
    Crash { tear: bool },
    /// The caller asks for actualization outside a transaction.
    Actualize,
    /// Several events numbered in one transaction (`stage` after each), with the flusher
    /// running in between, then appended together and flushed, dropped (actualize), or lost
    /// to a crash before the append.
    /// The workspaces' numbers are read first in one go (`loads_ahead` + `preload`) when
    /// `preload` is set.
    Batch {
        kind: u16,
        events: Vec<(u64, Vec<u8>)>,
        preload: bool,
        run_between: bool,
        end: BatchEnd,
    },
}

#[derive(Clone, Copy, Debug)]
enum BatchEnd {
    Commit,
    Actualize,
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1u16..=2, 0u64..8, prop::collection::vec(0u8..4, 0..5), prop::bool::weighted(0.85))
            .prop_map(|(kind, ws, nexts, commit)| Op::Event { kind, ws, nexts, commit }),
        3 => Just(Op::Run),
        1 => (1u64..800).prop_map(Op::Advance),
        1 => (0u32..3).prop_map(Op::FailWrites),
        1 => (0u32..2).prop_map(Op::FailReads),
        1 => any::<bool>().prop_map(Op::HoldWrites),
        1 => any::<bool>().prop_map(|tear| Op::Crash { tear }),
        1 => Just(Op::Actualize),
        3 => (
            1u16..=2,
            prop::collection::vec((0u64..8, prop::collection::vec(0u8..4, 0..4)), 1..5),
            any::<bool>(),
            any::<bool>(),
            prop_oneof![6 => Just(BatchEnd::Commit), 1 => Just(BatchEnd::Actualize), 1 => Just(BatchEnd::Crash)],
        )
            .prop_map(|(kind, events, preload, run_between, end)| Op::Batch { kind, events, preload, run_between, end }),
    ]
}

/// What must be true of the numbers: per key, the last number that reached the PLog.
#[derive(Default)]
struct Model {
    committed: HashMap<NumberKey, u64>,
}

impl Model {
    fn expected_next(&self, kind: u16, ws: u64, seq: u16) -> u64 {
        self.committed
            .get(&NumberKey { ws, seq })
            .map_or(initial(kind, seq), |last| last + 1)
    }
}

fn check_memory(d: &Driver) -> Result<(), TestCaseError> {
    let held = d.seq.held_numbers();
    prop_assert!(held.cached <= LRU, "cache holds {} > {LRU}", held.cached);
    prop_assert!(
        held.unflushed <= MAX_UNFLUSHED + WIDEST_KIND,
        "unflushed {} > {}",
        held.unflushed,
        MAX_UNFLUSHED + WIDEST_KIND
    );
    // Staged events count in the backpressure, so a transaction holds at most the limit
    // plus one event's numbers.
    prop_assert!(
        held.unflushed + held.transaction <= MAX_UNFLUSHED + WIDEST_KIND,
        "unflushed {} + transaction {} > {}",
        held.unflushed,
        held.transaction,
        MAX_UNFLUSHED + WIDEST_KIND
    );
    Ok(())
}

/// Numbers one event of a batch (start, `nexts`, stage); its offset and values if it started.
fn stage_event(
    d: &mut Driver, model: &Model, kind: u16, ws: u64, nexts: &[u8],
    local: &mut HashMap<NumberKey, u64>,
) -> Result<Option<(u64, Vec<SeqValue>)>, TestCaseError> {
    let offset = match d.start(kind, ws).unwrap() {
        Start::Started(o) => o,
        Start::NotNow(NotNowReason::TooManyUnflushed) => {
            let held = d.seq.held_numbers();
            prop_assert!(held.unflushed + held.transaction > MAX_UNFLUSHED);
            return Ok(None);
        }
        Start::NotNow(NotNowReason::Actualizing) | Start::Load(_) => return Ok(None),
    };
    let mut values = Vec::new();
    for &i in nexts {
        let seq = seqs_of(kind)[i as usize % seqs_of(kind).len()];
        let key = NumberKey { ws, seq };
        let want = local
            .get(&key)
            .map_or_else(|| model.expected_next(kind, ws, seq), |n| n + 1);
        let got = d.seq.next(seq).unwrap();
        prop_assert_eq!(
            got,
            want,
            "next({}) in ws {} kind {} of a batch",
            seq,
            ws,
            kind
        );
        local.insert(key, got);
        values.push(SeqValue::new(ws, seq, got));
    }
    d.seq.stage().unwrap();
    prop_assert_eq!(d.seq.status(), Status::InTransaction);
    Ok(Some((offset, values)))
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut d = Driver::new(params(), MemStorage::new()).unwrap();
    d.page_events = 3;
    let mut model = Model::default();
    for op in ops {
        match op {
            Op::Event {
                kind,
                ws,
                nexts,
                commit,
            } => {
                let status = d.seq.status();
                let started = d.start(kind, ws).unwrap();
                let offset = match started {
                    Start::Started(o) => o,
                    Start::NotNow(NotNowReason::Actualizing) => {
                        prop_assert_eq!(status, Status::Actualizing);
                        continue;
                    }
                    Start::NotNow(NotNowReason::TooManyUnflushed) => {
                        prop_assert!(d.seq.held_numbers().unflushed > MAX_UNFLUSHED);
                        continue;
                    }
                    Start::Load(_) => continue, // an injected numbers-read failure
                };
                prop_assert_eq!(offset, d.storage.plog_next(), "offsets are dense");
                let mut local: HashMap<u16, u64> = HashMap::new();
                let mut values = Vec::new();
                for i in nexts {
                    let seq = seqs_of(kind)[i as usize % seqs_of(kind).len()];
                    let want = local
                        .get(&seq)
                        .map_or_else(|| model.expected_next(kind, ws, seq), |n| n + 1);
                    let got = d.seq.next(seq).unwrap();
                    prop_assert_eq!(got, want, "next({}) in ws {} kind {}", seq, ws, kind);
                    local.insert(seq, got);
                    values.push(SeqValue::new(ws, seq, got));
                }
                check_memory(&d)?;
                if commit {
                    d.storage.append(offset, &values).unwrap();
                    d.seq.flush().unwrap();
                    for v in values {
                        model.committed.insert(v.key, v.value);
                    }
                } else {
                    d.seq.actualize().unwrap();
                }
            }
            Op::Run => {
                d.run().unwrap();
            }
            Op::Advance(ms) => {
                d.advance(Duration::from_millis(ms)).unwrap();
            }
            Op::FailWrites(n) => d.storage.faults.fail_writes = n,
            Op::FailReads(n) => d.storage.faults.fail_reads = n,
            Op::HoldWrites(hold) => {
                d.storage.faults.hold_writes = hold;
                if !hold {
                    d.release_writes().unwrap();
                }
            }
            Op::Crash { tear } => {
                if tear {
                    d.tear_held_write();
                }
                d.restart(params()).unwrap();
                d.storage.faults.hold_writes = false;
            }
            Op::Actualize => {
                let was_actualizing = d.seq.status() == Status::Actualizing;
                prop_assert_eq!(d.seq.actualize().is_err(), was_actualizing);
            }
            Op::Batch {
                kind,
                events,
                preload,
                run_between,
                end,
            } => {
                if preload {
                    let all: Vec<u64> = events.iter().map(|(ws, _)| *ws).collect();
                    let mut ahead = Vec::new();
                    d.seq.loads_ahead(kind, &all, &mut ahead);
                    let seqs: Vec<u16> = d.seq.kind_seqs(kind).unwrap().collect();
                    for ws in ahead {
                        let stored = d.storage.read_numbers(ws, &seqs);
                        d.seq.preload(kind, ws, &stored).unwrap();
                    }
                }
                let mut local = HashMap::new();
                let mut staged: Vec<(u64, Vec<SeqValue>)> = Vec::new();
                for (ws, nexts) in events {
                    let Some(event) = stage_event(&mut d, &model, kind, ws, &nexts, &mut local)?
                    else {
                        break;
                    };
                    let expected = staged.last().map_or(d.storage.plog_next(), |(o, _)| o + 1);
                    prop_assert_eq!(event.0, expected, "a batch's offsets are dense");
                    staged.push(event);
                    check_memory(&d)?;
                    if run_between {
                        // The flusher may write older values, never staged ones: a crash
                        // here must not skip a number (the model checks after restart).
                        d.run().unwrap();
                    }
                }
                if staged.is_empty() {
                    prop_assert_eq!(d.seq.flush().unwrap_err(), sequencer::Error::NoTransaction);
                    continue;
                }
                match end {
                    BatchEnd::Commit => {
                        for (offset, values) in &staged {
                            d.storage.append(*offset, values).unwrap();
                        }
                        d.seq.flush().unwrap();
                        prop_assert_ne!(d.seq.status(), Status::InTransaction);
                        for (_, values) in staged {
                            for v in values {
                                model.committed.insert(v.key, v.value);
                            }
                        }
                    }
                    BatchEnd::Actualize => d.seq.actualize().unwrap(),
                    BatchEnd::Crash => {
                        d.run().unwrap();
                        d.restart(params()).unwrap();
                        d.storage.faults.hold_writes = false;
                    }
                }
            }
        }
        check_memory(&d)?;
        prop_assert_eq!(
            d.storage.offset_ahead_of_values(),
            None,
            "storage holds an offset ahead of its values"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn numbers_stay_dense_and_unreused_across_failures_and_restarts(
        ops in prop::collection::vec(op(), 1..120)
    ) {
        run(ops)?;
    }
}

#[test]
fn whole_cycle_continues_with_no_number_reused_on_a_fresh_sequencer() {
    let mut storage = MemStorage::new();
    for offset in 1..=30u64 {
        storage.seed_event(offset, &[SeqValue::new(offset % 4, 1, offset / 4 + 1)]);
    }
    let roomy = || params().with_max_unflushed_values(500);
    let mut d = Driver::new(roomy(), storage).unwrap();
    d.page_events = 7;
    d.run().unwrap();
    let mut last = HashMap::new();
    for i in 0..200u64 {
        let ws = i % 5;
        let (offset, numbers) = d.event(1, ws, &[1, 2]).unwrap().expect("started");
        assert_eq!(offset, 31 + i);
        last.insert(ws, numbers);
        if i % 9 == 0 {
            d.run().unwrap();
        }
    }
    d.run().unwrap();
    let storage = std::mem::take(&mut d.storage);

    let mut fresh = Driver::new(roomy(), storage).unwrap();
    fresh.run().unwrap();
    for (ws, numbers) in last {
        let (_, next) = fresh.event(1, ws, &[1, 2]).unwrap().expect("started");
        assert_eq!(next, vec![numbers[0] + 1, numbers[1] + 1], "workspace {ws}");
    }
}
