//! An archive directory ([`Archive`]): its `FORMAT` marker, and its bundles of a fixed number
//! of events per partition, read and written through the object PLog's bundle code.

use std::fs;
use std::path::{Path, PathBuf};

use sequencer::PLogOffset;

use crate::store::archive_record::ArchiveError;
use crate::store::codec::StoredEvent;
use crate::store::fs::{sync_dir, write_synced};
use crate::store::objects::{Access, ObjectPlog, PutBundleError};
use crate::store::retry::RetryPolicy;
use crate::store::storage::{PartitionId, StorageError};

/// Events per bundle of a new archive unless another count is asked for.
pub const DEFAULT_ARCHIVE_BUNDLE_EVENTS: u64 = 1024;

const MARKER: &str = "sequencer-archive";

/// How a failed write to the archive's object store is retried: 100 ms doubling to 2 s,
/// jittered, at most 6 retries and 10 s of waiting.
pub const ARCHIVE_RETRY: RetryPolicy = RetryPolicy {
    first_wait: std::time::Duration::from_millis(100),
    max_wait: std::time::Duration::from_secs(2),
    max_retries: 6,
    deadline: std::time::Duration::from_secs(10),
};

fn not_an_archive(path: &Path, detail: impl Into<String>) -> ArchiveError {
    ArchiveError::NotAnArchive {
        path: path.to_path_buf(),
        detail: detail.into(),
    }
}

/// An archive directory: bundles of a fixed number of events per partition.
#[derive(Clone)]
pub struct Archive {
    pub(super) root: PathBuf,
    plog: ObjectPlog,
}

impl Archive {
    fn read_marker(root: &Path) -> Result<Option<u64>, ArchiveError> {
        let text = match fs::read_to_string(root.join("FORMAT")) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(not_an_archive(root, format!("cannot read FORMAT: {e}"))),
        };
        let line = text.lines().next().unwrap_or_default();
        let mut words = line.split_whitespace();
        if words.next() != Some(MARKER) || !line.contains("format=1") {
            return Err(not_an_archive(
                root,
                "its FORMAT is not an archive marker of format 1",
            ));
        }
        words
            .find_map(|w| w.strip_prefix("bundle-events="))
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&n| n >= 2)
            .map(Some)
            .ok_or_else(|| not_an_archive(root, "its FORMAT names no bundle size"))
    }

    /// Opens the archive at `root` to add bundles, creating it (its parent must exist) with
    /// bundles of `bundle_events` events when it is missing or empty; an existing archive
    /// keeps its bundle size.
    pub fn create_or_open(root: &Path, bundle_events: u64) -> Result<Self, ArchiveError> {
        if Self::read_marker(root)?.is_none() {
            if !Self::unmade(root) {
                return Err(not_an_archive(
                    root,
                    "it is not empty and has no FORMAT file",
                ));
            }
            let cannot =
                |e: &dyn std::fmt::Display| not_an_archive(root, format!("cannot create it: {e}"));
            fs::create_dir_all(root).map_err(|e| cannot(&e))?;
            let tmp = root.join("FORMAT.tmp");
            let line = format!("{MARKER} format=1 bundle-events={}\n", bundle_events.max(2));
            write_synced(&tmp, line.as_bytes()).map_err(|e| cannot(&e))?;
            fs::rename(&tmp, root.join("FORMAT")).map_err(|e| cannot(&e))?;
            sync_dir(root).map_err(|e| cannot(&e))?;
            if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
                sync_dir(parent).map_err(|e| cannot(&e))?;
            }
        }
        Self::open_with(root, Access::Write)
    }

    /// Whether `root`, which has no `FORMAT` marker, is free to become an archive: missing,
    /// empty, or holding only what an interrupted [`create_or_open`](Self::create_or_open)
    /// leaves (`FORMAT.tmp`), which the next one finishes.
    fn unmade(root: &Path) -> bool {
        !root.exists()
            || fs::read_dir(root).is_ok_and(|d| {
                d.flatten()
                    .all(|e| e.file_name().to_string_lossy().starts_with("FORMAT"))
            })
    }

    /// The archive at `root` opened for reading only, as [`open`](Self::open) does, or `None`
    /// where none has been made yet ([`create_or_open`](Self::create_or_open) would make it:
    /// the directory is missing, or holds only what an interrupted creation leaves).
    pub fn open_if_made(root: &Path) -> Result<Option<Self>, ArchiveError> {
        if Self::read_marker(root)?.is_none() && Self::unmade(root) {
            return Ok(None);
        }
        Self::open(root).map(Some)
    }

    /// Opens the existing archive at `root` for reading only (nothing in it changes).
    pub fn open(root: &Path) -> Result<Self, ArchiveError> {
        if !root.exists() {
            return Err(ArchiveError::Missing(root.to_path_buf()));
        }
        Self::open_with(root, Access::ReadOnly)
    }

    fn open_with(root: &Path, access: Access) -> Result<Self, ArchiveError> {
        let bundle = Self::read_marker(root)?
            .ok_or_else(|| not_an_archive(root, "it has no FORMAT file"))?;
        let plog =
            ObjectPlog::open_local(root, bundle, access).map_err(|e| ArchiveError::Bundle {
                archive: root.to_path_buf(),
                error: e,
            })?;
        Ok(Self {
            root: root.to_path_buf(),
            plog,
        })
    }

    /// The archive's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Events per bundle.
    pub fn bundle_events(&self) -> u64 {
        self.plog.bundle_events()
    }

    /// Partitions with bundles, ascending.
    pub fn partitions(&self) -> Vec<PartitionId> {
        self.plog.partitions()
    }

    /// The last offset of a partition the archive holds (dense from 1), 0 for none.
    pub fn end(&self, partition: PartitionId) -> PLogOffset {
        self.plog.bounds(partition).0 - 1
    }

    /// [`end`](Self::end) as the archive holds it now: the partition's bundles listed again
    /// (another process may have archived since this handle looked), and known from then on.
    pub fn end_now(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        self.plog.rescan(partition)?;
        Ok(self.end(partition))
    }

    /// Up to `max` archived events of a partition from `from` on, in order, every link
    /// verified; a corrupt bundle is an error naming it. An event that fails its checksum is
    /// returned flagged ([`StoredEvent::read`]).
    pub fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        let mut out = Vec::new();
        self.plog.visit(partition, from, max, |offset, bytes| {
            out.push(StoredEvent::read(offset, bytes).map_err(|e| {
                StorageError(format!(
                    "archive {}: partition {partition}: {e}",
                    self.root.display()
                ))
            })?);
            Ok(())
        })?;
        Ok(out)
    }

    /// Writes the next bundle of a partition (see [`ObjectPlog::put_bundle`]), retrying an
    /// object store failure per [`ARCHIVE_RETRY`].
    pub(super) fn put_bundle(
        &self, partition: PartitionId, events: &[Vec<u8>],
    ) -> Result<(), ArchiveError> {
        let mut waits = ARCHIVE_RETRY.waits(u64::from(partition) + 1);
        loop {
            match self.plog.put_bundle(partition, events) {
                Ok(_) => return Ok(()),
                Err(PutBundleError::Refused(error)) => {
                    return Err(ArchiveError::Bundle {
                        archive: self.root.clone(),
                        error,
                    });
                }
                Err(PutBundleError::Io(error)) => match waits.next() {
                    Some(wait) => {
                        tracing::warn!("archive {}: {error}; retrying", self.root.display());
                        std::thread::sleep(wait);
                    }
                    None => {
                        return Err(ArchiveError::Bundle {
                            archive: self.root.clone(),
                            error,
                        });
                    }
                },
            }
        }
    }
}
