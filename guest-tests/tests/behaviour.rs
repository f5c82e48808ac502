//! The behaviour the component and its host promise, each proven through the compiled component.

use std::collections::HashMap;
use std::time::Duration;

use sequencer::{Params, SeqValue};
use sequencer_guest_tests::{Harness, assert_no_number_reused, load, runtime};
use sequencer_host::runtime::GuestError;
use sequencer_host::store::memory::{Faults, WriteRecord};
use sequencer_host::{HostError, Limits, MemoryStorage, NotNowReason, StartOutcome, Status};

const P: u32 = 1;

fn params() -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 1)
        .with_seq(1, 3, 1)
}

#[test]
fn a_flush_write_in_flight_never_blocks_the_command_processor() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    h.storage.write_gate.close();
    for i in 0..1_000u64 {
        let (offset, numbers) = h
            .event(&seq, 1, 77, &[1, 2, 3])
            .expect("start is never refused while the write is held");
        assert_eq!(offset, i + 1);
        assert_eq!(numbers, vec![i + 1; 3]);
    }
    h.storage.write_gate.wait_for_waiters(1);
    assert_eq!(
        h.storage.write_gate.waiting(),
        1,
        "exactly one write is held"
    );
    assert!(h.storage.writes().is_empty());

    h.storage.write_gate.open();
    h.driver.idle();
    for s in 1..=3 {
        assert_eq!(h.storage.view_value(P, 77, s), 1_000);
    }
    assert_eq!(h.storage.stored_next_offset(P), 1_000);
}

#[test]
fn cleanup_during_a_long_actualization_returns_without_waiting_for_it() {
    let storage = MemoryStorage::new();
    storage.seed_events(P, 1_000_000, |o| {
        vec![SeqValue::new(o % 1_000, 1, o / 1_000 + 1)]
    });
    storage.read_gate.close();
    storage.read_gate.allow(3); // the offset read and two pages pass; the third page is held
    let h = Harness::with(storage, runtime());
    let seq = h.open(P, &params());
    h.storage.read_gate.wait_for_waiters(1);
    assert_eq!(seq.status(), Status::Actualizing);
    assert!(seq.storage_ops_in_flight() >= 1, "the read is in flight");

    seq.cleanup();
    assert_eq!(seq.status(), Status::CleanedUp);
    h.driver.idle(); // returns only because the held read was abandoned
    assert_eq!(
        seq.storage_ops_in_flight(),
        0,
        "the held read was abandoned"
    );
    assert_eq!(
        h.storage.read_gate.waiting(),
        0,
        "nothing waits at the gate any more"
    );
    assert!(matches!(seq.start(1, 1), Err(HostError::Closed(P))));
}

fn refused<T: std::fmt::Debug>(r: Result<T, HostError>) -> GuestError {
    match r {
        Err(HostError::Sequencer(e)) => e,
        other => panic!("expected a typed refusal, got {other:?}"),
    }
}

#[test]
fn misuse_through_the_boundary_is_a_typed_error_and_the_instance_keeps_working() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    assert!(matches!(refused(seq.next(1)), GuestError::NoTransaction));
    assert!(matches!(refused(seq.flush()), GuestError::NoTransaction));
    assert!(matches!(
        refused(seq.start(9, 1)),
        GuestError::UnknownWsKind(9)
    ));
    assert!(matches!(seq.start(1, 5), Ok(StartOutcome::Started(1))));
    assert!(matches!(
        refused(seq.start(1, 6)),
        GuestError::TransactionInProgress
    ));
    assert!(matches!(
        refused(seq.next(4)),
        GuestError::UnknownSeqId(r) if r.kind == 1 && r.seq == 4
    ));
    assert_eq!(
        seq.next(1).unwrap(),
        1,
        "the transaction survived every refusal"
    );
    h.storage.read_gate.close(); // keep the actualization from finishing meanwhile
    seq.actualize().unwrap();
    assert!(matches!(
        refused(seq.actualize()),
        GuestError::AlreadyActualizing
    ));
    h.storage.read_gate.open();
    h.driver.idle();
    assert_eq!(seq.traps(), 0);
    assert!(h.event(&seq, 1, 5, &[1]).is_some());
}

#[test]
fn storage_sees_values_before_the_next_plog_offset() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    for i in 0..200u64 {
        h.event(&seq, 1, i % 7, &[1, 2]).unwrap();
        if i % 13 == 0 {
            h.driver.idle();
        }
    }
    h.driver.idle();
    // Replay the write log: whenever an offset lands, every event below it must already have
    // its numbers (or larger) in the view.
    let plog = h.storage.plog(P);
    let mut view: HashMap<(u64, u16), u64> = HashMap::new();
    let mut offsets = 0;
    for w in h.storage.writes() {
        match w {
            WriteRecord::Value(_, v) => {
                view.insert((v.key.ws, v.key.seq), v.value);
            }
            WriteRecord::Offset(_, next) => {
                offsets += 1;
                for (offset, event) in plog.iter().filter(|(o, _)| *o < next) {
                    for v in event {
                        let stored = view.get(&(v.key.ws, v.key.seq)).copied().unwrap_or(0);
                        assert!(
                            stored >= v.value,
                            "offset {next} landed before event {offset}'s values"
                        );
                    }
                }
            }
        }
    }
    assert!(offsets > 1, "several writes happened");
}

#[test]
fn transient_storage_failures_are_retried_with_backoff_and_nothing_is_lost() {
    let h = Harness::new();
    // The original's constant 500 ms, without jitter, so that the waits are exact.
    let params = params()
        .with_retry_delay(Duration::from_millis(500), Duration::from_millis(500))
        .with_retry_jitter_percent(0);
    let seq = h.open_ready(P, &params);
    h.storage.set_faults(Faults {
        fail_writes: 2,
        ..Faults::default()
    });
    h.event(&seq, 1, 3, &[1, 2, 3]).unwrap();
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 3, 1), 0, "first write failed");
    h.clock.advance(Duration::from_millis(499));
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 3, 1), 0, "no retry before 500 ms");
    h.clock.advance(Duration::from_millis(1));
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 3, 1), 0, "the retry failed too");
    h.clock.advance(Duration::from_millis(500));
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 3, 1), 1, "the third attempt landed");
    assert_eq!(h.storage.stored_next_offset(P), 1);

    // Read failures during actualization are retried the same way.
    h.storage.set_faults(Faults {
        fail_reads: 1,
        ..Faults::default()
    });
    seq.actualize().unwrap();
    h.driver.idle();
    assert_eq!(seq.status(), Status::Actualizing);
    h.clock.advance(Duration::from_millis(500));
    h.driver.idle();
    assert_eq!(seq.status(), Status::Ready);
    assert_eq!(h.event(&seq, 1, 3, &[1]).unwrap(), (2, vec![2]));
}

#[test]
fn permanent_failure_refuses_start_past_the_limit_and_recovery_reuses_nothing() {
    let h = Harness::new();
    let params = params().with_max_unflushed_values(10);
    let seq = h.open_ready(P, &params);
    // The view's storage fails for good; the PLog keeps accepting appends.
    h.storage.set_faults(Faults {
        fail_writes: u32::MAX,
        ..Faults::default()
    });
    let mut refused = None;
    for ws in 0..100u64 {
        match seq.start_next(1, ws, &[1]).unwrap() {
            (StartOutcome::Started(offset), n) => {
                seq.append(offset, &[SeqValue::new(ws, 1, n[0])]).unwrap();
                seq.flush().unwrap();
            }
            (StartOutcome::NotNow(reason), _) => {
                refused = Some((ws, reason));
                break;
            }
        }
        h.driver.idle();
    }
    let (ws, reason) = refused.expect("start refused once the unflushed limit was passed");
    assert!(matches!(reason, NotNowReason::TooManyUnflushed));
    assert_eq!(ws, 11, "refused right after more than 10 values waited");

    h.storage.set_faults(Faults::default());
    h.clock.advance(Duration::from_secs(1));
    h.driver.idle();
    assert!(h.event(&seq, 1, 500, &[1]).is_some(), "start works again");
    // A fresh sequencer over the same storage continues without reuse.
    seq.cleanup();
    let seq = h.open_ready(P, &params);
    for ws in 0..12u64 {
        h.event(&seq, 1, ws, &[1, 2]).unwrap();
        h.driver.idle(); // with a limit of 10 values, let the flusher keep up
    }
    assert_no_number_reused(&h.storage, P);
}

#[test]
fn a_guest_trap_is_contained_and_the_new_instance_reuses_nothing() {
    let h = Harness::with(MemoryStorage::new(), load(Limits::default()));
    let seq = h.open_ready(P, &params());
    for ws in 0..20u64 {
        h.event(&seq, 1, ws % 3, &[1, 2, 3]).unwrap();
    }
    // Some of those numbers are still unwritten when the guest dies.
    h.storage.write_gate.close();
    for ws in 0..5u64 {
        h.event(&seq, 1, ws % 3, &[1, 2, 3]).unwrap();
    }
    h.storage.write_gate.wait_for_waiters(1); // a write of the old instance is held
    seq.set_next_call_fuel(1);
    match seq.start(1, 1) {
        Err(HostError::Trapped { partition, message }) => {
            assert_eq!(partition, P);
            assert!(!message.is_empty());
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert_eq!(seq.traps(), 1);
    // The new instance recovers beside the old one's write, still held: the driver performs
    // reads beside a write in flight.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while seq.status() != Status::Ready {
        assert!(
            std::time::Instant::now() < deadline,
            "the new instance never recovered beside the held write"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    h.storage.write_gate.open();
    h.driver.idle();
    assert_eq!(seq.status(), Status::Ready);
    for ws in 0..10u64 {
        h.event(&seq, 1, ws % 3, &[1, 2, 3]).unwrap();
    }
    assert_no_number_reused(&h.storage, P);
    assert_eq!(h.storage.plog(P).len(), 35);
}
