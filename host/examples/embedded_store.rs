//! A command processor on the embedded, durable store: the bundled component, a data directory
//! holding the PLog and the sequences view (redb), three events numbered and appended, then the
//! process "restarts" (a new driver over the same directory) and carries on with no gap and no
//! number issued twice.
//!
//! Run: `cargo run -p plog-sequencer-host --example embedded_store [DATA_DIR]`
//! (a fresh directory under the system's temporary folder by default).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sequencer::{Params, SeqValue};
use sequencer_host::bindings::StartOutcome;
use sequencer_host::{DataDir, Driver, DriverConfig, MonotonicClock, OpenMode, Runtime, Storage};

/// The workspace kind of this example's workspaces, and its one sequence: record ids from 1.
const KIND: u16 = 1;
const SEQ_RECORD_ID: u16 = 1;
const PARTITION: u32 = 0;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("sequencer-example-{}", std::process::id()))
        });
    // Compiled once, then read from the cache by later processes (debug builds too).
    let runtime = Runtime::builder().default_cache().load_bundled()?;
    let params = Params::new().with_seq(KIND, SEQ_RECORD_ID, 1);

    let mut issued = Vec::new();
    for life in 1..=2 {
        let dir = DataDir::open(&data, OpenMode::OpenOrCreate)?;
        let storage = Arc::new(dir.store().clone());
        let driver = Driver::spawn(
            storage.clone(),
            Arc::new(MonotonicClock::new()),
            DriverConfig::default(),
        );
        let seq = driver.open(&runtime, PARTITION, &params)?;
        // Actualization reads the stored offset and replays the PLog after it.
        if !seq.wait_ready(Duration::from_secs(30))? {
            return Err("the sequencer did not become ready within 30 s".into());
        }
        for ws in [7, 8, 7] {
            let StartOutcome::Started(offset) = seq.start(KIND, ws)? else {
                return Err("start said not now".into());
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
        seq.cleanup();
    }
    let _ = std::fs::remove_dir_all(&data);

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
