//! A command processor on the embedded, durable store: the bundled component (or the one
//! `SEQUENCER_COMPONENT` names), a data directory holding the PLog and the sequences view
//! (redb) opened through `store::open` (which records the numbering layout), events numbered
//! and appended, then the process "restarts" (a new driver over the same directory) and
//! carries on with no gap and no number issued twice. `sequencer-host check --data DIR` then
//! proves the directory.
//!
//! Run: `cargo run -p plog-sequencer-host --example embedded_store [DATA_DIR]` (a fresh
//! directory under the system's temporary folder by default, removed at the end; a directory
//! given is kept).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sequencer::{Params, SeqValue};
use sequencer_host::store::{self, OpenOptions, StoreUrl};
use sequencer_host::{Driver, DriverConfig, Layout, MonotonicClock, Runtime};

/// The workspace kind of this example's workspaces, and its one sequence: record ids from 1.
const KIND: u16 = 1;
const SEQ_RECORD_ID: u16 = 1;
const PARTITION: u32 = 0;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let given = std::env::args_os().nth(1).map(PathBuf::from);
    let data = given.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("sequencer-example-{}", std::process::id()))
    });
    // The component: a file, or the one compiled into the crate (feature `bundled-component`),
    // compiled once and then read from the cache by later processes.
    let builder = Runtime::builder().default_cache();
    let runtime = match std::env::var_os("SEQUENCER_COMPONENT") {
        Some(path) => builder.load_file(path.as_ref())?,
        None => builder.load_bundled()?,
    };
    let params = Params::new().with_seq(KIND, SEQ_RECORD_ID, 1);
    // What numbering depends on, recorded with the store: a later open with another partition
    // count or other initial values is refused before it writes anything.
    let layout = Layout::from_params(1, &params)?.named(SEQ_RECORD_ID, "record-id");
    let options = OpenOptions::new().data(&data).layout(layout);

    let mut issued = Vec::new();
    for life in 1..=2 {
        let store = store::open(&StoreUrl::Redb(None), &options)?;
        let storage = store.storage();
        let driver = Driver::spawn(
            storage.clone(),
            Arc::new(MonotonicClock::new()),
            DriverConfig::default(),
        );
        let seq = driver.open(&runtime, PARTITION, &params)?;
        for ws in [7, 8, 7] {
            // Waits out "not now" (here: actualization from the PLog after the restart).
            let Some(offset) = seq.start_within(Duration::from_secs(30), KIND, ws)? else {
                return Err("the sequencer said \"not now\" for 30 s".into());
            };
            let id = seq.next(SEQ_RECORD_ID)?;
            // The command processor makes the event durable in the PLog at exactly `offset`...
            let values = [SeqValue::new(ws, SEQ_RECORD_ID, id)];
            storage.append_event(PARTITION, offset, &values, b"payload")?;
            // ...then tells the sequencer; the flusher writes the numbers in the background.
            seq.flush()?;
            println!("life {life}: event at PLog offset {offset}: workspace {ws} record id {id}");
            issued.push((offset, ws, id));
        }
        // Lets the flusher's write in flight land, then closes the sequencer.
        driver.shutdown(&[seq]);
    }
    if given.is_none() {
        let _ = std::fs::remove_dir_all(&data);
    }

    let offsets: Vec<u64> = issued.iter().map(|&(o, _, _)| o).collect();
    assert_eq!(
        offsets,
        [1, 2, 3, 4, 5, 6],
        "dense PLog offsets across the restart"
    );
    let ids_of = |ws| -> Vec<u64> { issued.iter().filter(|e| e.1 == ws).map(|e| e.2).collect() };
    assert_eq!(
        ids_of(7),
        [1, 2, 3, 4],
        "workspace 7: no id twice, none skipped"
    );
    assert_eq!(ids_of(8), [1, 2], "workspace 8");
    println!("ok: 6 events, offsets 1..=6, record ids dense per workspace across the restart");
    Ok(())
}
