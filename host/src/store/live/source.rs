//! What a live run serves (a [`LiveSource`]: its store's snapshots, and a hold on its commits)
//! and where: the socket file in the data directory, and the deadlines both sides keep.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::store::reader::StoreReader;
use crate::store::storage::StorageError;

/// The socket's file name in the data directory.
pub const SOCKET_FILE: &str = "live.sock";

/// How long a reader waits for a live run to answer its `Hello` before it says the store is
/// in use by a run that does not answer (a stopped or overloaded run).
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(5);

/// How long a reader waits for any later reply (a large read on a slow disk may take a while).
pub const REPLY_DEADLINE: Duration = Duration::from_secs(60);

/// How long a session may sit idle before the run closes it (and drops its snapshot); a
/// reader whose read of events finds its session closed asks again in a new one.
pub const IDLE_DEADLINE: Duration = Duration::from_secs(60);

/// The longest a reader may hold a run's commits; a longer hold is ended by the run, and the
/// reader's `Release` then fails (what it copied may be torn).
pub const MAX_HOLD: Duration = Duration::from_secs(30);

/// Sessions served at once; one more is refused with an error.
pub const MAX_SESSIONS: usize = 8;

/// A store as its live run serves it to readers.
pub trait LiveSource: Send + Sync {
    /// One line naming the store.
    fn describe(&self) -> String;

    /// The store's committed state now, every read from the same snapshot; it lives as long
    /// as one session.
    fn snapshot(&self) -> Result<Box<dyn StoreReader + '_>, StorageError>;

    /// Figures about the store now, for `inspect`.
    fn statistics(&self) -> Vec<(String, String)>;

    /// Waits for the commit under way, then holds every later one until the guard is dropped,
    /// so that the store's files are still; `None` when the store cannot.
    fn hold_commits(&self) -> Option<Box<dyn Held + '_>>;
}

/// A guard that holds something until it is dropped.
pub trait Held {}

impl<T> Held for T {}

/// The socket's path in the data directory `dir`.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SOCKET_FILE)
}

/// Calls `f` with a path that names the socket in `dir` and fits in a socket address (about
/// 100 bytes): the path itself when it is short, otherwise (on Linux) one through an open
/// descriptor of the directory, `/proc/self/fd/N/live.sock`.
#[cfg(unix)]
pub fn at_socket<T>(dir: &Path, f: impl FnOnce(&Path) -> std::io::Result<T>) -> std::io::Result<T> {
    let path = socket_path(dir);
    if path.as_os_str().len() < 100 || !cfg!(target_os = "linux") {
        return f(&path);
    }
    let dir = std::fs::File::open(dir)?;
    use std::os::fd::AsRawFd;
    let short = PathBuf::from(format!("/proc/self/fd/{}/{SOCKET_FILE}", dir.as_raw_fd()));
    let out = f(&short);
    drop(dir);
    out
}
