//! The scan of a partition's objects: what a handle opens on and rescans when another writer
//! may have appended. It lists the partition, follows bundles from offset 1 until a hole, then
//! event objects (each named by the offset after the previous one's last), verifying every
//! link and every event's checksum, and reports a hole with objects after it (once listing
//! again has not closed it), a broken link, a damaged event (to a writer) or two different
//! objects for one offset with offsets and object names. With write access it removes the leftovers of an interrupted merge (and a stale
//! writer's objects under a bundle).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use futures::executor::block_on;
use object_store::ObjectStoreExt;
use object_store::path::Path as ObjPath;
use sequencer::PLogOffset;

use crate::store::objects::names::{
    BUNDLES, EVENTS, event_object, parse_bundle_name, parse_event_name, parse_partition,
    partition_dir,
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

/// Scans of a partition tried when objects vanish under them or a listing raced a writer.
const SCAN_TRIES: u32 = 5;

/// Event objects a scan reads at once (from a few threads).
const SCAN_CHUNK: usize = 256;

impl Shared {
    /// Deletes the event object named `first` that a bundle also holds, counting it as a
    /// leftover removed. One already gone is fine and not counted: a merger (this handle's
    /// thread, or another host's) deleted it first.
    fn remove_leftover(&self, p: PartitionId, first: PLogOffset) -> Result<(), StorageError> {
        let name = event_object(p, first);
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
        let prefix = ObjPath::from(partition_dir(dir, p));
        let listed = block_on(self.objects.list_with_delimiter(Some(&prefix)))
            .map_err(|e| os_err(format!("list {prefix}/"), e))?;
        Ok(listed
            .objects
            .into_iter()
            .filter_map(|m| m.location.filename().map(str::to_string))
            .collect())
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
        // Events are listed before bundles: a merger writes a bundle before it deletes the
        // events it holds, so an event missing from this listing is in a bundle listed next.
        let mut events: BTreeSet<PLogOffset> = BTreeSet::new();
        for name in self.list_names(EVENTS, p)? {
            match parse_event_name(&name) {
                Some(o) => {
                    events.insert(o);
                }
                None => tracing::warn!("object store: ignoring events/{p:05}/{name}"),
            }
        }
        let mut bundles: Vec<(PLogOffset, PLogOffset, String)> = Vec::new();
        for name in self.list_names(BUNDLES, p)? {
            match parse_bundle_name(&name) {
                Some((first, last)) => bundles.push((first, last, name)),
                None => tracing::warn!("object store: ignoring bundles/{p:05}/{name}"),
            }
        }
        bundles.sort();
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
            for &o in events.range(first..=last) {
                self.leftover_under_bundle(p, o, name)?;
            }
            part.next = last + 1;
            part.last_hash = last_hash;
            part.merged_to = *last;
            part.merged_hash = part.last_hash;
            used += 1;
        }
        self.walk_tail(p, &events, &mut part)?;
        let mut after: Vec<String> = events
            .range(part.next..)
            .take(3)
            .map(|&o| event_object(p, o))
            .collect();
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
                event_object(p, part.next),
                after.join(", ")
            ))));
        }
        Ok(part)
    }

    /// The event object named `first`, listed under the bundle `name` (which holds its
    /// offsets): the same events are an interrupted merge's leftover, other events a stale
    /// writer's unacknowledged object; either is deleted with write access, kept by a reader.
    fn leftover_under_bundle(
        &self,
        p: PartitionId,
        first: PLogOffset,
        name: &str,
    ) -> Result<(), Scan> {
        if !self.delete_delay.is_zero() {
            // A store shared by many hosts (S3) keeps merged objects for a while, so many are
            // found here: they go after the delete delay, unread (whatever they hold, the
            // bundle over them was written first and holds the PLog's events).
            if self.access == Access::Write {
                let added = self.delete_later(vec![event_object(p, first)])?;
                self.stats
                    .leftovers_removed
                    .fetch_add(added, Ordering::Relaxed);
            }
            return Ok(());
        }
        let b = self
            .get_bundle(p, first)?
            .ok_or_else(|| StorageError(format!("object store: bundles/{p:05}/{name} vanished")))?;
        let Some(e) = self.get_object(p, first)? else {
            return Ok(());
        };
        if e.last() > b.last() {
            // Every writer cuts its objects at bundle boundaries: one that crosses is foreign.
            return Err(Scan::Failed(StorageError(format!(
                "object store: partition {p}: {} (writer {}) holds offsets {}..={}, across the end of bundles/{p:05}/{name}",
                event_object(p, first),
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
                event_object(p, first),
                e.writer,
                if self.access == Access::Write {
                    "; removed"
                } else {
                    "; ignored"
                }
            );
        }
        if self.access == Access::Write {
            self.remove_leftover(p, first)?;
        }
        Ok(())
    }

    /// Follows the event objects listed in `events` from `part.next` on, each named by the
    /// offset after the one before it, verifying links; stops at the first offset no object
    /// is named by (the end, or a hole the caller reports).
    ///
    /// A listing is not a snapshot (a directory's, or an S3 listing's pages): one that ran
    /// while a writer appended can miss an object and show the next one. Where the listing
    /// skips the offset the walk is at, that object is read by its name, so a writer's tail
    /// never looks like a hole; only an object that is not there stops the walk.
    fn walk_tail(
        &self,
        p: PartitionId,
        events: &BTreeSet<PLogOffset>,
        part: &mut Part,
    ) -> Result<(), Scan> {
        let names: Vec<PLogOffset> = events.range(part.next..).copied().collect();
        for chunk in names.chunks(SCAN_CHUNK) {
            // Read a chunk at once (from a few threads); only those named by the walk count.
            let read = self.get_objects(p, chunk)?;
            for (&first, obj) in chunk.iter().zip(read) {
                while first > part.next {
                    // The listing skipped `part.next`: read it by name.
                    match self.get_object(p, part.next)? {
                        Some(e) => self.follow(p, part.next, e, part)?,
                        None => return Ok(()),
                    }
                }
                if first < part.next {
                    let (holder, last) = part
                        .tail
                        .range(..=first)
                        .next_back()
                        .map_or((0, 0), |(a, b)| (*a, *b));
                    if holder == first {
                        // Read by name above, after the listing skipped the one before it.
                        continue;
                    }
                    return Err(Scan::Failed(StorageError(format!(
                        "object store: partition {p}: two objects hold offset {first}: {} holds {holder}..={last}, and {} starts at {first}",
                        event_object(p, holder),
                        event_object(p, first)
                    ))));
                }
                let e = obj.ok_or_else(|| {
                    Scan::Vanished(StorageError(format!(
                        "object store: {} vanished",
                        event_object(p, first)
                    )))
                })?;
                self.follow(p, first, e, part)?;
            }
        }
        Ok(())
    }

    /// The event object named `first` (at the walk's next offset) verified and taken into
    /// `part`: its link to the PLog before it, and its events' checksums.
    fn follow(
        &self,
        p: PartitionId,
        first: PLogOffset,
        e: EventRange,
        part: &mut Part,
    ) -> Result<(), Scan> {
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
                event_object(p, first),
                e.writer,
                first - 1,
                e.prev,
                part.last_hash
            ))));
        }
        part.tail.insert(first, e.last());
        part.next = e.last() + 1;
        part.last_hash = e.last_hash();
        part.tail_epoch = writer_epoch(&e.writer);
        Ok(())
    }
}
