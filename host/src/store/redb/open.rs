//! Opening the database file: a new one made with its tables, an existing one verified (every
//! page's checksum, its format) and refused with the reason ([`OpenFailure`]) when it cannot
//! be used.

use std::path::Path;

use redb::Database;

use crate::store::redb::storage::RedbStorage;
use crate::store::redb::tables::{check_format, create_tables, err};
use crate::store::storage::StorageError;

/// The most memory redb's page cache of a run's database holds (its read cache and write
/// buffer together): 64 MiB, not redb's default of 1 GiB. A run works on the PLog's tail and
/// the view, whose pages stay cached. With the default the cache grew toward 1 GiB over a long
/// run (every committed page moves into it) and faster beside a `check` or `inspect`, whose
/// reads of the whole PLog pass through it: each new page of the heap a fault, and its growth
/// `mprotect` calls that hold every thread's faults, the writer's and command processor's
/// included. Measured by `perf stat` over 10 s of a paced run (4,000 commands/s) on a 2.2 GB
/// store: alone 6,700 faults and 4,800 `mprotect` calls instead of 40,800 and 29,500; beside a
/// looping check (with the live server's reply buffer kept) 600-1,500 faults instead of
/// 269,000. The main job's throughput did not move (10 paired runs, `farm-bench --vs`, one binary
/// with and without the cap: medians 99,400 and 99,200 durable events/s).
/// Pages past it are read from the file, which the operating system caches.
pub const CACHE_BYTES: usize = 64 << 20;

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

impl RedbStorage {
    /// Creates a new database file at `path` (which must not exist) with empty tables.
    pub fn create(path: &Path) -> Result<Self, StorageError> {
        if path.exists() {
            return Err(StorageError(format!(
                "{}: cannot create the database: the file exists",
                path.display()
            )));
        }
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(path)
            .map_err(|e| err(path, "cannot create the database", e))?;
        let tx = db
            .begin_write()
            .map_err(|e| err(path, "cannot initialise the database", e))?;
        create_tables(&tx).map_err(|e| err(path, "cannot initialise the database", e))?;
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
                .set_cache_size(CACHE_BYTES)
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
}
