//! The `ISequence` facade (docs/DESIGN.md §5), as a command processor uses it: `start_event`
//! (waiting while the sequencer recovers), record ids, `finish_event` once the event is in the
//! PLog, and `cancel_event` when it failed (its ids are handed out again).
//!
//! Run: `cargo run -p plog-sequencer-host --example facade`

use std::sync::Arc;
use std::time::Duration;

use sequencer::Params;
use sequencer::facade::{FIRST_REC_ID, PlatformEvent, RecordKind, event_values, system_params};
use sequencer_host::{Driver, DriverConfig, MemoryStorage, MonotonicClock, Runtime, Storage};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::builder().default_cache().load_bundled()?;
    let storage = Arc::new(MemoryStorage::new());
    let driver = Driver::spawn(
        storage.clone(),
        Arc::new(MonotonicClock::new()),
        DriverConfig::default(),
    );
    let seq = driver.open(&runtime, 0, &system_params(Params::new()))?;
    let wait = Duration::from_secs(5);
    let ws = 140_737_488_355_328; // a workspace id

    // An event that fails: its ids are handed out again to the next one.
    let Some(failed) = seq.start_event(wait, ws)? else {
        return Err("the sequencer did not recover within 5 s".into());
    };
    let lost_id = seq.next_rec_id()?;
    seq.cancel_event()?;

    let Some(event) = seq.start_event(wait, ws)? else {
        return Err("no event within 5 s".into());
    };
    let (doc, record, cdoc) = (seq.next_rec_id()?, seq.next_rec_id()?, seq.next_c_rec_id()?);
    let platform_event = PlatformEvent {
        ws,
        wlog_offset: event.wlog_offset,
        new_records: vec![
            (RecordKind::ODoc, doc),
            (RecordKind::ORecord, record),
            (RecordKind::CDoc, cdoc),
        ],
        argument: None,
    };
    storage.append(0, event.plog_offset, &event_values(&platform_event))?;
    seq.finish_event()?;
    println!(
        "event: PLog offset {}, WLog offset {}, ids {doc}, {record}, C id {cdoc}",
        event.plog_offset, event.wlog_offset
    );

    assert_eq!(
        (failed.plog_offset, event.plog_offset),
        (1, 1),
        "the cancelled offset again"
    );
    assert_eq!((failed.wlog_offset, event.wlog_offset), (1, 1));
    assert_eq!(
        (lost_id, doc, record),
        (FIRST_REC_ID, FIRST_REC_ID, FIRST_REC_ID + 1)
    );
    seq.cleanup();
    println!("ok");
    Ok(())
}
