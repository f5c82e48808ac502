//! A storage engine of your own: the `Storage` trait implemented over a map in memory. A real
//! backend keeps the same promises durably (see the trait's documentation): values before the
//! offset, one partition's writes in the order they were begun, an append fenced at the PLog's
//! next offset, and nothing acknowledged before it is durable. At the end it runs the storage
//! contract suite (`sequencer_host::store::testing`, feature `testing`) on `MapStorage`: every
//! promise of the trait a caller can observe, each checked on a fresh store.
//!
//! Run: `cargo run -p plog-sequencer-host --example custom_storage --features testing`

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use sequencer::{Number, PLogOffset, Params, SeqId, SeqValue, WsId};
use sequencer_host::StorageFuture;
use sequencer_host::store::testing::{StoreMaker, check_contract};
use sequencer_host::{
    AppendError, Driver, DriverConfig, EventBatch, MonotonicClock, PartitionId, PlogPage, Runtime,
    StartOutcome, Storage, StorageError,
};

/// Everything a partition keeps: the sequences view, the stored offset, the PLog.
#[derive(Default)]
struct Partition {
    view: HashMap<(WsId, SeqId), Number>,
    /// What the flusher stored with its last write (0: none yet): every event before it has its
    /// numbers in the view (after a flush, the last flushed event's offset). Actualization
    /// replays the PLog from it on.
    stored_offset: PLogOffset,
    plog: BTreeMap<PLogOffset, Vec<SeqValue>>,
}

/// A storage engine of one's own (here: memory behind a mutex).
#[derive(Default)]
struct MapStorage {
    partitions: Mutex<HashMap<PartitionId, Partition>>,
    /// Print each flusher write (for the demo, not for the contract suite's many stores).
    announce_writes: bool,
}

impl MapStorage {
    fn with<T>(&self, partition: PartitionId, f: impl FnOnce(&mut Partition) -> T) -> T {
        let mut all = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        f(all.entry(partition).or_default())
    }
}

impl Storage for MapStorage {
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        Ok(self.with(partition, |p| {
            seqs.iter()
                .map(|&s| p.view.get(&(ws, s)).copied().unwrap_or(0))
                .collect()
        }))
    }

    fn read_next_offset(&self, partition: PartitionId) -> StorageFuture<PLogOffset> {
        let offset = self.with(partition, |p| p.stored_offset);
        async move { Ok(offset) }.boxed()
    }

    fn write(
        &self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
    ) -> StorageFuture<()> {
        self.with(partition, |p| {
            for v in &values {
                p.view.insert((v.key.ws, v.key.seq), v.value); // the values first...
            }
            p.stored_offset = next_offset; // ...then the offset
        });
        if self.announce_writes {
            println!(
                "  flusher wrote {} value(s) and offset {next_offset}",
                values.len()
            );
        }
        async { Ok(()) }.boxed()
    }

    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        let page = self.with(partition, |p| {
            PlogPage::collect(from, max_events, p.plog.range(from..).map(|(&o, v)| (o, v)))
        });
        async move { Ok(page) }.boxed()
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        // One event at a time (a real backend writes the batch at once, all or nothing).
        batch.append_each(|offset, values, _payload| self.append_one(partition, offset, values))
    }
}

impl MapStorage {
    /// Appends one event's values at exactly `offset`.
    fn append_one(
        &self, partition: PartitionId, offset: PLogOffset, values: &[SeqValue],
    ) -> Result<(), AppendError> {
        self.with(partition, |p| {
            // The fence: only the PLog's next offset is accepted.
            let expected = p.plog.keys().next_back().map_or(1, |last| last + 1);
            if offset != expected {
                return Err(AppendError::WrongOffset {
                    expected,
                    offered: offset,
                });
            }
            p.plog.insert(offset, values.to_vec());
            Ok(())
        })
    }
}

/// Makes fresh `MapStorage`s for the contract suite. It keeps nothing once closed and has no
/// `StoreReader`, so the suite skips those checks (and says so).
struct FreshMaps;

impl StoreMaker for FreshMaps {
    type Store = MapStorage;

    fn name(&self) -> String {
        "MapStorage (this example)".into()
    }

    fn fresh(&mut self) -> Result<MapStorage, StorageError> {
        Ok(MapStorage::default())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::builder().default_cache().load_bundled()?;
    let storage = Arc::new(MapStorage {
        announce_writes: true,
        ..MapStorage::default()
    });
    let driver = Driver::spawn(
        storage.clone(),
        Arc::new(MonotonicClock::new()),
        DriverConfig::default(),
    );
    let seq = driver.open(&runtime, 0, &Params::new().with_seq(1, 1, 100))?;
    if !seq.wait_ready(Duration::from_secs(30))? {
        return Err("the sequencer did not become ready within 30 s".into());
    }
    for ws in [1, 2] {
        let StartOutcome::Started(offset) = seq.start(1, ws)? else {
            return Err("start said not now".into());
        };
        let number = seq.next(1)?;
        storage.append(0, offset, &[SeqValue::new(ws, 1, number)])?;
        seq.flush()?;
        println!("event {offset}: workspace {ws} got {number}");
    }
    // A stale writer is refused by the fence, and nothing is written.
    let stale = storage.append(0, 1, &[SeqValue::new(1, 1, 100)]);
    println!(
        "a second append at offset 1: {}",
        stale.as_ref().unwrap_err()
    );
    assert!(matches!(
        stale,
        Err(AppendError::WrongOffset {
            expected: 3,
            offered: 1
        })
    ));
    driver.idle(); // the flusher's write has completed
    seq.cleanup();

    let (view, stored) = storage.with(0, |p| (p.view.clone(), p.stored_offset));
    assert_eq!(
        view.get(&(1, 1)),
        Some(&100),
        "the initial value is the first number"
    );
    assert_eq!(view.get(&(2, 1)), Some(&100));
    assert_eq!(stored, 2, "the stored offset is the last flushed event's");
    println!("ok: view {view:?}, stored offset {stored}");

    // The storage contract suite, each check on a fresh MapStorage: a broken promise is an
    // error naming it and what was seen.
    let report = check_contract(&mut FreshMaps)?;
    println!("the contract suite passed on {report}");
    Ok(())
}
