//! Durable storage on redb, an embedded, crash-safe key-value engine (copy-on-write B-trees,
//! checksummed commit slots).
//!
//! One database file holds every partition:
//!
//! | table         | key                              | value                              |
//! |---------------|----------------------------------|------------------------------------|
//! | `plog`        | (partition, offset)              | the event: its values and payload  |
//! | `sequences`   | (partition, workspace, sequence) | last number (the sequences view, docs/DESIGN.md §6) |
//! | `next_offset` | partition                        | the stored next PLog offset        |
//! | `meta`        | name                             | `format` → the format version      |
//!
//! Writes (flusher writes and PLog appends of every partition, an append being a batch of one
//! or many events) go to one writer thread, which
//! commits them in groups: everything that arrived while the previous commit ran goes into the
//! next transaction, and every request in it is acknowledged only after that transaction is
//! durable (redb's `Durability::Immediate`: one fsync per commit with redb's default 1-phase
//! commit). A flusher write's values and its next offset are in one transaction, so the values can
//! never be durable without the offset or the other way round: "values before offset" holds
//! trivially. Requests are applied in the order they arrived, so one partition's writes are applied
//! in the order they were begun. An append is checked against the PLog's last offset inside the
//! transaction that inserts it (which sees earlier appends of the same group): all of its
//! events go in, or none.
//!
//! Reads run in redb read transactions, which see exactly the committed state: `read_numbers`
//! on the caller's thread, offset and PLog reads on a reader thread, so the task driver's loop
//! never blocks on the disk.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use futures::channel::oneshot;
use futures::future::FutureExt;
use redb::{Database, ReadableDatabase};
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::codec::StoredEvent;
use crate::store::redb::reads::{
    read_events, read_next, read_partitions, read_plog_bounds, read_view,
};
use crate::store::redb::stats::{StoreCounts, StoreStats};
use crate::store::redb::tables::{SEQUENCES, err};
use crate::store::redb::writer::{Request, writer_loop};
use crate::store::storage::StorageFuture;
use crate::store::storage::{
    AppendError, DamageLatch, DamagedEvent, EventBatch, PartitionId, PlogPage, Storage,
    StorageError,
};
use crate::store::trim::{Trim, Trimmed};

type ReadJob = Box<dyn FnOnce(&Database) + Send>;

/// Durable storage of many partitions in one redb file. Clones share the database and its
/// writer thread; the threads stop when the last clone is dropped.
#[derive(Clone)]
pub struct RedbStorage {
    inner: Arc<Inner>,
}

struct Inner {
    db: Arc<Database>,
    path: PathBuf,
    writes: Mutex<Option<mpsc::Sender<Request>>>,
    reads: Mutex<Option<mpsc::Sender<ReadJob>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stats: Arc<StoreStats>,
    /// Held by the writer around each transaction, and by [`RedbStorage::hold_commits`].
    commits: Arc<Mutex<()>>,
    damage: Arc<DamageLatch>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the channels ends the threads once they have answered what they hold.
        lock(&self.writes).take();
        lock(&self.reads).take();
        for t in lock(&self.threads).drain(..) {
            let _ = t.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl RedbStorage {
    /// The store over the opened database `db` at `path`: its writer and reader threads started.
    pub(super) fn start(db: Database, path: &Path) -> Self {
        let db = Arc::new(db);
        let stats = Arc::new(StoreStats::default());
        let (wtx, wrx) = mpsc::channel::<Request>();
        let (rtx, rrx) = mpsc::channel::<ReadJob>();
        let mut threads = Vec::new();
        let commits = Arc::new(Mutex::new(()));
        let (wdb, wstats, wpath) = (db.clone(), stats.clone(), path.to_path_buf());
        let gate = commits.clone();
        if let Ok(t) = std::thread::Builder::new()
            .name("redb-writer".into())
            .spawn(move || writer_loop(&wdb, &wpath, &wrx, &wstats, &gate))
        {
            threads.push(t);
        }
        let rdb = db.clone();
        if let Ok(t) = std::thread::Builder::new()
            .name("redb-reader".into())
            .spawn(move || {
                while let Ok(job) = rrx.recv() {
                    job(&rdb);
                }
            })
        {
            threads.push(t);
        }
        Self {
            inner: Arc::new(Inner {
                db,
                path: path.to_path_buf(),
                writes: Mutex::new(Some(wtx)),
                reads: Mutex::new(Some(rtx)),
                threads: Mutex::new(threads),
                stats,
                commits,
                damage: Arc::default(),
            }),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// What the store has done so far.
    pub fn counts(&self) -> StoreCounts {
        self.inner.stats.snapshot()
    }

    /// Waits for the commit under way, if any, then holds every later one until the guard is
    /// dropped: the file is then still, so a byte copy of it is the last committed state
    /// (what `check` verifies beside a live run). Writes queue meanwhile; nothing fails.
    pub fn hold_commits(&self) -> std::sync::MutexGuard<'_, ()> {
        lock(&self.inner.commits)
    }

    /// The database, for reads in one transaction (`RedbSnapshot`).
    pub(crate) fn database(&self) -> &Database {
        &self.inner.db
    }

    fn send(&self, req: Request) -> Result<(), Request> {
        match lock(&self.inner.writes).as_ref() {
            Some(tx) => tx.send(req).map_err(|e| e.0),
            None => Err(req),
        }
    }

    fn closed(&self) -> StorageError {
        StorageError(format!(
            "{}: the store is closed",
            self.inner.path.display()
        ))
    }

    /// The answer a request to the writer or the reader gives through `rx`, if it was `sent`;
    /// "closed" if it was not, or if its thread ended without answering.
    fn answer<T: Send + 'static>(
        &self, sent: bool, rx: oneshot::Receiver<Result<T, StorageError>>,
    ) -> StorageFuture<T> {
        let closed = self.closed();
        async move {
            if !sent {
                return Err(closed);
            }
            rx.await.unwrap_or(Err(closed))
        }
        .boxed()
    }

    /// Runs `f` on the reader thread; its result is the future's.
    fn read<T: Send + 'static>(
        &self, f: impl FnOnce(&Database) -> Result<T, StorageError> + Send + 'static,
    ) -> StorageFuture<T> {
        let (tx, rx) = oneshot::channel();
        let stats = self.inner.stats.clone();
        let job: ReadJob = Box::new(move |db| {
            let _ = tx.send(f(db).map_err(|e| with_cause(&stats, e)));
        });
        let sent = lock(&self.inner.reads)
            .as_ref()
            .is_some_and(|r| r.send(job).is_ok());
        self.answer(sent, rx)
    }
}

impl RedbStorage {
    /// The stored numbers of the (workspace, sequence) `keys` of a partition, in order, 0 for
    /// one never stored: read in one read transaction.
    fn numbers(
        &self, partition: PartitionId, keys: impl Iterator<Item = (WsId, SeqId)>,
    ) -> Result<Vec<Number>, StorageError> {
        (|| -> Result<Vec<Number>, redb::Error> {
            let rx = self.inner.db.begin_read()?;
            let t = rx.open_table(SEQUENCES)?;
            keys.map(|(w, seq)| Ok(t.get((partition, w, seq))?.map_or(0, |v| v.value())))
                .collect()
        })()
        .map_err(|e| {
            with_cause(
                &self.inner.stats,
                err(&self.inner.path, "cannot read numbers", e),
            )
        })
    }
}

/// `e`, naming the I/O error after which redb refuses every operation if one happened: a
/// read that fails after it says only "Previous I/O error occurred", which hides the cause (a
/// full disk, say) from the line a stopped run ends with.
fn with_cause(stats: &StoreStats, e: StorageError) -> StorageError {
    let mut cause = stats.failure();
    // The writer records the error that poisoned the database as soon as its commit returns:
    // a read failing at that moment waits for it a little (only ever on this failure path).
    for _ in 0..50 {
        if cause.is_some() || !e.0.contains("Previous I/O error") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        cause = stats.failure();
    }
    match cause {
        Some(cause) if !e.0.contains(&cause) => {
            StorageError(format!("{} (after an earlier error: {cause})", e.0))
        }
        _ => e,
    }
}

impl Storage for RedbStorage {
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.numbers(partition, seqs.iter().map(|&s| (ws, s)))
    }

    fn read_numbers_many(
        &self, partition: PartitionId, ws: &[WsId], seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        // One read transaction for them all.
        let keys = ws.iter().flat_map(|&w| seqs.iter().map(move |&s| (w, s)));
        self.numbers(partition, keys)
    }

    fn read_next_offset(&self, partition: PartitionId) -> StorageFuture<PLogOffset> {
        let path = self.inner.path.clone();
        self.read(move |db| read_next(db, &path, partition))
    }

    fn write(
        &self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
    ) -> StorageFuture<()> {
        let (reply, rx) = oneshot::channel();
        let sent = self
            .send(Request::Write {
                partition,
                values,
                next_offset,
                reply,
            })
            .is_ok();
        self.answer(sent, rx)
    }

    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        let path = self.inner.path.clone();
        let damage = self.inner.damage.clone();
        self.read(move |db| {
            // One event more than asked for tells whether the PLog ends with the page.
            let events = read_events(db, &path, partition, from, max_events.saturating_add(1))?;
            PlogPage::of_stored(from, max_events, events)
                .map_err(|e| damage.refuse(&path.display().to_string(), partition, e))
        })
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.append_batch(partition, batch.clone())
    }

    fn failure(&self) -> Option<String> {
        self.inner.stats.failure()
    }

    fn damaged(&self) -> Option<DamagedEvent> {
        self.inner.damage.get()
    }
}

impl RedbStorage {
    /// Deletes up to [`TRIM_CHUNK`](super::TRIM_CHUNK) of the partition's oldest PLog events
    /// below `below`, in one transaction committed with the writer's group and durable when
    /// this returns. It never deletes an event at or past the stored next offset (replay starts
    /// there) nor the partition's last event (the append fence continues from it), whatever
    /// `below` says; call again until [`Trimmed::deleted`] is 0 to trim further.
    pub fn trim(&self, partition: PartitionId, below: PLogOffset) -> Result<Trimmed, StorageError> {
        let (reply, rx) = oneshot::channel();
        if self
            .send(Request::Trim {
                partition,
                below,
                reply,
            })
            .is_err()
        {
            return Err(self.closed());
        }
        futures::executor::block_on(rx).unwrap_or_else(|_| Err(self.closed()))
    }

    /// Hands `events` to the writer (one request: all of it in one transaction, or nothing)
    /// and waits until that transaction is durable.
    fn append_batch(&self, partition: PartitionId, events: EventBatch) -> Result<(), AppendError> {
        if events.is_empty() {
            return Ok(());
        }
        let (reply, rx) = oneshot::channel();
        let req = Request::Append {
            partition,
            events,
            reply,
        };
        if self.send(req).is_err() {
            return Err(AppendError::Storage(self.closed()));
        }
        futures::executor::block_on(rx).unwrap_or_else(|_| Err(AppendError::Storage(self.closed())))
    }
}

/// What the archive trims through: [`RedbStorage::trim`].
impl Trim for RedbStorage {
    fn trim_below(
        &self, partition: PartitionId, below: PLogOffset,
    ) -> Result<Trimmed, StorageError> {
        self.trim(partition, below)
    }
}

impl crate::store::reader::StoreReader for RedbStorage {
    fn describe(&self) -> String {
        format!("embedded redb {}", self.path().display())
    }

    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        read_partitions(self.inner.db.as_ref(), &self.inner.path)
    }

    fn plog_bounds(
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        read_plog_bounds(self.inner.db.as_ref(), &self.inner.path, partition)
    }

    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        read_events(
            self.inner.db.as_ref(),
            &self.inner.path,
            partition,
            from,
            max,
        )
    }

    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        read_next(self.inner.db.as_ref(), &self.inner.path, partition)
    }

    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        read_view(self.inner.db.as_ref(), &self.inner.path, partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_refused_after_redb_was_poisoned_names_the_io_error_that_poisoned_it() {
        let stats = StoreStats::default();
        let refused = || {
            StorageError(
                "s.redb: cannot read numbers: Previous I/O error occurred. Please close and re-open the database."
                    .into(),
            )
        };
        // No error recorded (yet): the message stays as it is, after a short wait.
        let started = std::time::Instant::now();
        assert_eq!(with_cause(&stats, refused()), refused());
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        stats.failed("I/O error: No space left on device (os error 28)".into());
        let named = with_cause(&stats, refused());
        assert!(named.0.contains("Previous I/O error"), "{named}");
        assert!(named.0.contains("No space left on device"), "{named}");
        // An error that names it already is left alone.
        let commit =
            StorageError("commit failed: I/O error: No space left on device (os error 28)".into());
        assert_eq!(with_cause(&stats, commit.clone()), commit);
    }
}
