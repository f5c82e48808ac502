//! The archive of a redb or etcd store's old PLog events, and the trim of the hot store (through
//! the [`Trim`] contract beside `Storage`).
//!
//! An archive is a directory of bundles in the object PLog's bundle format
//! (`store/objects/bundle.rs`), so the same reader reads it:
//!
//! ```text
//! ADIR/
//!   FORMAT                                    "sequencer-archive format=1 bundle-events=N"
//!   bundles/<partition:05>/<first:020>-<last:020>   the events first..=last (aligned, linked)
//! ```
//!
//! [`archive_pass`] copies, per partition, every complete bundle-sized range of events below
//! what is safe to trim (below the stored next offset, where replay starts, and below the
//! PLog's last event, which the append fence continues from), verifies each bundle as written
//! (read back, every hash and the link to the previous bundle) and makes it durable, and only
//! then trims the hot store below the end of the archive. Where the archive is, is recorded
//! with the store ([`ArchiveRecord`](crate::store::ArchiveRecord): the data directory's `ARCHIVE`
//! file, or etcd's `archive` key), so `run`, `check` and `inspect` find it without a flag; [`WithArchive`] reads the
//! archive and the hot store as one PLog and refuses an archive that does not line up.

use std::fs;
use std::path::{Path, PathBuf};

use futures::future::{BoxFuture, FutureExt};
use sequencer::{Number, PLogOffset, SeqId, WsId};

use std::sync::Arc;

use crate::store::codec::{Checksum, StoredEvent, encode_event};
use crate::store::forward::forward_storage;
use crate::store::fs::{sync_dir, write_synced};
use crate::store::layout::Layout;
use crate::store::objects::{Access, ObjectPlog, PutBundleError, bundle_object};
use crate::store::reader::StoreReader;
use crate::store::retry::RetryPolicy;
use crate::store::storage::{
    DamageLatch, DamagedEvent, PartitionId, PlogPage, Storage, StorageError,
};
use crate::store::trim::Trim;

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

/// What went wrong with an archive; each message names the archive, the partition, the
/// offsets or the object.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The recorded archive directory is not there.
    #[error(
        "the archive {} recorded for this store is missing: the store's old PLog events are only there; put it back in place",
        .0.display()
    )]
    Missing(PathBuf),
    /// The directory is not an archive, or its format marker is damaged.
    #[error("{} is not a sequencer archive: {detail}", path.display())]
    NotAnArchive {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The store already records another archive.
    #[error(
        "this store's archive is {} (recorded), not {}: archive into the recorded one",
        recorded.display(),
        asked.display()
    )]
    Another {
        /// The recorded archive.
        recorded: PathBuf,
        /// The one asked for.
        asked: PathBuf,
    },
    /// The archive and the hot store do not make one dense PLog, or disagree on an event.
    #[error("the archive {} does not line up with the store: partition {partition}: {detail}", archive.display())]
    DoesNotLineUp {
        /// The archive.
        archive: PathBuf,
        /// The partition.
        partition: PartitionId,
        /// The offsets (and the bundle) involved.
        detail: String,
    },
    /// A bundle could not be written (a conflicting one, a corrupt read-back).
    #[error("archive {}: {error}", archive.display())]
    Bundle {
        /// The archive.
        archive: PathBuf,
        /// What the object store said.
        error: StorageError,
    },
    /// An event to archive fails its checksum: it is damaged, and neither archived nor
    /// trimmed (nor is anything after it in its partition; the pass archived and trimmed
    /// what it could before it, and the other partitions).
    #[error(
        "partition {partition}: event at offset {offset} fails its checksum: not archived, and the store keeps it (`check` lists every damaged event)"
    )]
    Damaged {
        /// The partition.
        partition: PartitionId,
        /// The event's offset.
        offset: PLogOffset,
    },
    /// The hot store or the archive's object store failed.
    #[error("{0}")]
    Storage(#[from] StorageError),
}

fn not_an_archive(path: &Path, detail: impl Into<String>) -> ArchiveError {
    ArchiveError::NotAnArchive {
        path: path.to_path_buf(),
        detail: detail.into(),
    }
}

/// An archive directory: bundles of a fixed number of events per partition.
#[derive(Clone)]
pub struct Archive {
    root: PathBuf,
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
            // Missing, empty, or holding only what an interrupted creation leaves.
            let empty = !root.exists()
                || fs::read_dir(root).is_ok_and(|d| {
                    d.flatten()
                        .all(|e| e.file_name().to_string_lossy().starts_with("FORMAT"))
                });
            if !empty {
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

    /// Up to `max` archived events of a partition from `from` on, in order, every link
    /// verified; a corrupt bundle is an error naming it. An event that fails its checksum is
    /// returned flagged ([`StoredEvent::read`]).
    pub fn events(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max: usize,
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
    fn put_bundle(&self, partition: PartitionId, events: &[Vec<u8>]) -> Result<(), ArchiveError> {
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

/// Makes an archive path absolute (so the record holds wherever the command was run from).
pub fn absolute(root: &Path) -> PathBuf {
    std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf())
}

/// What one [`archive_pass`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchivePass {
    /// Partitions looked at.
    pub partitions: usize,
    /// Bundles written (or found written by an interrupted pass).
    pub bundles: u64,
    /// Events copied into them.
    pub archived: u64,
    /// Events deleted from the hot store.
    pub trimmed: u64,
    /// What was done after trimming (etcd's compaction), if anything.
    pub after: Option<String>,
}

/// What a pass is doing, for a progress bar.
#[derive(Clone, Copy, Debug)]
pub enum PassProgress {
    /// The pass will copy about this many events (and trim as many).
    Planned(u64),
    /// This many more events were copied.
    Archived(u64),
    /// This many more events were trimmed.
    Trimmed(u64),
}

/// The last offset that may be archived and trimmed in a partition whose stored next offset
/// is `stored` and whose PLog ends at `last`, rounded down to whole bundles of `n`.
pub fn safe_end(stored: PLogOffset, last: PLogOffset, n: u64) -> PLogOffset {
    // Offsets below both the stored next offset (replay reads from it) and the last event.
    let limit = stored.min(last).saturating_sub(1);
    limit / n * n
}

/// Copies every partition's events below what is safe to trim into `archive` (whole
/// bundles), then trims the hot store below the end of the archive; see the module's
/// documentation. Idempotent: a pass interrupted anywhere is finished by the next one.
pub fn archive_pass(
    hot: &dyn Trim,
    archive: &Archive,
    mut progress: impl FnMut(PassProgress),
) -> Result<ArchivePass, ArchiveError> {
    let n = archive.bundle_events();
    let partitions = hot.partitions()?;
    let mut plan = Vec::new();
    let mut planned = 0;
    for &p in &partitions {
        let Some((first, last)) = hot.plog_bounds(p)? else {
            continue;
        };
        let end = archive.end(p);
        lines_up(archive, p, Some((first, last)), end)?;
        let target = safe_end(hot.stored_next_offset(p)?, last, n);
        planned += target.saturating_sub(end) + target.saturating_sub(first - 1);
        plan.push((p, target));
    }
    progress(PassProgress::Planned(planned));
    let mut pass = ArchivePass {
        partitions: partitions.len(),
        ..ArchivePass::default()
    };
    // The first damaged event met: its partition archives no further, the others go on, and
    // the pass fails once everything it could do is done.
    let mut damaged: Option<ArchiveError> = None;
    for (p, target) in plan {
        while archive.end(p) + n <= target {
            let from = archive.end(p) + 1;
            // A backend may answer fewer events than asked per read (etcd: a page).
            let mut events = hot.events(p, from, n as usize)?;
            while (events.len() as u64) < n {
                let more = hot.events(p, from + events.len() as u64, n as usize - events.len())?;
                if more.is_empty() {
                    break;
                }
                events.extend(more);
            }
            let dense =
                events.len() as u64 == n && events.iter().zip(from..).all(|(e, o)| e.offset == o);
            if !dense {
                return Err(ArchiveError::DoesNotLineUp {
                    archive: archive.root.clone(),
                    partition: p,
                    detail: format!(
                        "the store does not hold every event of {from}..={}",
                        from + n - 1
                    ),
                });
            }
            // A damaged event is not copied (its checksum would be made anew over what is
            // left of it); an old one without a checksum gets one.
            if let Some(e) = events.iter().find(|e| e.checksum == Checksum::Mismatch) {
                damaged.get_or_insert(ArchiveError::Damaged {
                    partition: p,
                    offset: e.offset,
                });
                break;
            }
            let encoded: Vec<Vec<u8>> = events
                .iter()
                .map(|e| encode_event(e.offset, &e.values, &e.payload))
                .collect();
            archive.put_bundle(p, &encoded)?;
            pass.bundles += 1;
            pass.archived += n;
            progress(PassProgress::Archived(n));
        }
        // Only what the archive holds durably, verified, is trimmed.
        let below = archive.end(p).min(target) + 1;
        loop {
            let t = hot.trim_below(p, below)?;
            if t.deleted == 0 {
                break;
            }
            pass.trimmed += t.deleted;
            progress(PassProgress::Trimmed(t.deleted));
            if t.first_kept >= below {
                break;
            }
        }
    }
    if pass.trimmed > 0 {
        pass.after = hot.after_trim()?;
    }
    match damaged {
        Some(e) => Err(e),
        None => Ok(pass),
    }
}

/// Whether a partition's hot PLog (`first..=last`, or none) and its archive (`1..=end`)
/// make one dense PLog: the hot store must start at most one past the archive's end.
fn lines_up(
    archive: &Archive,
    p: PartitionId,
    hot: Option<(PLogOffset, PLogOffset)>,
    end: PLogOffset,
) -> Result<(), ArchiveError> {
    let bad = |detail: String| ArchiveError::DoesNotLineUp {
        archive: archive.root.clone(),
        partition: p,
        detail,
    };
    match hot {
        Some((first, _)) if first > end + 1 => {
            let (bf, bl) = (end + 1, end + archive.bundle_events());
            Err(bad(format!(
                "the store's PLog starts at offset {first}, but the archive holds it only up to {end}: offsets {}..={} are in neither (is {} missing?)",
                end + 1,
                first - 1,
                bundle_object(p, bf, bl)
            )))
        }
        None if end > 0 => Err(bad(format!(
            "the archive holds offsets 1..={end}, but the store has no PLog for it: not this store's archive"
        ))),
        _ => Ok(()),
    }
}

/// Refuses (naming the partition and offsets) an archive that does not line up with the
/// hot store: a gap between the archive's end and the store's first event, an archive of a
/// partition the store does not have, or an event both hold with different contents (one
/// compared per partition here; every one by `check`).
pub fn check_lines_up(hot: &dyn StoreReader, a: &Archive) -> Result<(), ArchiveError> {
    let mut parts = hot.partitions()?;
    parts.extend(a.partitions());
    parts.sort_unstable();
    parts.dedup();
    for p in parts {
        let bounds = hot.plog_bounds(p)?;
        let end = a.end(p);
        lines_up(a, p, bounds, end)?;
        if let Some((first, last)) = bounds
            && first <= end
        {
            // Both hold first..=end: a pass interrupted before its trim.
            let o = end.min(last);
            let (x, y) = (hot.events(p, o, 1)?, a.events(p, o, 1)?);
            let same = match (x.first(), y.first()) {
                (Some(x), Some(y)) => x.same_event(y),
                (x, y) => x == y,
            };
            if !same {
                return Err(ArchiveError::DoesNotLineUp {
                    archive: a.root.clone(),
                    partition: p,
                    detail: format!(
                        "event {o} differs between the store and the archive: not this store's archive"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A hot store read together with its archive (if it has one) as one PLog: old offsets from
/// the archive, the rest from the store. Implements [`StoreReader`] (for `check` and
/// `inspect`) and [`Storage`] (for `run`: a replay from below the hot store's first event
/// reads the archive).
#[derive(Clone)]
pub struct WithArchive<S> {
    hot: S,
    archive: Option<Archive>,
    /// The first archived event a replay refused for its checksum.
    damage: Arc<DamageLatch>,
}

impl<S: StoreReader> WithArchive<S> {
    /// `hot` with its archive; refuses (naming the partition and offsets) an archive that
    /// does not line up with the store: a gap between the archive's end and the store's
    /// first event, an archive of a partition the store does not have, or an event both hold
    /// with different contents.
    pub fn new(hot: S, archive: Option<Archive>) -> Result<Self, ArchiveError> {
        if let Some(a) = &archive {
            check_lines_up(&hot, a)?;
        }
        Ok(Self {
            hot,
            archive,
            damage: Arc::default(),
        })
    }

    /// The hot store.
    pub fn hot(&self) -> &S {
        &self.hot
    }

    /// The archive, if the store has one.
    pub fn archive(&self) -> Option<&Archive> {
        self.archive.as_ref()
    }

    fn end(&self, p: PartitionId) -> PLogOffset {
        self.archive.as_ref().map_or(0, |a| a.end(p))
    }
}

impl<S: StoreReader> StoreReader for WithArchive<S> {
    fn describe(&self) -> String {
        match &self.archive {
            Some(a) => format!(
                "{}, with its archive {}",
                self.hot.describe(),
                a.root.display()
            ),
            None => self.hot.describe(),
        }
    }

    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        let mut v = self.hot.partitions()?;
        if let Some(a) = &self.archive {
            v.extend(a.partitions());
        }
        v.sort_unstable();
        v.dedup();
        Ok(v)
    }

    fn plog_bounds(
        &self,
        partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        let end = self.end(partition);
        Ok(match (self.hot.plog_bounds(partition)?, end) {
            (bounds, 0) => bounds,
            (Some((_, last)), end) => Some((1, last.max(end))),
            (None, end) => Some((1, end)),
        })
    }

    fn events(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        let end = self.end(partition);
        let (Some(a), true) = (&self.archive, from.max(1) <= end) else {
            let hot = self.hot.events(partition, from, max)?;
            // The hot store starts past `from`: another process archived and trimmed since
            // this reader opened the archive. The archive as it is now holds what is between.
            if let Some(a) = &self.archive
                && hot.first().is_some_and(|e| e.offset > from.max(1))
            {
                let now = Archive::open(&a.root).map_err(|e| StorageError(e.to_string()))?;
                let now_end = now.end(partition);
                if now_end >= from.max(1) {
                    let take =
                        max.min(usize::try_from(now_end - from.max(1) + 1).unwrap_or(usize::MAX));
                    return now.events(partition, from, take);
                }
            }
            return Ok(hot);
        };
        let take = max.min(usize::try_from(end - from.max(1) + 1).unwrap_or(usize::MAX));
        let old = a.events(partition, from, take)?;
        // Events the hot store still holds too (a pass interrupted before its trim) must be
        // the same.
        if let (Some(first), Some(last)) = (old.first(), old.last())
            && let Some((hot_first, _)) = self.hot.plog_bounds(partition)?
            && hot_first <= last.offset
        {
            let from = hot_first.max(first.offset);
            let n = usize::try_from(last.offset - from + 1).unwrap_or(usize::MAX);
            for e in self.hot.events(partition, from, n)? {
                let i = usize::try_from(e.offset - first.offset).unwrap_or(usize::MAX);
                if !old.get(i).is_some_and(|o| o.same_event(&e)) {
                    return Err(StorageError(format!(
                        "partition {partition}: event {} differs between the store and its archive {}",
                        e.offset,
                        a.root.display()
                    )));
                }
            }
        }
        Ok(old)
    }

    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        self.hot.stored_next_offset(partition)
    }

    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        self.hot.view(partition)
    }

    fn layout(&self) -> Result<Option<Layout>, StorageError> {
        self.hot.layout()
    }

    fn statistics(&self) -> Vec<(String, String)> {
        let mut v = self.hot.statistics();
        if let Some(a) = &self.archive {
            let parts = a.partitions();
            let events: u64 = parts.iter().map(|&p| a.end(p)).sum();
            v.push((
                "archive".into(),
                format!(
                    "{}: {events} events of {} partitions in bundles of {} events",
                    a.root.display(),
                    parts.len(),
                    a.bundle_events()
                ),
            ));
        }
        v
    }

    /// The hot store's (the archive's bundles are verified, link by link, as they are read).
    fn verify_integrity(&self) -> Result<Option<String>, StorageError> {
        self.hot.verify_integrity()
    }
}

impl<S: Storage + StoreReader + Clone + 'static> Storage for WithArchive<S> {
    /// A replay from below the hot store's first event reads the archive (never needed while
    /// trims stay below the stored next offset, but a replay from anywhere is served).
    fn read_plog(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max_events: usize,
    ) -> BoxFuture<'static, Result<PlogPage, StorageError>> {
        let end = self.end(partition);
        if from.max(1) > end {
            return self.hot.read_plog(partition, from, max_events);
        }
        let this = self.clone();
        let (tx, rx) = futures::channel::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("archive-read".into())
            .spawn(move || {
                let read = (|| {
                    let events = this.events(partition, from, max_events.saturating_add(1))?;
                    let more = this
                        .hot
                        .plog_bounds(partition)?
                        .is_some_and(|(_, last)| last > end);
                    let mut page = PlogPage::of_stored(from, max_events, events).map_err(|e| {
                        let label = this.describe();
                        this.damage.refuse(&label, partition, e)
                    })?;
                    page.end = page.end && !more;
                    Ok(page)
                })();
                let _ = tx.send(read);
            });
        async move {
            spawned.map_err(|e| StorageError(format!("archive: cannot start a read: {e}")))?;
            rx.await
                .unwrap_or_else(|_| Err(StorageError("archive: a read was lost".into())))
        }
        .boxed()
    }

    fn damaged(&self) -> Option<DamagedEvent> {
        self.damage.get().or_else(|| self.hot.damaged())
    }

    forward_storage!(hot: read_numbers, read_numbers_many, read_next_offset, write, append_event, append_events, append_limits, view_write_interval, failure);
}

/// Opens the archive recorded for a store (`recorded`), read-only; `None` when none is.
pub fn open_recorded(recorded: Option<PathBuf>) -> Result<Option<Archive>, ArchiveError> {
    recorded.map(|root| Archive::open(&root)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redb::storage::RedbStorage;
    use crate::store::storage::{AppendError, EventBatch};
    use sequencer::SeqValue;

    #[test]
    fn the_safe_end_stays_below_the_stored_offset_and_the_last_event_in_whole_bundles() {
        assert_eq!(safe_end(90, 100, 16), 80);
        assert_eq!(safe_end(200, 100, 16), 96);
        assert_eq!(safe_end(97, 200, 16), 96);
        assert_eq!(safe_end(96, 200, 16), 80);
        assert_eq!(safe_end(0, 100, 16), 0);
        assert_eq!(safe_end(16, 16, 16), 0);
    }

    /// A redb store whose partition 0 holds `events` events (workspace 1's sequence 1 going
    /// 1, 2, 3, …) and stored next offset `stored`.
    fn store(dir: &Path, events: u64, stored: u64) -> RedbStorage {
        let s = RedbStorage::create(&dir.join("store.redb")).expect("create");
        let mut batch = EventBatch::new(1);
        for o in 1..=events {
            batch.push(&[SeqValue::new(1, 1, o)], b"payload");
        }
        s.append_events(0, &batch).expect("append");
        futures::executor::block_on(s.write(0, vec![SeqValue::new(1, 1, stored - 1)], stored))
            .expect("write");
        s
    }

    #[test]
    fn a_pass_archives_whole_bundles_trims_below_them_and_a_replay_from_one_reads_the_archive() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let hot = store(tmp.path(), 100, 90);
        let archive = Archive::create_or_open(&tmp.path().join("a"), 16).expect("archive");
        let pass = archive_pass(&hot, &archive, |_| {}).expect("pass");
        assert_eq!((pass.bundles, pass.archived, pass.trimmed), (5, 80, 80));
        assert_eq!(archive.end(0), 80);
        assert_eq!(hot.plog_bounds(0).expect("bounds"), Some((81, 100)));
        // Again: nothing more to do, nothing changes.
        let again = archive_pass(&hot, &archive, |_| {}).expect("pass");
        assert_eq!((again.bundles, again.trimmed), (0, 0));

        let both = WithArchive::new(hot.clone(), Some(archive.clone())).expect("lines up");
        assert_eq!(both.plog_bounds(0).expect("bounds"), Some((1, 100)));
        let page = futures::executor::block_on(both.read_plog(0, 1, 50)).expect("read");
        assert_eq!((page.next, page.end, page.values.len()), (51, false, 50));
        let page = futures::executor::block_on(both.read_plog(0, 70, 50)).expect("read");
        assert_eq!((page.values[0].0, page.next, page.end), (70, 81, false));
        let page = futures::executor::block_on(both.read_plog(0, 81, 50)).expect("read");
        assert_eq!((page.next, page.end), (101, true));
        let all = both.events(0, 1, 1000).expect("events");
        assert_eq!(all.len(), 80, "the archive's part, then the store's");
        // The fence still continues from the last event, which no trim removes.
        assert!(matches!(
            hot.append_events(0, &EventBatch::single(1, &[], b"")),
            Err(AppendError::WrongOffset { expected: 101, .. })
        ));
        assert_eq!(hot.trim(0, 1_000).expect("trim").first_kept, 90);
    }

    #[test]
    fn a_reader_whose_archive_grew_and_trimmed_since_it_opened_reads_the_events_between() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let hot = store(tmp.path(), 100, 90);
        let root = tmp.path().join("a");
        let archive = Archive::create_or_open(&root, 16).expect("archive");
        archive_pass(&hot, &archive, |_| {}).expect("pass");
        // A reader (a check) opens the archive as it is: it ends at 80.
        let reader = WithArchive::new(hot.clone(), Some(Archive::open(&root).expect("open")))
            .expect("lines up");
        // Another process appends, flushes, archives and trims meanwhile.
        let mut batch = EventBatch::new(101);
        for o in 101..=140 {
            batch.push(&[SeqValue::new(1, 1, o)], b"payload");
        }
        hot.append_events(0, &batch).expect("append");
        futures::executor::block_on(hot.write(0, vec![SeqValue::new(1, 1, 139)], 140))
            .expect("write");
        archive_pass(&hot, &archive, |_| {}).expect("pass");
        let (hot_first, _) = hot.plog_bounds(0).expect("bounds").expect("a PLog");
        assert!(hot_first > 81, "trimmed past the reader's archive end");
        let events = reader.events(0, 81, 1000).expect("events");
        assert_eq!(events.first().map(|e| e.offset), Some(81), "no gap");
        let offsets: Vec<_> = events.iter().map(|e| e.offset).collect();
        assert!(offsets.windows(2).all(|w| w[1] == w[0] + 1), "{offsets:?}");
    }

    #[test]
    fn an_archive_that_ends_before_the_store_begins_is_refused_naming_the_missing_bundle() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let hot = store(tmp.path(), 100, 90);
        hot.trim(0, 33).expect("trim without archiving");
        let archive = Archive::create_or_open(&tmp.path().join("a"), 16).expect("archive");
        let e = archive_pass(&hot, &archive, |_| {}).expect_err("a gap");
        let text = e.to_string();
        assert!(text.contains("offsets 1..=32 are in neither"), "{text}");
        assert!(text.contains(&bundle_object(0, 1, 16)), "{text}");
        assert!(WithArchive::new(hot, Some(archive)).is_err());
    }
}
