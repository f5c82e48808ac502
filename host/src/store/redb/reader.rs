//! A redb store opened for reading only: what `check` and `inspect` use, so they leave the
//! store's bytes unchanged and work on a read-only copy.
//!
//! redb opens a database read-only in place only when it was closed cleanly and no process has
//! it open for writing. When the last run was killed and the file needs crash recovery (a
//! write), the reader copies the file into a private temporary folder and opens the copy, which
//! redb repairs and checks there; the original is never written. A file a live process holds is
//! read from that run's snapshots when it serves them (`store::live`, chosen by
//! `store::open_reader`); otherwise ([`RedbReader::open_copy_of_live`]) from a private copy,
//! which a commit under way may tear: redb's integrity check (every page's checksum) then
//! refuses it and it is taken again, a few times.

use std::path::{Path, PathBuf};
use std::time::Duration;

use redb::{Builder, DatabaseError, ReadOnlyDatabase};
use sequencer::{Number, PLogOffset, SeqId, WsId};

use crate::store::codec::StoredEvent;
use crate::store::layout::Layout;
use crate::store::reader::StoreReader;
use crate::store::redb::integrity::{PrivateFolder, catch_quietly, copy_file, verify_copy};
use crate::store::redb::open::{OpenError, OpenFailure};
use crate::store::redb::reads::{
    read_events, read_next, read_partitions, read_plog_bounds, read_view,
};
use crate::store::redb::storage::RedbStorage;
use crate::store::redb::tables::{check_format, err};
use crate::store::storage::{PartitionId, StorageError};

/// How many copies of a live store are taken before giving up on a consistent one.
const COPY_TRIES: u32 = 5;

/// How a [`RedbReader`] reads its store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// The file itself, opened read-only (it was closed cleanly and nobody writes to it).
    InPlace,
    /// A private copy, because the file is open for writing by another process (a live run).
    CopyOfLive,
    /// A private copy, repaired there, because the file needs crash recovery (its last writer
    /// was killed or lost power).
    CopyForRecovery,
}

/// A redb database file read without being written; see the module's documentation.
pub struct RedbReader {
    path: PathBuf,
    mode: ReadMode,
    layout: Option<Layout>,
    db: Opened,
}

enum Opened {
    InPlace(ReadOnlyDatabase),
    Copy {
        store: RedbStorage,
        _folder: PrivateFolder,
    },
}

impl RedbReader {
    /// Opens the database file at `path` for reading only; `layout` is the numbering layout
    /// recorded beside it, if any. The file's bytes are never changed. A file a live process
    /// holds is read through a private copy ([`Self::open_copy_of_live`]).
    pub fn open(path: &Path, layout: Option<Layout>) -> Result<Self, OpenError> {
        match Self::open_unless_live(path, layout.clone())? {
            Some(reader) => Ok(reader),
            None => Self::open_copy_of_live(path, layout),
        }
    }

    /// Opens the database file at `path` for reading only, in place or (when it needs crash
    /// recovery) through a private copy; `None` when a live process holds it open for writing.
    pub fn open_unless_live(
        path: &Path, layout: Option<Layout>,
    ) -> Result<Option<Self>, OpenError> {
        let fail = |failure, error| OpenError { failure, error };
        if !path.is_file() {
            return Err(fail(
                OpenFailure::Corrupt,
                StorageError(format!("{}: the database file is missing", path.display())),
            ));
        }
        // redb may panic on a file altered outside it (its read-only open runs no integrity
        // check): caught, and said in one line instead of a panic's message.
        let opened = catch_quietly(|| {
            Builder::new()
                .open_read_only(path)
                .map(|db| (check_format(&db, path), db))
        });
        let (db, mode) = match opened {
            Ok(Ok((format, db))) => {
                format.map_err(|e| fail(OpenFailure::Corrupt, e))?;
                (Opened::InPlace(db), ReadMode::InPlace)
            }
            Ok(Err(DatabaseError::DatabaseAlreadyOpen)) => return Ok(None),
            Ok(Err(DatabaseError::RepairAborted)) => {
                (Self::copy(path, false)?, ReadMode::CopyForRecovery)
            }
            Ok(Err(DatabaseError::Storage(redb::StorageError::Io(e)))) => {
                let failure = match e.kind() {
                    std::io::ErrorKind::PermissionDenied => OpenFailure::PermissionDenied,
                    std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
                        OpenFailure::Corrupt
                    }
                    _ => OpenFailure::Io,
                };
                return Err(fail(failure, err(path, "cannot open the database", e)));
            }
            Ok(Err(e)) => {
                return Err(fail(
                    OpenFailure::Corrupt,
                    err(path, "not a readable sequencer database", e),
                ));
            }
            Err(_) => {
                return Err(fail(
                    OpenFailure::Corrupt,
                    StorageError(format!(
                        "{}: not a readable sequencer database: the engine failed on its contents",
                        path.display()
                    )),
                ));
            }
        };
        Ok(Some(Self {
            path: path.to_path_buf(),
            mode,
            layout,
            db,
        }))
    }

    /// Opens a copy of the database file at `path`, which a live process holds open for
    /// writing, taken again (up to 5 times) while its commits tear it. Refused as
    /// [`OpenFailure::LiveRun`] when no copy was whole.
    pub fn open_copy_of_live(path: &Path, layout: Option<Layout>) -> Result<Self, OpenError> {
        Ok(Self {
            path: path.to_path_buf(),
            mode: ReadMode::CopyOfLive,
            layout,
            db: Self::copy(path, true)?,
        })
    }

    /// Copies the file into a private folder and opens the copy (repairing and checking it
    /// there). A live file's copy may be torn by a commit under way: it is taken again.
    fn copy(path: &Path, live: bool) -> Result<Opened, OpenError> {
        let fail = |failure, error| OpenError { failure, error };
        let tries = if live { COPY_TRIES } else { 1 };
        let mut last = None;
        for attempt in 1..=tries {
            let folder = PrivateFolder::new().map_err(|e| {
                fail(
                    OpenFailure::Io,
                    err(path, "cannot make a folder for a private copy", e),
                )
            })?;
            let copy = folder.path.join("store.redb");
            std::fs::copy(path, &copy)
                .map_err(|e| fail(OpenFailure::Io, err(path, "cannot copy the database", e)))?;
            match RedbStorage::open(&copy) {
                Ok(store) => {
                    return Ok(Opened::Copy {
                        store,
                        _folder: folder,
                    });
                }
                Err(e) => last = Some(e),
            }
            if attempt < tries {
                std::thread::sleep(Duration::from_millis(20 * u64::from(attempt)));
            }
        }
        let detail = last.map_or_else(String::new, |e| e.error.0);
        if live {
            return Err(fail(
                OpenFailure::LiveRun,
                StorageError(format!(
                    "its commits tore {tries} private copies of {} in a row (the last: {detail}); try again, or stop the run first",
                    path.display()
                )),
            ));
        }
        Err(fail(
            OpenFailure::Corrupt,
            StorageError(format!(
                "{}: needs crash recovery, and a private copy of it could not be recovered: {detail}",
                path.display()
            )),
        ))
    }

    /// How the store is read.
    pub fn mode(&self) -> &ReadMode {
        &self.mode
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl StoreReader for RedbReader {
    fn describe(&self) -> String {
        let how = match self.mode {
            ReadMode::InPlace => "read-only in place",
            ReadMode::CopyOfLive => "a private copy: a run has it open",
            ReadMode::CopyForRecovery => {
                "a private copy, recovered there: its last run did not close it"
            }
        };
        format!("embedded redb {} ({how})", self.path.display())
    }

    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        match &self.db {
            Opened::InPlace(db) => read_partitions(db, &self.path),
            Opened::Copy { store, .. } => store.partitions(),
        }
    }

    fn plog_bounds(
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        match &self.db {
            Opened::InPlace(db) => read_plog_bounds(db, &self.path, partition),
            Opened::Copy { store, .. } => store.plog_bounds(partition),
        }
    }

    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        match &self.db {
            Opened::InPlace(db) => read_events(db, &self.path, partition, from, max),
            Opened::Copy { store, .. } => store.events(partition, from, max),
        }
    }

    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        match &self.db {
            Opened::InPlace(db) => read_next(db, &self.path, partition),
            Opened::Copy { store, .. } => store.stored_next_offset(partition),
        }
    }

    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        match &self.db {
            Opened::InPlace(db) => read_view(db, &self.path, partition),
            Opened::Copy { store, .. } => store.view(partition),
        }
    }

    fn layout(&self) -> Result<Option<Layout>, StorageError> {
        Ok(self.layout.clone())
    }

    fn statistics(&self) -> Vec<(String, String)> {
        vec![file_size(&self.path)]
    }

    /// In place, on a private copy (nobody writes the file: this reader's lock keeps writers
    /// out); a copy was checked when it was opened.
    fn verify_integrity(&self) -> Result<Option<String>, StorageError> {
        match self.mode {
            ReadMode::InPlace => verify_copy(&self.path, "of the closed file", |dest| {
                copy_file(&self.path, dest)
            })
            .map(Some),
            ReadMode::CopyOfLive | ReadMode::CopyForRecovery => Ok(Some(
                "redb's integrity check passed (every page's checksum, on the private copy read)"
                    .into(),
            )),
        }
    }
}

/// The database file's size, as `inspect` shows it (0 when it cannot be read).
pub(crate) fn file_size(path: &Path) -> (String, String) {
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    (
        "file size".into(),
        format!("{:.1} MiB", size as f64 / (1024.0 * 1024.0)),
    )
}
