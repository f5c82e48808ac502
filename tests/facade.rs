//! The ISequence facade of spec 002 over the native core.

use sequencer::facade::{
    EventStart, FIRST_CREC_ID, FIRST_REC_ID, SequenceStatus, event_values, system_params,
};
use sequencer::testkit::{Driver, MemStorage, facade_sample_events};
use sequencer::{NotNowReason, Params};

fn start(d: &mut Driver, ws: u64) -> EventStart {
    match d.seq.start_event(ws).unwrap() {
        EventStart::Load(read) => {
            let numbers = d.storage.read_numbers(read.ws, &read.seqs);
            d.seq.complete_event_numbers(read.ticket, &numbers).unwrap()
        }
        other => other,
    }
}

#[test]
fn start_ids_finish_with_the_platforms_first_values() {
    let mut d = Driver::new(system_params(Params::new()), MemStorage::new()).unwrap();
    d.run().unwrap();
    assert_eq!(
        start(&mut d, 140),
        EventStart::Started {
            plog_offset: 1,
            wlog_offset: 1
        }
    );
    assert_eq!(d.seq.sequence_status(), SequenceStatus::Eventing);
    assert_eq!(d.seq.next_rec_id(), Ok(322_680_000_131_072));
    assert_eq!(d.seq.next_rec_id(), Ok(322_680_000_131_073));
    assert_eq!(d.seq.next_c_rec_id(), Ok(322_685_000_131_072));
    d.seq.finish_event().unwrap();
    assert_eq!(d.seq.sequence_status(), SequenceStatus::Ready);
    assert_eq!(
        start(&mut d, 140),
        EventStart::Started {
            plog_offset: 2,
            wlog_offset: 2
        }
    );
    assert_eq!(d.seq.next_rec_id(), Ok(322_680_000_131_074));
    assert_eq!(
        start_other(&mut d),
        Err(sequencer::Error::TransactionInProgress)
    );
}

fn start_other(d: &mut Driver) -> Result<EventStart, sequencer::Error> {
    d.seq.start_event(141)
}

#[test]
fn cancel_hands_out_the_same_ids_again_and_status_follows_the_spec() {
    let mut d = Driver::new(system_params(Params::new()), MemStorage::new()).unwrap();
    assert_eq!(d.seq.sequence_status(), SequenceStatus::Recover);
    assert_eq!(
        start(&mut d, 7),
        EventStart::NotNow(NotNowReason::Actualizing)
    );
    d.run().unwrap();
    assert_eq!(d.seq.sequence_status(), SequenceStatus::Ready);
    let first = start(&mut d, 7);
    let ids = (d.seq.next_rec_id().unwrap(), d.seq.next_c_rec_id().unwrap());
    d.seq.cancel_event().unwrap();
    assert_eq!(d.seq.sequence_status(), SequenceStatus::Recover);
    d.run().unwrap();
    assert_eq!(start(&mut d, 7), first);
    assert_eq!(
        (d.seq.next_rec_id().unwrap(), d.seq.next_c_rec_id().unwrap()),
        ids
    );
    d.seq.cleanup();
    assert_eq!(d.seq.sequence_status(), SequenceStatus::Finished);
}

#[test]
fn recovery_from_a_plog_of_cdoc_orecord_and_wrecord_events_gives_the_right_next_ids() {
    let mut storage = MemStorage::new();
    let events = facade_sample_events();
    for (i, e) in events.iter().enumerate() {
        storage.seed_event(i as u64 + 1, &event_values(e));
    }
    let mut d = Driver::new(system_params(Params::new()), storage).unwrap();
    d.run().unwrap();
    assert_eq!(
        start(&mut d, 5),
        EventStart::Started {
            plog_offset: 4,
            wlog_offset: 3
        }
    );
    assert_eq!(
        d.seq.next_rec_id(),
        Ok(FIRST_REC_ID + 6),
        "argument child 5 was the max"
    );
    assert_eq!(d.seq.next_c_rec_id(), Ok(FIRST_CREC_ID + 1));
    d.seq.finish_event().unwrap();
    assert_eq!(
        start(&mut d, 6),
        EventStart::Started {
            plog_offset: 5,
            wlog_offset: 2
        }
    );
    assert_eq!(d.seq.next_c_rec_id(), Ok(FIRST_CREC_ID + 10));
    assert_eq!(
        d.seq.next_rec_id(),
        Ok(FIRST_REC_ID),
        "ws 6 had no O/W records yet"
    );
}
