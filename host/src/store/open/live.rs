//! A redb data directory beside the live run that holds it: the run's side (its store as a
//! [`LiveSource`], served on the directory's socket) and the reader's (which way a directory
//! is read: in place, the run's snapshots, or a private copy when no run answers).

use std::path::Path;

use crate::store::live::LiveSource;
use crate::store::reader::StoreReader;
use crate::store::redb::data_dir::{DataDir, DataDirError};
use crate::store::redb::reader::{RedbReader, file_size};
use crate::store::redb::storage::RedbStorage;
use crate::store::storage::StorageError;

/// A run's redb store, as it serves it to readers.
pub(super) struct RedbLive {
    pub(super) store: RedbStorage,
}

impl LiveSource for RedbLive {
    fn describe(&self) -> String {
        format!("embedded redb {}", self.store.path().display())
    }

    fn snapshot(&self) -> Result<Box<dyn StoreReader + '_>, StorageError> {
        Ok(Box::new(self.store.snapshot()?))
    }

    fn statistics(&self) -> Vec<(String, String)> {
        let c = self.store.counts();
        vec![
            file_size(self.store.path()),
            (
                "live run".into(),
                format!(
                    "{} commits, {} events appended since it opened the store",
                    c.commits, c.appends
                ),
            ),
        ]
    }

    fn hold_commits(&self) -> Option<Box<dyn crate::store::live::Held + '_>> {
        Some(Box::new(self.store.hold_commits()))
    }
}

/// How a data directory is read.
pub(super) enum DirReader {
    /// The file: in place, or a private copy (recovered, or of a live file nobody serves).
    File(RedbReader),
    /// The live run's snapshot.
    #[cfg(unix)]
    Live(LiveRedb),
}

/// Opens the data directory `dir` for reading only. A directory a live run holds is read from
/// that run's snapshots when it serves them; when nothing answers on its socket (a run of an
/// older build, an embedder, a platform without Unix sockets), from a private copy; when
/// something listens but does not answer in time (a stopped run), it is refused as in use by
/// a live run. `hold`: redb's integrity check runs beside a live run too, on a copy taken
/// while the run holds its commits ([`OpenOptions::hold_live_run`](super::OpenOptions::hold_live_run)).
pub(super) fn open_dir(dir: &Path, hold: bool) -> Result<DirReader, DataDirError> {
    if let Some(reader) = DataDir::open_read_only_unless_live(dir)? {
        return Ok(DirReader::File(reader));
    }
    #[cfg(unix)]
    let why = {
        use crate::store::live::{Connect, connect};
        match connect(dir) {
            Connect::Served(client) => {
                let layout = DataDir::read_layout(dir)?;
                return Ok(DirReader::Live(LiveRedb {
                    client: client.with_layout(layout),
                    db: dir.join(crate::store::redb::data_dir::DB_FILE),
                    hold,
                }));
            }
            Connect::NoAnswer(detail) => {
                return Err(DataDirError::LiveRun {
                    path: dir.to_path_buf(),
                    detail: format!(
                        "{detail}; it cannot be read while that run holds it: try again, or stop the run first"
                    ),
                });
            }
            Connect::NotServed(why) => why,
        }
    };
    #[cfg(not(unix))]
    let why = "this platform has no local sockets to read its snapshots through".to_string();
    tracing::debug!("reading a private copy: {why}");
    DataDir::open_copy_of_live(dir)
        .map(DirReader::File)
        .map_err(|e| match e {
            DataDirError::LiveRun { path, detail } => DataDirError::LiveRun {
                path,
                detail: format!("it serves no snapshots ({why}), and {detail}"),
            },
            other => other,
        })
}

/// A data directory read from the snapshot its live run serves.
#[cfg(unix)]
pub(super) struct LiveRedb {
    client: crate::store::live::LiveClient,
    /// The database file, which redb's integrity check copies.
    db: std::path::PathBuf,
    /// Whether redb's integrity check runs, on a copy taken while the run holds its commits.
    hold: bool,
}

#[cfg(unix)]
impl StoreReader for LiveRedb {
    fn describe(&self) -> String {
        self.client.describe()
    }

    fn partitions(&self) -> Result<Vec<u32>, StorageError> {
        self.client.partitions()
    }

    fn plog_bounds(&self, partition: u32) -> Result<Option<(u64, u64)>, StorageError> {
        self.client.plog_bounds(partition)
    }

    fn events(
        &self, partition: u32, from: u64, max: usize,
    ) -> Result<Vec<crate::store::codec::StoredEvent>, StorageError> {
        self.client.events(partition, from, max)
    }

    fn stored_next_offset(&self, partition: u32) -> Result<u64, StorageError> {
        self.client.stored_next_offset(partition)
    }

    fn view(&self, partition: u32) -> Result<Vec<(u64, u16, u64)>, StorageError> {
        self.client.view(partition)
    }

    fn layout(&self) -> Result<Option<crate::store::layout::Layout>, StorageError> {
        self.client.layout()
    }

    fn statistics(&self) -> Vec<(String, String)> {
        self.client.statistics()
    }

    /// On a private copy taken while the run holds its commits, when asked for (the file is
    /// still, so the copy is its last committed state, never torn); otherwise not at all, so
    /// that looking never stalls the run: says so.
    fn verify_integrity(&self) -> Result<Option<String>, StorageError> {
        use crate::store::redb::integrity::{copy_file, verify_copy};
        if !self.hold {
            return Ok(Some(NOT_HELD.to_string()));
        }
        verify_copy(&self.db, "taken while the run held its commits", |dest| {
            self.client.while_held(|| copy_file(&self.db, dest))
        })
        .map(Some)
    }

    fn served_by_live_run(&self) -> bool {
        true
    }
}

/// What a check beside a live run says of redb's integrity check when it does not hold the run.
#[cfg(unix)]
const NOT_HELD: &str = "redb's integrity check: not run beside the live run (its copy would hold the run's commits for as long as it takes); `check --hold-run` runs it so, or check once the run has stopped";
