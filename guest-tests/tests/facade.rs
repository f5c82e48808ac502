//! The ISequence facade (docs/DESIGN.md §5) through the component and the host.

use std::time::Duration;

use sequencer::Params;
use sequencer::facade::{FIRST_CREC_ID, FIRST_REC_ID, event_values, system_params};
use sequencer::testkit::facade_sample_events;
use sequencer_guest_tests::{Harness, runtime};
use sequencer_host::runtime::{EventOffsets, SequenceStatus};
use sequencer_host::{HostError, MemoryStorage, PartitionSequencer};

const P: u32 = 3;
const FOREVER: Duration = Duration::from_secs(3600);

fn offsets(plog: u64, wlog: u64) -> Option<(u64, u64)> {
    Some((plog, wlog))
}

fn start(seq: &PartitionSequencer, wait: Duration, ws: u64) -> Option<(u64, u64)> {
    seq.start_event(wait, ws).expect("start-event").map(
        |EventOffsets {
             plog_offset,
             wlog_offset,
         }| (plog_offset, wlog_offset),
    )
}

#[test]
fn start_ids_finish_with_the_platforms_first_values() {
    let h = Harness::new();
    let seq = h.open_ready(P, &system_params(Params::new()));
    assert_eq!(start(&seq, FOREVER, 140), offsets(1, 1));
    assert_eq!(seq.next_rec_id().unwrap(), 322_680_000_131_072);
    assert_eq!(seq.next_rec_id().unwrap(), 322_680_000_131_073);
    assert_eq!(seq.next_c_rec_id().unwrap(), 322_685_000_131_072);
    seq.finish_event().unwrap();
    assert_eq!(start(&seq, FOREVER, 140), offsets(2, 2));
    assert_eq!(seq.next_rec_id().unwrap(), 322_680_000_131_074);
    assert!(matches!(
        seq.start_event(FOREVER, 141),
        Err(HostError::Sequencer(_))
    ));
}

#[test]
fn cancel_hands_out_the_same_ids_again_and_status_follows_the_spec() {
    let h = Harness::new();
    h.storage.read_gate.close();
    let seq = h.open(P, &system_params(Params::new()));
    assert_eq!(seq.sequence_status(), SequenceStatus::Recover);
    h.storage.read_gate.open();
    h.driver.idle();
    assert_eq!(seq.sequence_status(), SequenceStatus::Ready);
    let first = start(&seq, FOREVER, 7);
    assert_eq!(seq.sequence_status(), SequenceStatus::Eventing);
    let ids = (seq.next_rec_id().unwrap(), seq.next_c_rec_id().unwrap());
    h.storage.read_gate.close(); // the recovery cannot finish before the check
    seq.cancel_event().unwrap();
    assert_eq!(seq.sequence_status(), SequenceStatus::Recover);
    h.storage.read_gate.open();
    assert_eq!(start(&seq, FOREVER, 7), first, "waits out the recovery");
    assert_eq!(
        (seq.next_rec_id().unwrap(), seq.next_c_rec_id().unwrap()),
        ids
    );
    seq.finish_event().unwrap();
    assert_eq!(seq.sequence_status(), SequenceStatus::Ready);
    seq.cleanup();
    assert_eq!(seq.sequence_status(), SequenceStatus::Finished);
}

#[test]
fn an_event_after_a_finish_answered_without_a_call_shows_eventing_until_it_finishes() {
    let h = Harness::new();
    let seq = h.open_ready(P, &system_params(Params::new()));
    for (plog, wlog) in [(1, 1), (2, 2), (3, 3)] {
        assert_eq!(start(&seq, FOREVER, 140), offsets(plog, wlog));
        assert_eq!(
            seq.sequence_status(),
            SequenceStatus::Eventing,
            "event {plog}"
        );
        seq.next_rec_id().unwrap();
        seq.finish_event().unwrap();
        assert_eq!(
            seq.sequence_status(),
            SequenceStatus::Ready,
            "after event {plog}"
        );
    }
}

#[test]
fn start_during_recovery_waits_and_then_succeeds() {
    let h = Harness::new();
    h.storage.read_gate.close();
    let seq = h.open(P, &system_params(Params::new()));
    let waiter = {
        let seq = seq.clone();
        std::thread::spawn(move || start(&seq, FOREVER, 9))
    };
    h.storage.read_gate.wait_for_waiters(1);
    let from_another_thread = {
        let seq = seq.clone();
        std::thread::spawn(move || seq.sequence_status())
            .join()
            .unwrap()
    };
    assert_eq!(from_another_thread, SequenceStatus::Recover);
    assert!(!waiter.is_finished());
    h.storage.read_gate.open();
    assert_eq!(waiter.join().unwrap(), offsets(1, 1));
    assert_eq!(seq.sequence_status(), SequenceStatus::Eventing);
}

#[test]
fn start_during_recovery_times_out_with_not_now_on_the_hosts_clock() {
    let h = Harness::new();
    h.storage.read_gate.close();
    let seq = h.open(P, &system_params(Params::new()));
    let waiter = {
        let seq = seq.clone();
        std::thread::spawn(move || start(&seq, Duration::from_millis(100), 9))
    };
    // Time moves only when the test moves it; keep moving it until the wait runs out.
    let mut advanced = Duration::ZERO;
    while !waiter.is_finished() {
        h.clock.advance(Duration::from_millis(10));
        advanced += Duration::from_millis(10);
        std::thread::yield_now();
    }
    assert_eq!(waiter.join().unwrap(), None, "not now");
    assert!(
        advanced >= Duration::from_millis(100),
        "not before the wait ran out"
    );
    assert_eq!(seq.sequence_status(), SequenceStatus::Recover);
    h.storage.read_gate.open();
    h.driver.idle();
    assert_eq!(start(&seq, Duration::ZERO, 9), offsets(1, 1));
}

#[test]
fn recovery_from_cdoc_orecord_and_wrecord_events_gives_the_right_next_ids() {
    let storage = MemoryStorage::new();
    let events = facade_sample_events();
    for (i, e) in events.iter().enumerate() {
        storage.seed_event(P, i as u64 + 1, &event_values(e));
    }
    let h = Harness::with(storage, runtime());
    let seq = h.open_ready(P, &system_params(Params::new()));
    assert_eq!(start(&seq, FOREVER, 5), offsets(4, 3));
    assert_eq!(seq.next_rec_id().unwrap(), FIRST_REC_ID + 6);
    assert_eq!(seq.next_c_rec_id().unwrap(), FIRST_CREC_ID + 1);
    seq.finish_event().unwrap();
    assert_eq!(start(&seq, FOREVER, 6), offsets(5, 2));
    assert_eq!(seq.next_c_rec_id().unwrap(), FIRST_CREC_ID + 10);
    assert_eq!(seq.next_rec_id().unwrap(), FIRST_REC_ID);
}
