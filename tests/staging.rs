//! Several events in one transaction (`stage`): the batched path of a command processor that
//! appends many events to the PLog at once. One test per rule.

use sequencer::testkit::{Driver, MemStorage};
use sequencer::{Error, NotNowReason, Params, SeqValue, Start, Status};

fn params() -> Params {
    Params::new().with_seq(1, 1, 1).with_seq(1, 2, 100)
}

fn ready(p: Params) -> Driver {
    let mut d = Driver::new(p, MemStorage::new()).unwrap();
    d.run().unwrap();
    d
}

/// Starts an event on `ws`, takes one number of seq 1, stages it; its offset and number.
fn stage_one(d: &mut Driver, ws: u64) -> (u64, u64) {
    let Start::Started(offset) = d.start(1, ws).unwrap() else {
        panic!("start of ws {ws} did not start");
    };
    let n = d.seq.next(1).unwrap();
    d.seq.stage().unwrap();
    (offset, n)
}

#[test]
fn staged_events_take_consecutive_offsets_and_continue_each_workspace() {
    let mut d = ready(params());
    assert_eq!(stage_one(&mut d, 7), (1, 1));
    assert_eq!(stage_one(&mut d, 8), (2, 1));
    assert_eq!(stage_one(&mut d, 7), (3, 2));
    assert_eq!(d.seq.status(), Status::InTransaction);
    assert_eq!(
        d.seq.held_numbers().transaction,
        2,
        "ws 7 and ws 8 hold one value each"
    );
}

#[test]
fn no_staged_value_or_offset_is_written_before_the_flush() {
    let mut d = ready(params());
    d.event(1, 1, &[1]).unwrap().unwrap();
    stage_one(&mut d, 7);
    stage_one(&mut d, 8);
    d.run().unwrap();
    // Only the flushed event's value reached storage, and its offset.
    assert_eq!(d.storage.read_numbers(1, &[1]), vec![1]);
    assert_eq!(d.storage.read_numbers(7, &[1]), vec![0]);
    assert_eq!(d.storage.read_numbers(8, &[1]), vec![0]);
    d.storage.append(2, &[SeqValue::new(7, 1, 1)]).unwrap();
    d.storage.append(3, &[SeqValue::new(8, 1, 1)]).unwrap();
    d.seq.flush().unwrap();
    assert_eq!(d.seq.status(), Status::Ready);
    d.run().unwrap();
    assert_eq!(d.storage.read_numbers(7, &[1]), vec![1]);
    assert_eq!(d.storage.read_numbers(8, &[1]), vec![1]);
    assert_eq!(d.storage.offset_ahead_of_values(), None);
}

#[test]
fn flush_completes_the_open_event_and_the_staged_ones_together() {
    let mut d = ready(params());
    stage_one(&mut d, 7);
    let Start::Started(2) = d.start(1, 8).unwrap() else {
        panic!("second event");
    };
    assert_eq!(d.seq.next(2).unwrap(), 100);
    d.storage.append(1, &[SeqValue::new(7, 1, 1)]).unwrap();
    d.storage.append(2, &[SeqValue::new(8, 2, 100)]).unwrap();
    d.seq.flush().unwrap();
    d.run().unwrap();
    assert_eq!(d.storage.read_numbers(7, &[1]), vec![1]);
    assert_eq!(d.storage.read_numbers(8, &[2]), vec![100]);
    assert!(matches!(d.start(1, 9), Ok(Start::Started(3))));
}

#[test]
fn actualize_drops_staged_events_and_hands_their_offsets_and_numbers_out_again() {
    let mut d = ready(params());
    stage_one(&mut d, 7);
    stage_one(&mut d, 7);
    d.seq.actualize().unwrap();
    assert_eq!(d.seq.held_numbers().transaction, 0);
    d.run().unwrap();
    assert_eq!(
        stage_one(&mut d, 7),
        (1, 1),
        "nothing reached the PLog: same offset, same number"
    );
}

#[test]
fn a_staged_workspace_evicted_from_the_cache_continues_from_its_staged_numbers() {
    // A cache of 2 numbers holds one workspace: staging ws 8 evicts ws 7.
    let mut d = ready(params().with_lru_cache_size(2));
    assert_eq!(stage_one(&mut d, 7), (1, 1));
    assert_eq!(stage_one(&mut d, 8), (2, 1));
    assert_eq!(stage_one(&mut d, 7), (3, 2));
    assert_eq!(
        d.seq.held_numbers().transaction,
        2,
        "ws 7 staged again after its eviction still counts one value"
    );
    for (offset, ws, n) in [(1, 7, 1), (2, 8, 1), (3, 7, 2)] {
        d.storage
            .append(offset, &[SeqValue::new(ws, 1, n)])
            .unwrap();
    }
    d.seq.flush().unwrap();
    d.run().unwrap();
    assert_eq!(d.storage.read_numbers(7, &[1]), vec![2]);
    assert_eq!(d.storage.read_numbers(8, &[1]), vec![1]);
    assert_eq!(
        stage_one(&mut d, 7),
        (4, 3),
        "the cache forgot the flushed staging"
    );
    assert_eq!(d.seq.held_numbers().transaction, 1);
}

#[test]
fn staged_values_count_against_the_unflushed_limit() {
    let mut d = ready(params().with_max_unflushed_values(1));
    stage_one(&mut d, 7);
    stage_one(&mut d, 8);
    assert_eq!(
        d.start(1, 9),
        Ok(Start::NotNow(NotNowReason::TooManyUnflushed))
    );
    // The staged events still complete, and then room returns.
    d.seq.flush().unwrap();
    d.run().unwrap();
    assert!(matches!(d.start(1, 9), Ok(Start::Started(3))));
}

#[test]
fn stage_and_next_need_an_open_event_and_leave_staged_events_untouched() {
    let mut d = ready(params());
    assert_eq!(d.seq.stage(), Err(Error::NoTransaction));
    stage_one(&mut d, 7);
    assert_eq!(d.seq.stage(), Err(Error::NoTransaction));
    assert_eq!(d.seq.next(1), Err(Error::NoTransaction));
    assert_eq!(d.seq.held_numbers().transaction, 1);
    d.seq.flush().unwrap();
    assert_eq!(d.seq.flush(), Err(Error::NoTransaction));
}

#[test]
fn cleanup_forgets_staged_events() {
    let mut d = ready(params());
    stage_one(&mut d, 7);
    d.seq.cleanup();
    assert_eq!(d.seq.status(), Status::CleanedUp);
    assert_eq!(d.seq.held_numbers().transaction, 0);
    assert_eq!(d.seq.flush(), Err(Error::CleanedUp));
}
