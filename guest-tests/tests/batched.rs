//! The batched path through the component: `flush-start-next` finishes one event and starts the
//! next in one call, with the same numbers and writes as the calls it replaces.

use std::time::Duration;

use sequencer::{Params, SeqValue};
use sequencer_guest_tests::Harness;
use sequencer_host::HostError;
use sequencer_host::bindings::{GuestError, NotNowReason, StartOutcome, Status};

const P: u32 = 11;

fn params() -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 100)
        .with_seq(1, 3, 7)
}

#[test]
fn flush_start_next_numbers_a_stream_of_events_like_separate_calls() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    let (o, n) = seq.start_next(1, 5, &[1, 2]).unwrap();
    assert!(matches!(o, StartOutcome::Started(1)));
    assert_eq!(n, [1, 100]);
    seq.append(1, &[SeqValue::new(5, 1, 1), SeqValue::new(5, 2, 100)])
        .unwrap();
    // Event 2 in another workspace, event 3 back in the first: each call flushes the previous.
    let (o, n) = seq.flush_start_next(1, 6, &[3]).unwrap();
    assert!(matches!(o, StartOutcome::Started(2)));
    assert_eq!(n, [7]);
    seq.append(2, &[SeqValue::new(6, 3, 7)]).unwrap();
    let (o, n) = seq.flush_start_next(1, 5, &[1, 1, 2]).unwrap();
    assert!(matches!(o, StartOutcome::Started(3)));
    assert_eq!(n, [2, 3, 101]);
    seq.append(3, &[SeqValue::new(5, 1, 3), SeqValue::new(5, 2, 101)])
        .unwrap();
    seq.flush().unwrap();
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 3);
    assert_eq!(h.storage.view_value(P, 5, 2), 101);
    assert_eq!(h.storage.view_value(P, 6, 3), 7);
    assert_eq!(h.storage.stored_next_offset(P), 3);

    // A restart recovers exactly that.
    seq.cleanup();
    let seq = h.open_ready(P, &params());
    let (o, n) = seq.start_next(1, 5, &[1, 2, 3]).unwrap();
    assert!(matches!(o, StartOutcome::Started(4)));
    assert_eq!(n, [4, 102, 7]);
}

#[test]
fn flush_start_next_without_a_transaction_changes_nothing() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    assert!(matches!(
        seq.flush_start_next(1, 5, &[1]),
        Err(HostError::Sequencer(GuestError::NoTransaction))
    ));
    assert_eq!(seq.status(), Status::Ready);
    let (o, n) = seq.start_next(1, 5, &[1]).unwrap();
    assert!(matches!(o, StartOutcome::Started(1)));
    assert_eq!(n, [1]);
}

#[test]
fn a_refused_start_after_the_flush_leaves_the_flush_done_and_no_transaction() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    let (_, n) = seq.start_next(1, 5, &[1]).unwrap();
    assert_eq!(n, [1]);
    seq.append(1, &[SeqValue::new(5, 1, 1)]).unwrap();
    // Unknown kind: event 1 is flushed (and written), nothing starts.
    assert!(matches!(
        seq.flush_start_next(4, 5, &[1]),
        Err(HostError::Sequencer(GuestError::UnknownWsKind(4)))
    ));
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 1, "the flush was done");
    assert_eq!(seq.status(), Status::Ready, "no transaction is open");
    // Unknown sequence: event 2 is flushed, the start is refused as a whole (as `start-next`
    // refuses it: the sequencer actualizes, and event 2 comes back from the PLog).
    let (o, n) = seq.start_next(1, 5, &[1]).unwrap();
    assert!(matches!(o, StartOutcome::Started(2)));
    assert_eq!(n, [2]);
    seq.append(2, &[SeqValue::new(5, 1, 2)]).unwrap();
    assert!(matches!(
        seq.flush_start_next(1, 5, &[9]),
        Err(HostError::Sequencer(GuestError::UnknownSeqId(_)))
    ));
    h.driver.idle();
    assert_eq!(seq.status(), Status::Ready);
    let (o, n) = seq.start_next(1, 5, &[1]).unwrap();
    assert!(
        matches!(o, StartOutcome::Started(3)),
        "offset 2 was consumed"
    );
    assert_eq!(n, [3]);
}

#[test]
fn flush_start_next_says_not_now_while_too_many_values_wait() {
    let h = Harness::new();
    let params = params().with_max_unflushed_values(1);
    let seq = h.open_ready(P, &params);
    h.storage.write_gate.close();
    let (_, n) = seq.start_next(1, 5, &[1, 2]).unwrap();
    assert_eq!(n, [1, 100]);
    let (o, n) = seq.flush_start_next(1, 6, &[1]).unwrap();
    assert!(
        matches!(o, StartOutcome::NotNow(NotNowReason::TooManyUnflushed)),
        "{o:?}"
    );
    assert!(n.is_empty());
    assert_eq!(seq.status(), Status::Ready, "flushed, nothing started");
    h.storage.write_gate.open();
    h.driver.idle();
    let (o, n) = seq.start_next(1, 6, &[1]).unwrap();
    assert!(matches!(o, StartOutcome::Started(2)));
    assert_eq!(n, [1]);
}

#[test]
fn group_commit_holds_a_write_report_until_the_interval_passed() {
    let h = Harness::new();
    let driver = sequencer_host::Driver::spawn(
        std::sync::Arc::new(h.storage.clone()),
        std::sync::Arc::new(h.clock.clone()),
        sequencer_host::DriverConfig::default(),
    )
    .with_min_write_interval(Duration::from_millis(10));
    let seq = driver.open(&h.runtime, P, &params()).unwrap();
    driver.sync();
    while seq.status() == Status::Actualizing {
        std::thread::yield_now();
    }
    let (_, n) = seq.start_next(1, 5, &[1]).unwrap();
    assert_eq!(n, [1]);
    let (_, n) = seq.flush_start_next(1, 5, &[1]).unwrap();
    assert_eq!(n, [2]);
    seq.flush().unwrap();
    // The first write (number 1, offset 1) reaches storage but is reported only once the
    // interval has passed on the driver's clock: the second event's number waits for it.
    wait_until(|| h.storage.view_value(P, 5, 1) == 1);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(h.storage.view_value(P, 5, 1), 1);
    assert_eq!(seq.storage_ops_in_flight(), 1, "held, still in flight");
    h.clock.advance(Duration::from_millis(10));
    wait_until(|| h.storage.view_value(P, 5, 1) == 2);
    h.clock.advance(Duration::from_millis(10));
    driver.idle();
    assert_eq!(h.storage.stored_next_offset(P), 2);
    assert_eq!(seq.storage_ops_in_flight(), 0);
}

fn wait_until(cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out");
        std::thread::sleep(Duration::from_millis(1));
    }
}
