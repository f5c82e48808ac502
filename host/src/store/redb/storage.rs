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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use futures::channel::oneshot;
use futures::future::{BoxFuture, FutureExt};
use redb::{
    Database, ReadableDatabase, ReadableTable, TableDefinition, TableError, WriteTransaction,
};
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::codec::StoredEvent;
use crate::store::storage::{
    AppendError, DamageLatch, DamagedEvent, EventBatch, PartitionId, PlogPage, Storage,
    StorageError,
};
use crate::store::trim::{Trim, Trimmed};

/// The format version of the database this build reads and writes.
pub const DB_FORMAT_VERSION: u64 = 1;

const PLOG: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("plog");
const SEQUENCES: TableDefinition<(u32, u64, u16), u64> = TableDefinition::new("sequences");
const NEXT_OFFSET: TableDefinition<u32, u64> = TableDefinition::new("next_offset");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const FORMAT_KEY: &str = "format";

/// The most requests one group commit takes; the rest wait for the next one.
const MAX_GROUP: usize = 8192;

/// Counters of what the store did, for reports.
#[derive(Debug, Default)]
pub struct StoreStats {
    /// Transactions committed by the writer (each one fsync with redb's 1-phase commit).
    pub commits: AtomicU64,
    /// PLog events appended.
    pub appends: AtomicU64,
    /// Appends (batches of events, one or many) committed.
    pub append_writes: AtomicU64,
    /// Flusher writes (values and next offset) applied.
    pub writes: AtomicU64,
    /// View rows written by flusher writes.
    pub values_written: AtomicU64,
    /// Nanoseconds the writer spent in `commit`.
    pub commit_nanos: AtomicU64,
    /// The I/O error after which redb takes no more writes (see [`Storage::failure`]).
    failure: Mutex<Option<String>>,
}

/// A snapshot of [`StoreStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreCounts {
    /// Transactions committed.
    pub commits: u64,
    /// PLog events appended.
    pub appends: u64,
    /// Appends (batches of events) committed.
    pub append_writes: u64,
    /// Flusher writes applied.
    pub writes: u64,
    /// View rows written.
    pub values_written: u64,
    /// Nanoseconds spent committing.
    pub commit_nanos: u64,
}

impl StoreStats {
    fn snapshot(&self) -> StoreCounts {
        StoreCounts {
            commits: self.commits.load(Ordering::Relaxed),
            appends: self.appends.load(Ordering::Relaxed),
            append_writes: self.append_writes.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            values_written: self.values_written.load(Ordering::Relaxed),
            commit_nanos: self.commit_nanos.load(Ordering::Relaxed),
        }
    }
}

enum Request {
    Write {
        partition: PartitionId,
        values: Vec<SeqValue>,
        next_offset: PLogOffset,
        reply: oneshot::Sender<Result<(), StorageError>>,
    },
    /// A batch of events (one or many): all of it or nothing, in the group's transaction.
    Append {
        partition: PartitionId,
        events: EventBatch,
        reply: oneshot::Sender<Result<(), AppendError>>,
    },
    /// Deletes PLog events below `below` (at most [`TRIM_CHUNK`]), never at or past the stored
    /// next offset and never the partition's last event (checked in the transaction).
    Trim {
        partition: PartitionId,
        below: PLogOffset,
        reply: oneshot::Sender<Result<Trimmed, StorageError>>,
    },
}

/// The most PLog events one trim transaction deletes, so that the appends and flusher writes
/// committed in the same group never wait long behind it.
pub const TRIM_CHUNK: u64 = 16_384;

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

/// Why [`RedbStorage::open`] refused a database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenFailure {
    /// Another process has it open (redb holds a lock on the file while it is open).
    InUse,
    /// A live process holds it and no consistent read of it could be had (a reader's
    /// refusal: it says why, never "corrupt").
    LiveRun,
    /// It is on a read-only file system (redb opens its file for writing).
    ReadOnly,
    /// This user may not open it for reading and writing.
    PermissionDenied,
    /// Another I/O error while opening it.
    Io,
    /// It is missing, damaged, or not a database of this format.
    Corrupt,
}

/// [`RedbStorage::open`]'s refusal: why, and the message naming the file.
#[derive(Clone, Debug)]
pub struct OpenError {
    /// Why.
    pub failure: OpenFailure,
    /// What, naming the file.
    pub error: StorageError,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for OpenError {}

pub(crate) fn err(path: &Path, what: &str, e: impl std::fmt::Display) -> StorageError {
    StorageError(format!("{}: {what}: {e}", path.display()))
}

impl RedbStorage {
    /// Creates a new database file at `path` (which must not exist) with empty tables.
    pub fn create(path: &Path) -> Result<Self, StorageError> {
        if path.exists() {
            return Err(StorageError(format!(
                "{}: cannot create the database: the file exists",
                path.display()
            )));
        }
        let db = Database::create(path).map_err(|e| err(path, "cannot create the database", e))?;
        let tx = db
            .begin_write()
            .map_err(|e| err(path, "cannot initialise the database", e))?;
        (|| -> Result<(), redb::Error> {
            tx.open_table(PLOG)?;
            tx.open_table(SEQUENCES)?;
            tx.open_table(NEXT_OFFSET)?;
            tx.open_table(META)?.insert(FORMAT_KEY, DB_FORMAT_VERSION)?;
            Ok(())
        })()
        .map_err(|e| err(path, "cannot initialise the database", e))?;
        tx.commit()
            .map_err(|e| err(path, "cannot initialise the database", e))?;
        Ok(Self::start(db, path))
    }

    /// Opens the existing database at `path`, verifying every page's checksum (which also
    /// repairs it after a crash) and its format version. A file that is not a database of this
    /// format is refused without being written to; [`OpenError::failure`] says why.
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        Self::open_unclassified(path).map_err(|(failure, error)| OpenError { failure, error })
    }

    fn open_unclassified(path: &Path) -> Result<Self, (OpenFailure, StorageError)> {
        let corrupt = |e: StorageError| (OpenFailure::Corrupt, e);
        if !path.is_file() {
            return Err(corrupt(StorageError(format!(
                "{}: the database file is missing",
                path.display()
            ))));
        }
        // redb may panic on a file corrupted outside it unless the integrity check runs; the
        // check reports such a file as corrupt instead. The catch is a last line of defence.
        let opened = std::panic::catch_unwind(|| {
            Database::builder()
                .set_check_integrity_on_open(true)
                .open(path)
        });
        let db = match opened {
            Ok(Ok(db)) => db,
            Ok(Err(redb::DatabaseError::DatabaseAlreadyOpen)) => {
                return Err((
                    OpenFailure::InUse,
                    StorageError(format!(
                        "{}: the database is in use by another process",
                        path.display()
                    )),
                ));
            }
            Ok(Err(redb::DatabaseError::Storage(redb::StorageError::Io(e)))) => {
                let failure = match e.kind() {
                    std::io::ErrorKind::ReadOnlyFilesystem => OpenFailure::ReadOnly,
                    std::io::ErrorKind::PermissionDenied => OpenFailure::PermissionDenied,
                    std::io::ErrorKind::WouldBlock => OpenFailure::InUse,
                    // redb reports a file that is not one of its databases (a wrong magic
                    // number) as invalid data.
                    std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
                        return Err(corrupt(err(path, "not a readable sequencer database", e)));
                    }
                    _ => OpenFailure::Io,
                };
                return Err((failure, err(path, "cannot open the database", e)));
            }
            Ok(Err(e)) => return Err(corrupt(err(path, "not a readable sequencer database", e))),
            Err(_) => {
                return Err(corrupt(StorageError(format!(
                    "{}: not a readable sequencer database: the engine failed on its contents",
                    path.display()
                ))));
            }
        };
        check_format(&db, path).map_err(corrupt)?;
        Ok(Self::start(db, path))
    }

    fn start(db: Database, path: &Path) -> Self {
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

    /// Runs `f` on the reader thread; its result is the future's.
    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T, StorageError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, StorageError>> {
        let (tx, rx) = oneshot::channel();
        let job: ReadJob = Box::new(move |db| {
            let _ = tx.send(f(db));
        });
        let sent = lock(&self.inner.reads)
            .as_ref()
            .is_some_and(|r| r.send(job).is_ok());
        let closed = self.closed();
        async move {
            if !sent {
                return Err(closed);
            }
            rx.await.unwrap_or(Err(closed))
        }
        .boxed()
    }
}

/// Refuses a database that is not a sequencer database of this build's format.
pub(crate) fn check_format(db: &impl ReadableDatabase, path: &Path) -> Result<(), StorageError> {
    let version = (|| -> Result<Option<u64>, redb::Error> {
        let rx = db.begin_read()?;
        let meta = match rx.open_table(META) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        rx.open_table(PLOG)?;
        rx.open_table(SEQUENCES)?;
        rx.open_table(NEXT_OFFSET)?;
        Ok(meta.get(FORMAT_KEY)?.map(|v| v.value()))
    })()
    .map_err(|e| err(path, "not a sequencer database", e))?;
    match version {
        Some(DB_FORMAT_VERSION) => Ok(()),
        Some(v) => Err(StorageError(format!(
            "{}: database format {v} is not supported (this build reads format {DB_FORMAT_VERSION})",
            path.display()
        ))),
        None => Err(StorageError(format!(
            "{}: not a sequencer database: it has no format record",
            path.display()
        ))),
    }
}

/// Partitions that have a PLog or a stored next offset in `db`, ascending.
pub(crate) fn read_partitions(
    db: &impl super::source::ReadSource,
    path: &Path,
) -> Result<Vec<PartitionId>, StorageError> {
    (|| -> Result<Vec<PartitionId>, redb::Error> {
        let rx = db.begin_read()?;
        let mut out: Vec<PartitionId> = Vec::new();
        let next = rx.open_table(NEXT_OFFSET)?;
        for row in next.iter()? {
            out.push(row?.0.value());
        }
        // Skip-scan the PLog: one seek per partition.
        let plog = rx.open_table(PLOG)?;
        let mut from: u32 = 0;
        while let Some(row) = plog.range((from, 0)..)?.next() {
            let (p, _) = row?.0.value();
            out.push(p);
            match p.checked_add(1) {
                Some(n) => from = n,
                None => break,
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    })()
    .map_err(|e| err(path, "cannot list partitions", e))
}

/// The first and last offsets of a partition's PLog in `db`, `None` if it is empty.
pub(crate) fn read_plog_bounds(
    db: &impl super::source::ReadSource,
    path: &Path,
    partition: PartitionId,
) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
    (|| -> Result<_, redb::Error> {
        let rx = db.begin_read()?;
        let plog = rx.open_table(PLOG)?;
        let mut range = plog.range((partition, 0)..=(partition, u64::MAX))?;
        let first = match range.next() {
            Some(r) => r?.0.value().1,
            None => return Ok(None),
        };
        let last = match range.next_back() {
            Some(r) => r?.0.value().1,
            None => first,
        };
        Ok(Some((first, last)))
    })()
    .map_err(|e| err(path, "cannot read the PLog's bounds", e))
}

/// The sequences view of a partition in `db`: (workspace, sequence, last), in key order.
pub(crate) fn read_view(
    db: &impl super::source::ReadSource,
    path: &Path,
    partition: PartitionId,
) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
    (|| -> Result<_, redb::Error> {
        let rx = db.begin_read()?;
        let t = rx.open_table(SEQUENCES)?;
        let mut out = Vec::new();
        for row in t.range((partition, 0, 0)..=(partition, u64::MAX, u16::MAX))? {
            let (k, v) = row?;
            let (_, ws, seq) = k.value();
            out.push((ws, seq, v.value()));
        }
        Ok(out)
    })()
    .map_err(|e| err(path, "cannot read the sequences view", e))
}

pub(crate) fn read_next(
    db: &impl super::source::ReadSource,
    path: &Path,
    partition: PartitionId,
) -> Result<u64, StorageError> {
    (|| -> Result<u64, redb::Error> {
        let rx = db.begin_read()?;
        let t = rx.open_table(NEXT_OFFSET)?;
        Ok(t.get(partition)?.map_or(0, |v| v.value()))
    })()
    .map_err(|e| err(path, "cannot read the next PLog offset", e))
}

pub(crate) fn read_events(
    db: &impl super::source::ReadSource,
    path: &Path,
    partition: PartitionId,
    from: PLogOffset,
    max: usize,
) -> Result<Vec<StoredEvent>, StorageError> {
    let rows = (|| -> Result<Vec<(u64, Vec<u8>)>, redb::Error> {
        let rx = db.begin_read()?;
        let t = rx.open_table(PLOG)?;
        let mut out = Vec::new();
        for row in t
            .range((partition, from)..=(partition, u64::MAX))?
            .take(max)
        {
            let (k, v) = row?;
            out.push((k.value().1, v.value().to_vec()));
        }
        Ok(out)
    })()
    .map_err(|e| err(path, "cannot read the PLog", e))?;
    // An event that fails its checksum comes back flagged: `read_plog` refuses it, `check`
    // lists it.
    rows.into_iter()
        .map(|(offset, bytes)| {
            StoredEvent::read(offset, &bytes).map_err(|e| {
                StorageError(format!(
                    "{}: PLog event {offset} of partition {partition} is corrupt ({e})",
                    path.display()
                ))
            })
        })
        .collect()
}

/// What one request did inside the group's transaction.
enum Applied {
    Ok,
    Refused(AppendError),
    Trimmed(Trimmed),
}

fn apply(tx: &WriteTransaction, req: &Request, stats: &StoreStats) -> Result<Applied, redb::Error> {
    match req {
        Request::Write {
            partition,
            values,
            next_offset,
            ..
        } => {
            let mut view = tx.open_table(SEQUENCES)?;
            for v in values {
                view.insert((*partition, v.key.ws, v.key.seq), v.value)?;
            }
            tx.open_table(NEXT_OFFSET)?
                .insert(*partition, *next_offset)?;
            stats.writes.fetch_add(1, Ordering::Relaxed);
            stats
                .values_written
                .fetch_add(values.len() as u64, Ordering::Relaxed);
            Ok(Applied::Ok)
        }
        Request::Append {
            partition, events, ..
        } => {
            let mut plog = tx.open_table(PLOG)?;
            let expected = match plog
                .range((*partition, 0)..=(*partition, u64::MAX))?
                .next_back()
            {
                Some(last) => last?.0.value().1 + 1,
                None => 1,
            };
            if events.first() != expected {
                return Ok(Applied::Refused(AppendError::WrongOffset {
                    expected,
                    offered: events.first(),
                }));
            }
            for (offset, event) in events.whole().iter() {
                plog.insert((*partition, offset), event)?;
            }
            Ok(Applied::Ok)
        }
        Request::Trim {
            partition, below, ..
        } => {
            let p = *partition;
            let stored = tx.open_table(NEXT_OFFSET)?.get(p)?.map_or(0, |v| v.value());
            let mut plog = tx.open_table(PLOG)?;
            let (first, last) = {
                let mut range = plog.range((p, 0)..=(p, u64::MAX))?;
                let first = match range.next() {
                    Some(r) => r?.0.value().1,
                    None => return Ok(Applied::Trimmed(Trimmed::default())),
                };
                let last = match range.next_back() {
                    Some(r) => r?.0.value().1,
                    None => first,
                };
                (first, last)
            };
            // Replay starts at the stored next offset, and the fence needs the last event.
            let end = (*below)
                .min(stored)
                .min(last)
                .min(first.saturating_add(TRIM_CHUNK));
            if end <= first {
                return Ok(Applied::Trimmed(Trimmed {
                    deleted: 0,
                    first_kept: first,
                }));
            }
            plog.retain_in((p, first)..(p, end), |_, _| false)?;
            Ok(Applied::Trimmed(Trimmed {
                deleted: end - first,
                first_kept: end,
            }))
        }
    }
}

fn writer_loop(
    db: &Database,
    path: &Path,
    requests: &mpsc::Receiver<Request>,
    stats: &StoreStats,
    commits: &Mutex<()>,
) {
    // After an I/O error redb refuses every later write with "previous I/O error": the first
    // error is the cause an operator needs (a full disk, say), so it is kept and named.
    let mut cause: Option<String> = None;
    while let Ok(first) = requests.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match requests.try_recv() {
                Ok(r) => group.push(r),
                Err(_) => break,
            }
        }
        let outcome = (|| -> Result<Vec<Applied>, redb::Error> {
            // No commit while a reader copies the file (`hold_commits`).
            let _gate = lock(commits);
            // redb's default durability, `Durability::Immediate`: the commit returns once durable.
            let tx = db.begin_write()?;
            let mut applied = Vec::with_capacity(group.len());
            for req in &group {
                applied.push(apply(&tx, req, stats)?);
            }
            let started = std::time::Instant::now();
            tx.commit()?;
            stats.commit_nanos.fetch_add(
                u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
            stats.commits.fetch_add(1, Ordering::Relaxed);
            Ok(applied)
        })();
        match outcome {
            Ok(applied) => {
                for (req, done) in group.into_iter().zip(applied) {
                    match (req, done) {
                        (Request::Write { reply, .. }, _) => {
                            let _ = reply.send(Ok(()));
                        }
                        (Request::Append { reply, events, .. }, Applied::Ok) => {
                            stats
                                .appends
                                .fetch_add(events.len() as u64, Ordering::Relaxed);
                            stats.append_writes.fetch_add(1, Ordering::Relaxed);
                            let _ = reply.send(Ok(()));
                        }
                        (Request::Append { reply, .. }, Applied::Refused(e)) => {
                            let _ = reply.send(Err(e));
                        }
                        (Request::Trim { reply, .. }, Applied::Trimmed(t)) => {
                            let _ = reply.send(Ok(t));
                        }
                        (Request::Append { reply, .. }, Applied::Trimmed(_)) => {
                            let _ = reply.send(Ok(()));
                        }
                        (Request::Trim { reply, .. }, _) => {
                            let _ = reply.send(Ok(Trimmed::default()));
                        }
                    }
                }
            }
            Err(e) => {
                let e = match (&e, &cause) {
                    (redb::Error::PreviousIo, Some(cause)) => err(
                        path,
                        "commit failed",
                        format!("the store takes no writes since an earlier error: {cause}"),
                    ),
                    _ => {
                        // Only an I/O error stops redb taking writes; others leave no cause.
                        if matches!(e, redb::Error::Io(_) | redb::Error::PreviousIo) {
                            let first = cause.get_or_insert_with(|| e.to_string());
                            *lock(&stats.failure) = Some(first.clone());
                        }
                        tracing::error!("{}", err(path, "commit failed", &e));
                        err(path, "commit failed", e)
                    }
                };
                for req in group {
                    match req {
                        Request::Write { reply, .. } => {
                            let _ = reply.send(Err(e.clone()));
                        }
                        Request::Append { reply, .. } => {
                            let _ = reply.send(Err(AppendError::Storage(e.clone())));
                        }
                        Request::Trim { reply, .. } => {
                            let _ = reply.send(Err(e.clone()));
                        }
                    }
                }
            }
        }
    }
}

impl Storage for RedbStorage {
    fn read_numbers(
        &self,
        partition: PartitionId,
        ws: WsId,
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        (|| -> Result<Vec<Number>, redb::Error> {
            let rx = self.inner.db.begin_read()?;
            let t = rx.open_table(SEQUENCES)?;
            seqs.iter()
                .map(|&seq| Ok(t.get((partition, ws, seq))?.map_or(0, |v| v.value())))
                .collect()
        })()
        .map_err(|e| err(&self.inner.path, "cannot read numbers", e))
    }

    fn read_numbers_many(
        &self,
        partition: PartitionId,
        ws: &[WsId],
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        // One read transaction for them all.
        (|| -> Result<Vec<Number>, redb::Error> {
            let rx = self.inner.db.begin_read()?;
            let t = rx.open_table(SEQUENCES)?;
            let keys = ws.iter().flat_map(|&w| seqs.iter().map(move |&s| (w, s)));
            keys.map(|(w, seq)| Ok(t.get((partition, w, seq))?.map_or(0, |v| v.value())))
                .collect()
        })()
        .map_err(|e| err(&self.inner.path, "cannot read numbers", e))
    }

    fn read_next_offset(
        &self,
        partition: PartitionId,
    ) -> BoxFuture<'static, Result<PLogOffset, StorageError>> {
        let path = self.inner.path.clone();
        self.read(move |db| read_next(db, &path, partition))
    }

    fn write(
        &self,
        partition: PartitionId,
        values: Vec<SeqValue>,
        next_offset: PLogOffset,
    ) -> BoxFuture<'static, Result<(), StorageError>> {
        let (reply, rx) = oneshot::channel();
        let sent = self
            .send(Request::Write {
                partition,
                values,
                next_offset,
                reply,
            })
            .is_ok();
        let closed = self.closed();
        async move {
            if !sent {
                return Err(closed);
            }
            rx.await.unwrap_or(Err(closed))
        }
        .boxed()
    }

    fn read_plog(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max_events: usize,
    ) -> BoxFuture<'static, Result<PlogPage, StorageError>> {
        let path = self.inner.path.clone();
        let damage = self.inner.damage.clone();
        self.read(move |db| {
            // One event more than asked for tells whether the PLog ends with the page.
            let events = read_events(db, &path, partition, from, max_events.saturating_add(1))?;
            PlogPage::of_stored(from, max_events, events)
                .map_err(|e| damage.refuse(&path.display().to_string(), partition, e))
        })
    }

    fn append_event(
        &self,
        partition: PartitionId,
        offset: PLogOffset,
        values: &[SeqValue],
        payload: &[u8],
    ) -> Result<(), AppendError> {
        self.append_batch(partition, EventBatch::single(offset, values, payload))
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.append_batch(partition, batch.clone())
    }

    fn failure(&self) -> Option<String> {
        lock(&self.inner.stats.failure).clone()
    }

    fn damaged(&self) -> Option<DamagedEvent> {
        self.inner.damage.get()
    }
}

impl RedbStorage {
    /// Deletes up to [`TRIM_CHUNK`] of the partition's oldest PLog events below `below`, in one
    /// transaction committed with the writer's group and durable when this returns. It never
    /// deletes an event at or past the stored next offset (replay starts there) nor the
    /// partition's last event (the append fence continues from it), whatever `below` says;
    /// call again until [`Trimmed::deleted`] is 0 to trim further.
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
        &self,
        partition: PartitionId,
        below: PLogOffset,
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
        &self,
        partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        read_plog_bounds(self.inner.db.as_ref(), &self.inner.path, partition)
    }

    fn events(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max: usize,
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
