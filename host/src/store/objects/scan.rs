//! The scan of a partition's objects: what a handle opens on and rescans when another writer
//! may have appended. It lists the partition, follows bundles from offset 1 until a hole, then
//! event objects (each named by the offset after the previous one's last), verifying every
//! link and every event's checksum, and reports a hole with objects after it (once listing
//! again has not closed it), a broken link, a damaged event (to a writer) or two different
//! objects for one offset with offsets and object names. With write access it removes the
//! leftovers of an interrupted merge (and a stale writer's objects under a bundle). On a PLog
//! shared by many hosts (a delete delay) it lists event objects from the bundles' end on only,
//! and what lies under the bundles is the sweep's (`sweep`).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;

use futures::TryStreamExt;
use futures::executor::block_on;
use object_store::ObjectStoreExt;
use object_store::path::Path as ObjPath;
use sequencer::PLogOffset;

use crate::store::objects::names::{
    BUNDLES, EVENTS, EventKey, event_object, event_object_at, parse_bundle_name, parse_event_name,
    parse_partition, partition_dir,
};
use crate::store::objects::range::EventRange;
use crate::store::objects::shared::{Access, Part, Shared, os_err, writer_epoch};
use crate::store::storage::{PartitionId, StorageError};

/// Why a scan stopped.
enum Scan {
    /// An object listed was gone when read (merged meanwhile), or the listing showed a hole
    /// with objects after it, as one that ran while a writer appended can (a directory's
    /// listing is not a snapshot, and neither are an S3 listing's pages): scan again. A hole
    /// that is still there after a few scans is reported.
    Vanished(StorageError),
    /// Anything else: a hole, a broken link, a conflict, or the object store's failure.
    Failed(StorageError),
}

impl From<StorageError> for Scan {
    fn from(e: StorageError) -> Self {
        Self::Failed(e)
    }
}

/// The event at `o`, held by the event object named `first`, is damaged: it fails its checksum.
pub(super) fn damaged(p: PartitionId, o: PLogOffset, first: PLogOffset) -> StorageError {
    StorageError(format!(
        "object store: partition {p}: event at offset {o} fails its checksum ({} is damaged)",
        event_object(p, first)
    ))
}

/// A bundle as a listing names it: its first and last offsets, and its file name.
pub(super) type Bundled = (PLogOffset, PLogOffset, String);

/// The last offset of the bundles (first, last; ascending) that follow each other from offset
/// 1 on, 0 when none starts at 1: where a partition's event objects take over.
pub(super) fn chain_end(bundles: impl IntoIterator<Item = (PLogOffset, PLogOffset)>) -> PLogOffset {
    let mut end = 0;
    for (first, last) in bundles {
        if first != end + 1 {
            break;
        }
        end = last;
    }
    end
}

/// Scans of a partition tried when objects vanish under them or a listing raced a writer.
const SCAN_TRIES: u32 = 5;

/// Event objects a scan reads at once (from a few threads).
const SCAN_CHUNK: usize = 256;

impl Shared {
    /// Deletes the event object named `key` that a bundle also holds, counting it as a
    /// leftover removed. One already gone is fine and not counted: a merger (this handle's
    /// thread, or another host's) deleted it first.
    fn remove_leftover(&self, p: PartitionId, key: EventKey) -> Result<(), StorageError> {
        let name = event_object_at(p, key);
        match block_on(self.objects.delete(&ObjPath::from(name.as_str()))) {
            Ok(()) => {
                self.stats.leftovers_removed.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(os_err(format!("delete {name}"), e)),
        }
    }

    /// The partitions that have a folder under `events/` or `bundles/`, ascending.
    pub(super) fn list_partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        let mut out = BTreeSet::new();
        for top in [EVENTS, BUNDLES] {
            let listed = block_on(self.objects.list_with_delimiter(Some(&ObjPath::from(top))))
                .map_err(|e| os_err(format!("list {top}/"), e))?;
            for prefix in listed.common_prefixes {
                if let Some(p) = prefix.filename().and_then(parse_partition) {
                    out.insert(p);
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    /// Names (file names) under `dir/partition`.
    fn list_names(&self, dir: &str, p: PartitionId) -> Result<Vec<String>, StorageError> {
        Ok(self
            .list_meta(dir, p)?
            .into_iter()
            .map(|(n, _)| n)
            .collect())
    }

    /// Names (file names) under `dir/partition`, with when each object was last written by
    /// the store's clock.
    pub(super) fn list_meta(
        &self, dir: &str, p: PartitionId,
    ) -> Result<Vec<(String, std::time::SystemTime)>, StorageError> {
        let prefix = ObjPath::from(partition_dir(dir, p));
        let listed = block_on(self.objects.list_with_delimiter(Some(&prefix)))
            .map_err(|e| os_err(format!("list {prefix}/"), e))?;
        Ok((listed.objects.into_iter())
            .filter_map(|m| Some((m.location.filename()?.to_string(), m.last_modified.into())))
            .collect())
    }

    /// The names of the event objects of partition `p` after the name of offset `after`: those
    /// from `after + 1` on, and the takeover marks' followers at `after`. The store skips the
    /// others (S3's start-after; a directory's entries are compared before they are read), so
    /// the listing costs what the tail holds, not what lies under the bundles.
    fn list_events_after(
        &self, p: PartitionId, after: PLogOffset,
    ) -> Result<Vec<String>, StorageError> {
        let prefix = ObjPath::from(partition_dir(EVENTS, p));
        let offset = ObjPath::from(event_object(p, after));
        let listed: Vec<_> = block_on(
            self.objects
                .list_with_offset(Some(&prefix), &offset)
                .try_collect(),
        )
        .map_err(|e| os_err(format!("list {prefix}/ after {offset}"), e))?;
        Ok((listed.into_iter())
            .filter_map(|m| m.location.filename().map(str::to_string))
            .collect())
    }

    /// The bundles of partition `p` (first, last, file name), ascending.
    pub(super) fn list_bundles(&self, p: PartitionId) -> Result<Vec<Bundled>, StorageError> {
        let mut bundles = Vec::new();
        for name in self.list_names(BUNDLES, p)? {
            match parse_bundle_name(&name) {
                Some((first, last)) => bundles.push((first, last, name)),
                None => tracing::warn!("object store: ignoring bundles/{p:05}/{name}"),
            }
        }
        bundles.sort();
        Ok(bundles)
    }

    /// Reads a partition's PLog from its objects: bundles from offset 1 until a hole, then
    /// event objects, each from where the one before it ended, verifying every link. With
    /// write access, event objects that a bundle also holds are deleted: with the same events
    /// an interrupted merge left them, with other events a stale writer did (never
    /// acknowledged: the bundle was there first). A hole with objects after it, a broken link
    /// and an object starting inside another are errors.
    pub(super) fn scan(&self, p: PartitionId) -> Result<Part, StorageError> {
        // A merger (this handle's or another host's) may bundle and delete objects between
        // the listing and the reads: the scan then starts again, a few times at most.
        let mut tries = 0;
        loop {
            match self.scan_once(p) {
                Ok(part) => return Ok(part),
                Err(Scan::Vanished(_)) if tries < SCAN_TRIES => {
                    // 10 ms doubling (310 ms in all): an object in flight has landed by then.
                    std::thread::sleep(std::time::Duration::from_millis(10 << tries));
                    tries += 1;
                }
                Err(Scan::Vanished(e) | Scan::Failed(e)) => return Err(e),
            }
        }
    }

    /// `st`, a partition's state, read again from its objects ([`scan`](Self::scan)), keeping
    /// why its merger stopped, if it did.
    pub(super) fn rescan(&self, p: PartitionId, st: &mut Part) -> Result<(), StorageError> {
        *st = Part {
            merge_error: st.merge_error.clone(),
            ..self.scan(p)?
        };
        Ok(())
    }

    /// One pass of [`scan`](Self::scan).
    fn scan_once(&self, p: PartitionId) -> Result<Part, Scan> {
        // No object that this listing misses starts at the PLog's end found below: one created
        // later continues an object this scan sees (see `Part::tail_seen`).
        let listed = std::time::Instant::now();
        // Where merged objects go at once, events are listed before bundles: a merger writes
        // a bundle before it deletes the events it holds, so an event missing from this
        // listing is in a bundle listed next. Where they go after the delete delay, an event
        // a merger bundles after the bundles' listing is still there for the events' listing,
        // so the bundles come first and the events are listed from the bundles' end on only:
        // the objects left under the bundles (many, on a store shared by many hosts) are the
        // sweep's (`Shared::sweep_leftovers`), not each scan's.
        let (names, bundles) = if self.delete_delay.is_zero() {
            let names = self.list_names(EVENTS, p)?;
            (names, self.list_bundles(p)?)
        } else {
            let bundles = self.list_bundles(p)?;
            (
                self.list_events_after(p, chain_end(bundles.iter().map(|b| (b.0, b.1))))?,
                bundles,
            )
        };
        let mut events: BTreeSet<EventKey> = BTreeSet::new();
        for name in names {
            match parse_event_name(&name) {
                Some(key) => {
                    events.insert(key);
                }
                None => tracing::warn!("object store: ignoring events/{p:05}/{name}"),
            }
        }
        let mut part = Part {
            next: 1,
            tail_seen: Some(listed),
            ..Part::default()
        };
        let mut used = 0;
        for (first, last, name) in &bundles {
            if *first != part.next {
                break;
            }
            // Only the bundle's link (its header and its last hash) is read here: the events
            // are verified when they are read. The whole bundle is read only to compare
            // leftovers of an interrupted merge with it.
            let (prev, last_hash) = self.bundle_link(p, *first, *last, name)?;
            if prev != part.last_hash {
                return Err(Scan::Failed(StorageError(format!(
                    "object store: partition {p}: broken link at offset {first}: bundles/{p:05}/{name} does not follow offset {} (its previous hash {:016x}, the PLog's {:016x})",
                    first - 1,
                    prev,
                    part.last_hash
                ))));
            }
            for &key in events.range((*first, None)..=(*last, Some(u64::MAX))) {
                self.leftover_under_bundle(p, key, name)?;
            }
            part.next = last + 1;
            part.last_hash = last_hash;
            part.merged_to = *last;
            part.merged_hash = part.last_hash;
            used += 1;
        }
        let walked = self.walk_tail(p, &events, &mut part)?;
        let start = (part.merged_to + 1, None);
        let mut after: Vec<String> = Vec::new();
        for &key in events.range(start..).filter(|k| !walked.contains(k)) {
            if key.0 < part.next {
                // Listed, not on the walk, inside what the walk holds.
                let (holder, last) =
                    (part.tail.range(..=key.0).next_back()).map_or((0, 0), |(a, b)| (*a, *b));
                return Err(Scan::Failed(StorageError(format!(
                    "object store: partition {p}: two objects hold offset {}: {} holds {holder}..={last}, and {} starts at {}",
                    key.0,
                    event_object_at(p, part.key(holder)),
                    event_object_at(p, key),
                    key.0
                ))));
            }
            if after.len() < 3 {
                after.push(event_object_at(p, key));
            }
        }
        after.extend(
            bundles[used..]
                .iter()
                .take(3)
                .map(|(_, _, n)| format!("bundles/{p:05}/{n}")),
        );
        if !after.is_empty() {
            return Err(Scan::Vanished(StorageError(format!(
                "object store: partition {p}: hole at offset {}: neither {} nor a bundle holds it, yet objects exist after it: {}",
                part.next,
                event_object_at(p, (part.next, part.next_after)),
                after.join(", ")
            ))));
        }
        Ok(part)
    }

    /// The event object `key`, listed under the bundle `name` (which holds its offsets): the
    /// same events are an interrupted merge's leftover, other events a stale writer's
    /// unacknowledged object, and a takeover mark one the merger had not deleted yet; each is
    /// deleted with write access, kept by a reader.
    fn leftover_under_bundle(&self, p: PartitionId, key: EventKey, name: &str) -> Result<(), Scan> {
        if !self.delete_delay.is_zero() {
            // A store shared by many hosts (S3) keeps merged objects for a while, so many are
            // found here: they go after the delete delay, unread (whatever they hold, the
            // bundle over them was written first and holds the PLog's events).
            if self.access == Access::Write {
                let added = self.delete_later(vec![event_object_at(p, key)])?;
                self.stats
                    .leftovers_removed
                    .fetch_add(added, Ordering::Relaxed);
            }
            return Ok(());
        }
        let first = key.0;
        let b = self
            .get_bundle(p, first)?
            .ok_or_else(|| StorageError(format!("object store: bundles/{p:05}/{name} vanished")))?;
        let Some(e) = self.get_object(p, key)? else {
            return Ok(());
        };
        if e.last() > b.last() {
            // Every writer cuts its objects at bundle boundaries: one that crosses is foreign.
            return Err(Scan::Failed(StorageError(format!(
                "object store: partition {p}: {} (writer {}) holds offsets {}..={}, across the end of bundles/{p:05}/{name}",
                event_object_at(p, key),
                e.writer,
                e.first,
                e.last()
            ))));
        }
        let at = (first - b.first) as usize;
        let same =
            (0..e.len()).all(|i| e.hashes[i] == b.hashes[at + i] && e.event(i) == b.event(at + i));
        if !same {
            // Other bytes under a bundle: a stale writer re-created the name after the merger
            // deleted it and stopped (killed, or its answer lost) before it saw the bundle and
            // took its object back. The bundle existed before that create, so the append
            // holding it was never acknowledged.
            tracing::warn!(
                "object store: partition {p}: {} (writer {}) differs from bundles/{p:05}/{name}, which was written before it: a stale writer's unacknowledged object{}",
                event_object_at(p, key),
                e.writer,
                if self.access == Access::Write {
                    "; removed"
                } else {
                    "; ignored"
                }
            );
        }
        if self.access == Access::Write {
            self.remove_leftover(p, key)?;
        }
        Ok(())
    }

    /// Follows the event objects from `part.next` on, each named by the offset after the one
    /// before it (after a takeover mark, by the mark's epoch too), verifying links; stops at
    /// the first name no object has (the end, or a hole the caller reports). Returns the
    /// names it followed.
    ///
    /// The objects `events` lists are read a chunk at a time. A listing is not a snapshot (a
    /// directory's, or an S3 listing's pages): one that ran while a writer appended can miss
    /// an object and show the next one. Where the listing skips the name the walk is at while
    /// it lists later ones, that object is read by its name, so a writer's tail never looks
    /// like a hole; only an object that is not there stops the walk.
    fn walk_tail(
        &self, p: PartitionId, events: &BTreeSet<EventKey>, part: &mut Part,
    ) -> Result<BTreeSet<EventKey>, Scan> {
        let keys: Vec<EventKey> = events.range((part.next, None)..).copied().collect();
        let mut walked = BTreeSet::new();
        for chunk in keys.chunks(SCAN_CHUNK) {
            // Read a chunk at once (from a few threads); only those named by the walk count.
            let mut read: HashMap<EventKey, Option<EventRange>> = chunk
                .iter()
                .copied()
                .zip(self.get_objects(p, chunk, false)?)
                .collect();
            let last_listed = *chunk.last().unwrap_or(&(0, None));
            loop {
                let key = (part.next, part.next_after);
                if key > last_listed {
                    // Past this chunk: the next one, or the end of the listing.
                    break;
                }
                let obj = match read.remove(&key) {
                    Some(Some(e)) => e,
                    Some(None) => {
                        return Err(Scan::Vanished(StorageError(format!(
                            "object store: {} vanished",
                            event_object_at(p, key)
                        ))));
                    }
                    // The listing skipped it: read it by name.
                    None => match self.get_object(p, key)? {
                        Some(e) => e,
                        None => return Ok(walked),
                    },
                };
                self.follow(p, key, obj, part)?;
                walked.insert(key);
            }
        }
        Ok(walked)
    }

    /// The event object named `key` (at the walk's next offset) verified and taken into
    /// `part`: its link to the PLog before it, and its events' checksums; a takeover mark
    /// names the next object and holds the tail for its epoch.
    fn follow(
        &self, p: PartitionId, key: EventKey, e: EventRange, part: &mut Part,
    ) -> Result<(), Scan> {
        let first = key.0;
        if let Some(o) = e.damaged {
            // A writer refuses it before it appends anything; a reader goes on, so that
            // `check` names every damaged event.
            if self.access == Access::Write {
                return Err(Scan::Failed(damaged(p, o, first)));
            }
            part.damaged = part.damaged.or(Some((o, first)));
        }
        if e.prev != part.last_hash {
            return Err(Scan::Failed(StorageError(format!(
                "object store: partition {p}: broken link at offset {first}: {} (writer {}) does not follow offset {} (its previous hash {:016x}, the PLog's {:016x})",
                event_object_at(p, key),
                e.writer,
                first - 1,
                e.prev,
                part.last_hash
            ))));
        }
        if e.is_mark() {
            // `get_object` refuses a mark without an epoch.
            part.marks.insert(key);
            part.next_after = writer_epoch(&e.writer);
            part.tail_epoch = part.next_after;
            return Ok(());
        }
        if let Some(after) = key.1 {
            part.renamed.insert(first, after);
        }
        part.next_after = None;
        part.tail.insert(first, e.last());
        part.next = e.last() + 1;
        part.last_hash = e.last_hash();
        part.tail_epoch = writer_epoch(&e.writer);
        Ok(())
    }
}
