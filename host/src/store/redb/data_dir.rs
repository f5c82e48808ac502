//! The data directory of the embedded store: a format marker and one redb database.
//!
//! ```text
//! DIR/
//!   FORMAT        one line: "sequencer-data format=1 store=redb"
//!   store.redb    the redb database (see `redb_storage`)
//!   LAYOUT        what numbering depends on (see `layout`), recorded by the first run
//!   ARCHIVE       where the store's archive is, once one is made (an `ArchiveRecord`)
//! ```
//!
//! Validation reads only: [`DataDir::validate`] says whether a directory can be opened (or
//! created) before anything is written, so a bad directory is refused untouched. A new
//! directory is built under a temporary name beside it and renamed into place, so a crash while
//! creating it never leaves a half-made data directory behind.

use std::fs;
use std::path::{Path, PathBuf};

use crate::store::archive_record::ArchiveRecord;
use crate::store::fs::{FileError, sync_dir, write_synced};
use crate::store::layout::Layout;
use crate::store::redb::open::{OpenError, OpenFailure};
use crate::store::redb::reader::RedbReader;
use crate::store::redb::storage::RedbStorage;
use crate::store::storage::StorageError;

/// The name of the format marker file.
pub const FORMAT_FILE: &str = "FORMAT";
/// The name of the database file.
pub const DB_FILE: &str = "store.redb";
/// The name of the file that records where the store's archive is ([`ArchiveRecord`]).
pub const ARCHIVE_RECORD_FILE: &str = "ARCHIVE";
/// The data directory format this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;
const MARKER_PREFIX: &str = "sequencer-data";

fn marker_line() -> String {
    format!("{MARKER_PREFIX} format={FORMAT_VERSION} store=redb\n")
}

/// Whether a missing directory may be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Open an existing data directory, or create one (its parent must exist).
    OpenOrCreate,
    /// Open an existing data directory only.
    Existing,
}

/// What [`DataDir::validate`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirState {
    /// Nothing there yet (or an empty directory): opening creates the store.
    New,
    /// A data directory of this format.
    Existing,
}

/// A data directory that cannot be used; the message names the path and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    /// The directory does not exist (and may not be created).
    #[error("data directory {} does not exist", .0.display())]
    Missing(PathBuf),
    /// The directory's parent does not exist, so it cannot be created.
    #[error(
        "cannot create data directory {}: its parent directory does not exist",
        .0.display()
    )]
    MissingParent(PathBuf),
    /// The path is not a directory.
    #[error("data directory {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The directory is not empty and has no format marker.
    #[error(
        "{} is not a sequencer data directory: it is not empty and has no {FORMAT_FILE} file",
        .0.display()
    )]
    NotADataDir(PathBuf),
    /// The format marker is not one this program writes.
    #[error(
        "{} is not a sequencer data directory marker (corrupt data directory)",
        .0.display()
    )]
    BadMarker(PathBuf),
    /// The directory has another format version.
    #[error(
        "{}: data directory format {found} is not supported (this build reads format {FORMAT_VERSION})",
        path.display()
    )]
    UnsupportedVersion {
        /// The marker file.
        path: PathBuf,
        /// The version it names.
        found: u32,
    },
    /// Another process has the directory's database open.
    #[error(
        "data directory {} is in use by another process (a run, inspect or check): wait for it to end, or use another data directory",
        .0.display()
    )]
    InUse(PathBuf),
    /// A live run holds the directory and it could not be read consistently beside it (its
    /// run did not answer on its socket in time, or, serving none, tore every copy).
    #[error("data directory {} is in use by a live run: {detail}", path.display())]
    LiveRun {
        /// The directory.
        path: PathBuf,
        /// Why it could not be read, and what to do.
        detail: String,
    },
    /// Another process created the directory while this one was creating it.
    #[error(
        "data directory {} was created by another process at the same moment: start one run per data directory",
        .0.display()
    )]
    CreatedMeanwhile(PathBuf),
    /// The directory is on a read-only file system.
    #[error(
        "data directory {} is on a read-only file system: the store is opened for writing (run needs to write; so do check and inspect for now)",
        .0.display()
    )]
    ReadOnly(PathBuf),
    /// This user may not open the directory's database.
    #[error(
        "permission denied on data directory {}: this user cannot open its database for reading and writing",
        .0.display()
    )]
    PermissionDenied(PathBuf),
    /// The directory or its database is damaged.
    #[error("corrupt data directory {}: {detail}", path.display())]
    Corrupt {
        /// What is damaged.
        path: PathBuf,
        /// How.
        detail: String,
    },
    /// A file-system operation failed.
    #[error("cannot {action} {}: {error}", path.display())]
    Io {
        /// Where.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        error: std::io::Error,
    },
}

fn io(path: &Path, action: &'static str) -> impl FnOnce(std::io::Error) -> DataDirError {
    let io = crate::store::fs::io(path, action);
    move |error| io(error).into()
}

/// An open data directory and its store.
pub struct DataDir {
    path: PathBuf,
    store: RedbStorage,
    created: bool,
}

impl DataDir {
    /// Checks `path` without writing anything: whether it is a data directory of this format
    /// (with a database file), or may become one.
    pub fn validate(path: &Path, mode: OpenMode) -> Result<DirState, DataDirError> {
        let meta = match fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return match mode {
                    OpenMode::Existing => Err(DataDirError::Missing(path.to_path_buf())),
                    OpenMode::OpenOrCreate => {
                        let parent = parent_of(path);
                        if parent.is_dir() {
                            Ok(DirState::New)
                        } else {
                            Err(DataDirError::MissingParent(path.to_path_buf()))
                        }
                    }
                };
            }
            Err(e) => return Err(io(path, "read data directory")(e)),
        };
        if !meta.is_dir() {
            return Err(DataDirError::NotADirectory(path.to_path_buf()));
        }
        let marker = path.join(FORMAT_FILE);
        match fs::read(&marker) {
            Ok(bytes) => {
                check_marker(&marker, &bytes)?;
                let db = path.join(DB_FILE);
                if !db.is_file() {
                    return Err(DataDirError::Corrupt {
                        path: path.to_path_buf(),
                        detail: format!("the database file {DB_FILE} is missing"),
                    });
                }
                Ok(DirState::Existing)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let empty = fs::read_dir(path)
                    .map_err(io(path, "list data directory"))?
                    .next()
                    .is_none();
                match (empty, mode) {
                    (true, OpenMode::OpenOrCreate) => Ok(DirState::New),
                    _ => Err(DataDirError::NotADataDir(path.to_path_buf())),
                }
            }
            Err(e) => Err(io(&marker, "read")(e)),
        }
    }

    /// Validates `path`, then opens its store (creating the directory and the store when
    /// [`DirState::New`]).
    pub fn open(path: &Path, mode: OpenMode) -> Result<Self, DataDirError> {
        let state = Self::validate(path, mode)?;
        Self::open_validated(path, state)
    }

    /// Opens a directory [`validate`](Self::validate) found to be in `state`.
    pub fn open_validated(path: &Path, state: DirState) -> Result<Self, DataDirError> {
        match state {
            DirState::Existing => {
                let store = RedbStorage::open(&path.join(DB_FILE)).map_err(open_error(path))?;
                Ok(Self {
                    path: path.to_path_buf(),
                    store,
                    created: false,
                })
            }
            DirState::New => {
                let store = create(path)?;
                Ok(Self {
                    path: path.to_path_buf(),
                    store,
                    created: true,
                })
            }
        }
    }

    /// Opens the directory at `path` for reading only: nothing in it is written, so it may be
    /// on a read-only file system or in use by a live run (see [`RedbReader`] for how; a live
    /// run's own snapshots are read with `store::open_reader`).
    pub fn open_read_only(path: &Path) -> Result<RedbReader, DataDirError> {
        match Self::open_read_only_unless_live(path)? {
            Some(reader) => Ok(reader),
            None => Self::open_copy_of_live(path),
        }
    }

    /// [`Self::open_read_only`], but `None` when a live process holds the database.
    pub fn open_read_only_unless_live(path: &Path) -> Result<Option<RedbReader>, DataDirError> {
        Self::validate(path, OpenMode::Existing)?;
        let layout = Self::read_layout(path)?;
        RedbReader::open_unless_live(&path.join(DB_FILE), layout)
            .map_err(|e| refusal(path.to_path_buf(), e.failure, e.error.0))
    }

    /// Reads the directory a live process holds through a private copy of its database
    /// ([`RedbReader::open_copy_of_live`]).
    pub fn open_copy_of_live(path: &Path) -> Result<RedbReader, DataDirError> {
        let layout = Self::read_layout(path)?;
        RedbReader::open_copy_of_live(&path.join(DB_FILE), layout)
            .map_err(|e| refusal(path.to_path_buf(), e.failure, e.error.0))
    }

    /// The numbering layout recorded in the directory at `path`, read without writing
    /// anything; `None` if none is recorded (a new directory, or one made before layouts were
    /// recorded). A record that cannot be read is [`DataDirError::Corrupt`].
    pub fn read_layout(path: &Path) -> Result<Option<Layout>, DataDirError> {
        Ok(crate::store::fs::read_layout(path)?)
    }

    /// Records `layout` in the directory, durably (written aside, synced, renamed into place).
    pub fn record_layout(&self, layout: &Layout) -> Result<(), DataDirError> {
        Ok(crate::store::fs::record_layout(&self.path, layout)?)
    }

    /// The archive recorded in the directory at `path` (its `ARCHIVE` file), read without
    /// writing anything; `None` if none is.
    pub fn read_archive(path: &Path) -> Result<Option<PathBuf>, StorageError> {
        let file = path.join(ARCHIVE_RECORD_FILE);
        match fs::read_to_string(&file) {
            Ok(text) => ArchiveRecord::parse(&text, &file.display().to_string()).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StorageError(format!("cannot read {}: {e}", file.display()))),
        }
    }

    /// Records `root` as the directory's archive, durably (written aside, synced, renamed
    /// into place).
    pub fn record_archive(&self, root: &Path) -> Result<(), StorageError> {
        let data = &self.path;
        let cannot = |e: &dyn std::fmt::Display| {
            StorageError(format!(
                "cannot record the archive in {}: {e}",
                data.display()
            ))
        };
        let tmp = data.join(format!("{ARCHIVE_RECORD_FILE}.tmp"));
        write_synced(&tmp, ArchiveRecord::to_text(root).as_bytes()).map_err(|e| cannot(&e))?;
        fs::rename(&tmp, data.join(ARCHIVE_RECORD_FILE)).map_err(|e| cannot(&e))?;
        sync_dir(data).map_err(|e| cannot(&e))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store.
    pub fn store(&self) -> &RedbStorage {
        &self.store
    }

    /// Whether this open created the directory's store.
    pub fn created(&self) -> bool {
        self.created
    }
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn check_marker(marker: &Path, bytes: &[u8]) -> Result<(), DataDirError> {
    let bad = || DataDirError::BadMarker(marker.to_path_buf());
    let text = std::str::from_utf8(bytes).map_err(|_| bad())?;
    let line = text.lines().next().ok_or_else(bad)?;
    let mut words = line.split_whitespace();
    if words.next() != Some(MARKER_PREFIX) {
        return Err(bad());
    }
    let version = words
        .find_map(|w| w.strip_prefix("format="))
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or_else(bad)?;
    if version != FORMAT_VERSION {
        return Err(DataDirError::UnsupportedVersion {
            path: marker.to_path_buf(),
            found: version,
        });
    }
    Ok(())
}

/// A file helper's failure, as the data directory names it.
impl From<FileError> for DataDirError {
    fn from(e: FileError) -> Self {
        match e {
            FileError::Io {
                path,
                action,
                error,
            } => Self::Io {
                path,
                action,
                error,
            },
            FileError::CorruptLayout { path, detail } => Self::Corrupt { path, detail },
        }
    }
}

/// Creates the store in `path`: built under a temporary name and renamed into place when `path`
/// does not exist; built in place (marker last) when it is an empty directory.
fn create(path: &Path) -> Result<RedbStorage, DataDirError> {
    let corrupt = |e: crate::store::storage::StorageError| DataDirError::Corrupt {
        path: path.to_path_buf(),
        detail: e.0,
    };
    if path.is_dir() {
        // Found missing or empty a moment ago: a database or marker there now is another
        // process's, which created the directory first (its own run is under way).
        let meanwhile = || path.join(DB_FILE).exists() || path.join(FORMAT_FILE).exists();
        if meanwhile() {
            return Err(DataDirError::CreatedMeanwhile(path.to_path_buf()));
        }
        let store = RedbStorage::create(&path.join(DB_FILE)).map_err(|e| {
            if meanwhile() {
                DataDirError::CreatedMeanwhile(path.to_path_buf())
            } else {
                corrupt(e)
            }
        })?;
        let tmp = path.join(format!("{FORMAT_FILE}.tmp"));
        write_synced(&tmp, marker_line().as_bytes())?;
        fs::rename(&tmp, path.join(FORMAT_FILE)).map_err(io(path, "create the marker in"))?;
        sync_dir(path)?;
        return Ok(store);
    }
    let parent = parent_of(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "sequencer-data".into());
    let tmp = parent.join(format!(".{name}.init-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir(&tmp).map_err(io(&tmp, "create directory"))?;
    let built = (|| -> Result<(), DataDirError> {
        // The database is created, closed and reopened at its final path: redb keeps the
        // path it was opened with only for messages, but reopening proves the file sound.
        drop(RedbStorage::create(&tmp.join(DB_FILE)).map_err(corrupt)?);
        write_synced(&tmp.join(FORMAT_FILE), marker_line().as_bytes())?;
        sync_dir(&tmp)?;
        fs::rename(&tmp, path).map_err(|e| match e.kind() {
            // Another process renamed its own new directory into place first.
            std::io::ErrorKind::DirectoryNotEmpty | std::io::ErrorKind::AlreadyExists => {
                DataDirError::CreatedMeanwhile(path.to_path_buf())
            }
            _ => io(path, "create data directory")(e),
        })?;
        Ok(sync_dir(&parent)?)
    })();
    if let Err(e) = built {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    RedbStorage::open(&path.join(DB_FILE)).map_err(open_error(path))
}

/// Names why the database of the data directory `path` could not be opened.
fn open_error(path: &Path) -> impl FnOnce(OpenError) -> DataDirError {
    let path = path.to_path_buf();
    move |e| refusal(path, e.failure, e.error.0)
}

/// The data directory error for a database file refused for `failure`.
fn refusal(path: PathBuf, failure: OpenFailure, detail: String) -> DataDirError {
    match failure {
        OpenFailure::InUse => DataDirError::InUse(path),
        OpenFailure::LiveRun => DataDirError::LiveRun { path, detail },
        OpenFailure::ReadOnly => DataDirError::ReadOnly(path),
        OpenFailure::PermissionDenied => DataDirError::PermissionDenied(path),
        OpenFailure::Io | OpenFailure::Corrupt => DataDirError::Corrupt { path, detail },
    }
}
