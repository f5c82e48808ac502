//! The flusher and actualizer rules (docs/DESIGN.md §4), one test each.

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
    d.storage.faults.hold_writes = true;
    for ws in 0..2 {
        d.event(1, ws, &[1, 2]).unwrap().unwrap();
        d.run().unwrap();
    }
    assert_eq!(d.seq.held_numbers().unflushed, 4);
    assert_eq!(
        d.start(1, 9),
        Ok(Start::NotNow(NotNowReason::TooManyUnflushed))
    );
    d.storage.faults.hold_writes = false;
    d.release_writes().unwrap();
    assert_eq!(d.seq.held_numbers().unflushed, 0);
    assert!(matches!(d.start(1, 9), Ok(Start::Started(3))));
}

#[test]
fn values_that_change_while_their_write_is_in_flight_are_written_again() {
    let mut d = ready(params());
    d.storage.faults.hold_writes = true;
    d.event(1, 5, &[1]).unwrap().unwrap();
    d.run().unwrap();
    assert_eq!(d.held_writes()[0].values, vec![SeqValue::new(5, 1, 1)]);
    d.event(1, 5, &[1]).unwrap().unwrap();
    d.run().unwrap();
    assert_eq!(d.held_writes().len(), 1, "one write at a time");
    d.storage.faults.hold_writes = false;
    d.release_writes().unwrap();
    assert_eq!(d.storage.read_numbers(5, &[1]), vec![2]);
    assert_eq!(d.storage.next_offset, 2);
    assert_eq!(d.seq.held_numbers().unflushed, 0);
}

#[test]
fn actualize_waits_for_the_write_in_flight_before_reading_storage() {
    let mut d = ready(params());
    d.storage.faults.hold_writes = true;
    d.event(1, 5, &[1, 2]).unwrap().unwrap();
    d.run().unwrap();
    d.seq.actualize().unwrap();
    assert_eq!(
        d.seq.poll_work(d.now),
        None,
        "no offset read while the write is out"
    );
    d.storage.faults.hold_writes = false;
    d.release_writes().unwrap();
    assert_eq!(d.seq.status(), Status::Ready);
    assert!(matches!(d.start(1, 5), Ok(Start::Started(2))));
    assert_eq!(d.seq.next(1), Ok(2));
}

#[test]
fn actualize_beside_write_reads_storage_at_once_and_loses_nothing_either_way() {
    // The write lands after the actualization, or fails: either way the replay covered its
    // values, and the next write stores them.
    for write_lands in [true, false] {
        let mut d = ready(params());
        d.storage.faults.hold_writes = true;
        d.event(1, 5, &[1, 2]).unwrap().unwrap();
        d.run().unwrap();
        assert_eq!(d.held_writes().len(), 1);
        d.seq.actualize_beside_write().unwrap();
        d.run().unwrap();
        assert_eq!(
            d.seq.status(),
            Status::Ready,
            "ready with the write still out"
        );
        assert_eq!(d.held_writes().len(), 1);
        assert_eq!(d.storage.next_offset, 0, "the write has not landed");
        // Another workspace: only the write out and the replay carry event 1's numbers.
        let (offset, numbers) = d.event(1, 6, &[1, 2]).unwrap().unwrap();
        assert_eq!(
            (offset, numbers),
            (2, vec![1, 1]),
            "the replay found event 1"
        );
        d.storage.faults.hold_writes = false;
        if write_lands {
            d.release_writes().unwrap();
        } else {
            // Retried like any write: it may have landed (a lost answer), so its values go
            // again rather than be dropped.
            d.fail_held_writes().unwrap();
            assert!(d.seq.poll_timeout().is_some(), "retried");
        }
        d.advance(Duration::from_secs(1)).unwrap();
        assert_eq!(
            d.storage.read_numbers(5, &[1, 2]),
            vec![1, 1],
            "{write_lands}"
        );
        assert_eq!(
            d.storage.read_numbers(6, &[1, 2]),
            vec![1, 1],
            "{write_lands}"
        );
        assert_eq!(d.storage.next_offset, 2, "{write_lands}: event 2 flushed");
        assert_eq!(d.seq.held_numbers().unflushed, 0, "{write_lands}");
    }
}

#[test]
fn a_write_failing_during_actualization_is_dropped_not_retried() {
    let mut d = ready(params());
    d.storage.faults.hold_writes = true;
    d.event(1, 5, &[1]).unwrap().unwrap();
    d.run().unwrap();
    let held = d.held_writes()[0].clone();
    d.seq.actualize().unwrap();
    d.seq.fail(held.ticket, d.now).unwrap();
    d.storage.faults.hold_writes = false;
    d.run().unwrap();
    // Replay found the event in the PLog and wrote its values with the replay's own offset.
    assert_eq!(d.seq.status(), Status::Ready);
    assert_eq!(d.storage.read_numbers(5, &[1]), vec![1]);
    assert_eq!(d.storage.next_offset, 2);
}

#[test]
fn retry_delays_double_up_to_the_maximum() {
    let p = params()
        .with_retry_delay(Duration::from_millis(100), Duration::from_millis(350))
        .with_retry_jitter_percent(0);
    let ms: Vec<u128> = write_retry_waits(p, 4)
        .iter()
        .map(Duration::as_millis)
        .collect();
    assert_eq!(ms, vec![100, 200, 350, 350]);
}

/// The waits between the first `n` retries of a write that keeps failing, while every read
/// fails too (storage is down: no answer cuts the wait short, and the probes in between fail).
fn write_retry_waits(p: Params, n: usize) -> Vec<Duration> {
    let mut d = ready(p);
    d.storage.faults.fail_writes = 1000;
    d.storage.faults.fail_reads = u32::MAX;
    d.event(1, 1, &[1]).unwrap().unwrap();
    let mut waits = Vec::new();
    let mut last = d.now;
    d.run().unwrap();
    while waits.len() < n {
        let at = d
            .seq
            .poll_timeout()
            .expect("a retry or a probe is scheduled");
        d.now = at;
        let writes_left = d.storage.faults.fail_writes;
        d.run().unwrap();
        if d.storage.faults.fail_writes < writes_left {
            waits.push(Duration::from_nanos(at.as_nanos() - last.as_nanos()));
            last = at;
        }
    }
    waits
}

#[test]
fn by_default_write_retries_are_jittered_doubling_and_capped_at_ten_seconds() {
    let waits = write_retry_waits(params(), 12);
    let mut full = Duration::from_millis(500);
    for (i, w) in waits.iter().enumerate() {
        assert!(
            *w <= full && *w >= full / 2,
            "retry {i}: waited {w:?}, not within the upper half of {full:?}"
        );
        full = (full * 2).min(Duration::from_secs(10));
    }
    assert!(
        waits[6..].iter().all(|w| *w <= Duration::from_secs(10)),
        "capped: {waits:?}"
    );
    assert!(
        waits.windows(2).any(|w| w[0] * 2 != w[1]),
        "jittered, not an exact doubling: {waits:?}"
    );
    assert_eq!(
        waits,
        write_retry_waits(params(), 12),
        "the same inputs, the same waits"
    );
}

#[test]
fn a_key_waiting_again_while_its_write_is_in_flight_counts_once_toward_the_limit() {
    let mut d = ready(params().with_max_unflushed_values(1));
    d.storage.faults.hold_writes = true;
    d.event(1, 7, &[1]).unwrap().unwrap();
    d.run().unwrap();
    assert_eq!(d.held_writes().len(), 1, "the first write is in flight");
    d.event(1, 7, &[1]).unwrap().unwrap();
    d.run().unwrap();
    assert_eq!(
        d.seq.held_numbers().unflushed,
        1,
        "one key, in flight and waiting again"
    );
    assert!(
        matches!(d.start(1, 7), Ok(Start::Started(3))),
        "one key is not more than max_unflushed_values = 1"
    );
}

#[test]
fn replay_keeps_the_largest_number_of_a_key_across_pages_a_write_falls_between() {
    // Event 1 holds the larger number; event 2 (on the next page) a smaller one of the same key.
    let mut storage = MemStorage::new();
    storage.seed_event(1, &[SeqValue::new(5, 1, 100)]);
    storage.seed_event(2, &[SeqValue::new(5, 1, 50)]);
    // A limit of 2: a replay writes once one value waits, so page 1's write falls between.
    let mut d = Driver::new(params().with_max_unflushed_values(2), storage).unwrap();
    d.page_events = 1;
    d.storage.faults.hold_writes = true;
    d.run().unwrap();
    assert_eq!(
        d.held_writes().len(),
        1,
        "page 1's values are being written while page 2 is replayed"
    );
    assert_eq!(d.seq.status(), Status::Ready);
    d.storage.faults.hold_writes = false;
    d.release_writes().unwrap();
    assert_eq!(
        d.storage.read_numbers(5, &[1]),
        vec![100],
        "page 2's write carries the maximum, not 50"
    );
    assert!(matches!(d.start(1, 5), Ok(Start::Started(3))));
    assert_eq!(d.seq.next(1), Ok(101), "not 51: 51..=100 are in the PLog");
    assert_eq!(
        d.storage.read_numbers(5, &[1]),
        vec![100],
        "the view never goes back to 50"
    );
}

/// The stored offsets a replay of `events` one-value events (pages of one event, every key
/// new) writes under `max_unflushed`, in order.
fn replay_writes(events: u64, max_unflushed: usize) -> (Vec<u64>, Driver) {
    let mut storage = MemStorage::new();
    for o in 1..=events {
        storage.seed_event(o, &[SeqValue::new(o, 1, 7)]);
    }
    let mut d = Driver::new(params().with_max_unflushed_values(max_unflushed), storage).unwrap();
    d.page_events = 1;
    d.run().unwrap();
    let offsets = d
        .storage
        .ops
        .iter()
        .filter_map(|op| match op {
            sequencer::testkit::StorageOp::Offset(o) => Some(*o),
            sequencer::testkit::StorageOp::Value(_) => None,
        })
        .collect();
    (offsets, d)
}

#[test]
fn a_replay_writes_once_half_the_unflushed_limit_waits_and_at_its_end_not_once_per_page() {
    // Limit 10: a write each time 5 values wait (the one in flight completes before the next
    // page is replayed here), then what is left at the end.
    let (offsets, d) = replay_writes(23, 10);
    assert_eq!(offsets, vec![6, 11, 16, 21, 24]);
    assert_eq!(d.seq.status(), Status::Ready);
    assert_eq!(d.storage.next_offset, 24);
    assert!((1..=23).all(|ws| d.storage.read_numbers(ws, &[1]) == vec![7]));
    // A limit no replay of this PLog reaches: one write, of everything, at the end.
    let (offsets, d) = replay_writes(23, 1_000);
    assert_eq!(offsets, vec![24]);
    assert_eq!(
        d.storage.ops.len(),
        23 + 1,
        "every value once, then the offset"
    );
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
    d.storage.faults.hold_writes = true;
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
    d.storage.faults.hold_writes = false;
    d.release_writes().unwrap();
    assert_eq!(d.seq.status(), Status::Ready);
    assert!(matches!(d.start(1, 20), Ok(Start::Started(21))));
    assert_eq!(d.seq.next(1), Ok(2));
}

#[test]
fn a_failed_numbers_read_abandons_the_start_which_can_be_retried() {
    let mut d = ready(params());
    d.storage.faults.fail_number_reads = 1;
    assert!(matches!(d.start(1, 3), Ok(Start::Load(_))));
    assert_eq!(d.seq.status(), Status::Ready);
    assert!(matches!(d.start(1, 3), Ok(Start::Started(1))));
}

#[test]
fn a_write_superseded_beside_another_writers_newer_view_does_not_issue_its_numbers_again() {
    // This writer's write of event 1 is out when another writer appends events 2 and 3 of the
    // same workspace and stores its view (numbers up to 3, next offset 4), as a host does
    // after a fence refused this one. The write then fails, before the actualization's offset
    // read or after the actualization: either way its values are older than the view found.
    // (Had it landed after the other writer's view, only a store that keeps the larger number
    // of a key, as the etcd store does, would keep that view whole.)
    for settles_before_the_read in [true, false] {
        let mut d = ready(params());
        d.storage.faults.hold_writes = true;
        assert_eq!(d.event(1, 5, &[1]).unwrap(), Some((1, vec![1])));
        d.run().unwrap();
        assert_eq!(d.held_writes().len(), 1);
        d.storage.append(2, &[SeqValue::new(5, 1, 2)]).unwrap();
        d.storage.append(3, &[SeqValue::new(5, 1, 3)]).unwrap();
        d.storage.write(&[SeqValue::new(5, 1, 3)], 4);
        d.seq.actualize_beside_write().unwrap();
        if !settles_before_the_read {
            d.run().unwrap();
            assert_eq!(d.seq.status(), Status::Ready, "ready with the write out");
        }
        d.storage.faults.hold_writes = false;
        d.fail_held_writes().unwrap();
        d.advance(Duration::from_secs(1)).unwrap();
        assert_eq!(d.seq.status(), Status::Ready);
        assert_eq!(
            d.event(1, 5, &[1]).unwrap(),
            Some((4, vec![4])),
            "{settles_before_the_read}: numbers 1 to 3 are in the PLog: never again"
        );
        d.advance(Duration::from_secs(1)).unwrap();
        assert_eq!(
            d.storage.read_numbers(5, &[1]),
            vec![4],
            "{settles_before_the_read}"
        );
    }
}
