//! redb's own integrity check (every page's checksum, the trees' structure) for a reader, which
//! must not write the file: the check runs on a private copy, as `run`'s open runs it on the
//! file itself. The copy is plain where nobody writes the file (closed cleanly, read-only);
//! beside a live run, the caller takes it while the run holds its commits, so that it is the
//! last committed state and never torn.

use std::cell::Cell;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Once;

use crate::store::redb::open::OpenFailure;
use crate::store::redb::storage::RedbStorage;
use crate::store::storage::StorageError;

/// Runs redb's integrity check on a private copy of the database at `path`, made by
/// `copy(destination)`; returns what was verified, or one line naming `path` and what failed.
pub(crate) fn verify_copy(
    path: &Path, how: &str, copy: impl FnOnce(&Path) -> Result<(), StorageError>,
) -> Result<String, StorageError> {
    let folder = PrivateFolder::new().map_err(|e| {
        StorageError(format!(
            "{}: cannot verify its integrity: no private folder for a copy: {e}",
            path.display()
        ))
    })?;
    let dest = folder.path.join("store.redb");
    copy(&dest)?;
    match RedbStorage::open(&dest) {
        Ok(store) => {
            drop(store);
            Ok(format!(
                "redb's integrity check passed (every page's checksum, on a private copy {how})"
            ))
        }
        Err(e) => {
            let detail = e.error.0.replace(&format!("{}: ", dest.display()), "");
            let what = match e.failure {
                OpenFailure::Corrupt => "redb's integrity check failed",
                _ => "cannot verify its integrity",
            };
            Err(StorageError(format!(
                "{}: {what} (on a private copy {how}): {detail}",
                path.display()
            )))
        }
    }
}

/// A plain copy of `from` to `to`, for [`verify_copy`] where nobody writes the file.
pub(crate) fn copy_file(from: &Path, to: &Path) -> Result<(), StorageError> {
    std::fs::copy(from, to).map(drop).map_err(|e| {
        StorageError(format!(
            "{}: cannot copy the database for a check: {e}",
            from.display()
        ))
    })
}

/// Runs `f`, catching a panic without the panic hook's message (on this thread only: the
/// first call wraps the process's hook, which still speaks for every other panic). For redb
/// calls that may panic on a file altered outside redb, whose failure is then said in one line.
pub(crate) fn catch_quietly<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    static WRAPPED: Once = Once::new();
    WRAPPED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let caught = std::panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    caught
}

thread_local! {
    /// Whether this thread is inside [`catch_quietly`].
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// A folder of this process's own in the system's temporary folder, removed with its
/// contents when dropped.
pub(crate) struct PrivateFolder {
    pub(crate) path: PathBuf,
}

impl PrivateFolder {
    pub(crate) fn new() -> std::io::Result<Self> {
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for n in 0..100u32 {
            let path = base.join(format!("sequencer-read-{}-{nanos}-{n}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Self { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("no free name for a temporary folder"))
    }
}

impl Drop for PrivateFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
