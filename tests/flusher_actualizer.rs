//! The flusher and actualizer rules of spec 001, one test each.

use core::time::Duration;

use sequencer::testkit::{Driver, MemStorage};
use sequencer::{Instant, NotNowReason, Params, SeqValue, Start, Status};

fn params() -> Params {
    Params::new().with_seq(1, 1, 1).with_seq(1, 2, 1)
}

fn ready(p: Params) -> Driver {
    let mut d = Driver::new(p, MemStorage::new()).unwrap();
    d.run().unwrap();
    d
}

#[test]
fn start_says_not_now_while_too_many_values_wait_and_resumes_once_written() {
    let mut d = ready(params().with_max_unflushed_values(3));
    d.faults.hold_writes = true;
    for ws in 0..2 {
        d.event(1, ws, &[1, 2]).unwrap().unwrap();
        d.run().unwrap();
    }
    assert_eq!(d.seq.held_numbers().unflushed, 4);
    assert_eq!(
        d.start(1, 9),
        Ok(Start::NotNow(NotNowReason::TooManyUnflushed))
    );
    d.faults.hold_writes = false;
    d.release_writes().unwrap();
    assert_eq!(d.seq.held_numbers().unflushed, 0);
    assert!(matches!(d.start(1, 9), Ok(Start::Started(3))));
}

#[test]
fn values_that_change_while_their_write_is_in_flight_are_written_again() {
    let mut d = ready(params());
    d.faults.hold_writes = true;
    d.event(1, 5, &[1]).unwrap().unwrap();
    d.run().unwrap();
    assert_eq!(d.held_writes()[0].values, vec![SeqValue::new(5, 1, 1)]);
    d.event(1, 5, &[1]).unwrap().unwrap();
    d.run().unwrap();
    assert_eq!(d.held_writes().len(), 1, "one write at a time");
    d.faults.hold_writes = false;
    d.release_writes().unwrap();
    assert_eq!(d.storage.read_numbers(5, &[1]), vec![2]);
    assert_eq!(d.storage.next_offset, 2);
    assert_eq!(d.seq.held_numbers().unflushed, 0);
}

#[test]
fn actualize_waits_for_the_write_in_flight_before_reading_storage() {
    let mut d = ready(params());
    d.faults.hold_writes = true;
    d.event(1, 5, &[1, 2]).unwrap().unwrap();
    d.run().unwrap();
    d.seq.actualize().unwrap();
    assert_eq!(
        d.seq.poll_work(d.now),
        None,
        "no offset read while the write is out"
    );
    d.faults.hold_writes = false;
    d.release_writes().unwrap();
    assert_eq!(d.seq.status(), Status::Ready);
    assert!(matches!(d.start(1, 5), Ok(Start::Started(2))));
    assert_eq!(d.seq.next(1), Ok(2));
}

#[test]
fn a_write_failing_during_actualization_is_dropped_not_retried() {
    let mut d = ready(params());
    d.faults.hold_writes = true;
    d.event(1, 5, &[1]).unwrap().unwrap();
    d.run().unwrap();
    let held = d.held_writes()[0].clone();
    d.seq.actualize().unwrap();
    d.seq.fail(held.ticket, d.now).unwrap();
    d.faults.hold_writes = false;
    d.run().unwrap();
    // Replay found the event in the PLog and wrote its values with the replay's own offset.
    assert_eq!(d.seq.status(), Status::Ready);
    assert_eq!(d.storage.read_numbers(5, &[1]), vec![1]);
    assert_eq!(d.storage.next_offset, 2);
}

#[test]
fn retry_delays_double_up_to_the_maximum() {
    let p = params().with_retry_delay(Duration::from_millis(100), Duration::from_millis(350));
    let mut d = ready(p);
    d.faults.fail_writes = 10;
    d.event(1, 1, &[1]).unwrap().unwrap();
    let mut waits = Vec::new();
    let mut last = d.now;
    d.run().unwrap();
    for _ in 0..4 {
        let at = d.seq.poll_timeout().expect("a retry is scheduled");
        waits.push(Duration::from_nanos(at.as_nanos() - last.as_nanos()));
        d.now = at;
        last = at;
        d.run().unwrap();
    }
    let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
    assert_eq!(ms, vec![100, 200, 350, 350]);
}

#[test]
fn replay_holds_back_at_the_unflushed_limit_and_asks_to_be_woken() {
    let mut storage = MemStorage::new();
    for o in 1..=20u64 {
        storage.seed_event(o, &[SeqValue::new(o, 1, 1)]);
    }
    let p = params()
        .with_max_unflushed_values(5)
        .with_batcher_delay_on_overflow(Duration::from_millis(5));
    let mut d = Driver::new(p, storage).unwrap();
    d.faults.hold_writes = true;
    d.page_events = 20;
    d.run().unwrap();
    assert_eq!(d.seq.status(), Status::Actualizing);
    assert_eq!(d.seq.held_numbers().unflushed, 5, "held back at the limit");
    assert_eq!(
        d.seq.poll_timeout(),
        Some(Instant::from_nanos(5_000_000)),
        "asks to look again one batcher delay later"
    );
    d.now = Instant::from_nanos(5_000_000);
    assert!(d.seq.poll_work(d.now).is_none(), "still held: no read");
    assert_eq!(
        d.seq.poll_timeout(),
        Some(Instant::from_nanos(10_000_000)),
        "re-armed"
    );
    d.faults.hold_writes = false;
    d.release_writes().unwrap();
    assert_eq!(d.seq.status(), Status::Ready);
    assert!(matches!(d.start(1, 20), Ok(Start::Started(21))));
    assert_eq!(d.seq.next(1), Ok(2));
}

#[test]
fn a_failed_numbers_read_abandons_the_start_which_can_be_retried() {
    let mut d = ready(params());
    d.faults.fail_number_reads = 1;
    assert!(matches!(d.start(1, 3), Ok(Start::Load(_))));
    assert_eq!(d.seq.status(), Status::Ready);
    assert!(matches!(d.start(1, 3), Ok(Start::Started(1))));
}
