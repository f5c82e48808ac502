//! The scan of a partition's objects: what a handle opens on and rescans when another writer
//! may have appended. It lists the partition, follows bundles from offset 1 until a hole, then
//! one-event objects, verifying every link, and reports a hole with objects after it, a broken
//! link or two different objects for one offset with offsets and object names. With write
//! access it removes the leftovers of an interrupted merge (and a stale writer's objects under
//! a bundle).

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
use crate::store::objects::shared::{Access, Part, Shared, os_err};
use crate::store::storage::{PartitionId, StorageError};

/// Why a scan stopped.
enum Scan {
    /// An object listed was gone when read (merged meanwhile): scan again.
    Vanished(StorageError),
    /// Anything else: a hole, a broken link, a conflict, or the object store's failure.
    Failed(StorageError),
}

impl From<StorageError> for Scan {
    fn from(e: StorageError) -> Self {
        Self::Failed(e)
    }
}

/// The one-event object at `o` is damaged: its event fails its checksum.
pub(super) fn damaged(p: PartitionId, o: PLogOffset) -> StorageError {
    StorageError(format!(
        "object store: partition {p}: event at offset {o} fails its checksum ({} is damaged)",
        event_object(p, o)
    ))
}

/// Scans of a partition tried when objects vanish under them.
const SCAN_TRIES: u32 = 3;

impl Shared {
    /// Deletes the one-event object at `o` that a bundle also holds, counting it as a
    /// leftover removed. One already gone is fine and not counted: a merger (this handle's
    /// thread, or another host's) deleted it first.
    fn remove_leftover(&self, p: PartitionId, o: PLogOffset) -> Result<(), StorageError> {
        let name = event_object(p, o);
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
    /// one-event objects, verifying every link. With write access, one-event objects that a
    /// bundle also holds are deleted: with the same bytes an interrupted merge left them, with
    /// other bytes a stale writer did (never acknowledged: the bundle was there first). A hole
    /// with objects after it and a broken link are errors.
    pub(super) fn scan(&self, p: PartitionId) -> Result<Part, StorageError> {
        // A merger (this handle's or another host's) may bundle and delete objects between
        // the listing and the reads: the scan then starts again, a few times at most.
        let mut tries = 0;
        loop {
            match self.scan_once(p) {
                Ok(part) => return Ok(part),
                Err(Scan::Vanished(_)) if tries < SCAN_TRIES => tries += 1,
                Err(Scan::Vanished(e) | Scan::Failed(e)) => return Err(e),
            }
        }
    }

    /// One pass of [`scan`](Self::scan).
    fn scan_once(&self, p: PartitionId) -> Result<Part, Scan> {
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
            // Events the bundle also holds: leftovers of an interrupted merge.
            for &o in events.range(first..=last) {
                let b = self.get_bundle(p, o)?.ok_or_else(|| {
                    StorageError(format!("object store: bundles/{p:05}/{name} vanished"))
                })?;
                let one = self.get_one(p, o)?;
                let i = (o - first) as usize;
                match one {
                    Some(e)
                        if e.hash == b.hashes[i]
                            && e.event == b.event(i)
                            && self.access == Access::Write =>
                    {
                        self.remove_leftover(p, o)?;
                    }
                    // Read-only: the leftover stays where it is.
                    Some(e) if e.hash == b.hashes[i] && e.event == b.event(i) => {}
                    // Other bytes under a bundle: a stale writer re-created the name after the
                    // merger deleted it and stopped (killed, or its answer lost) before it saw
                    // the bundle and took its object back. The bundle existed before that
                    // create, so the append holding it was never acknowledged.
                    Some(e) => {
                        tracing::warn!(
                            "object store: partition {p}: {} (writer {}) differs from bundles/{p:05}/{name}, which was written before it: a stale writer's unacknowledged object{}",
                            event_object(p, o),
                            e.writer,
                            if self.access == Access::Write {
                                "; removed"
                            } else {
                                "; ignored"
                            }
                        );
                        if self.access == Access::Write {
                            self.remove_leftover(p, o)?;
                        }
                    }
                    None => {}
                }
            }
            part.next = last + 1;
            part.last_hash = last_hash;
            part.merged_to = *last;
            part.merged_hash = part.last_hash;
            used += 1;
        }
        let tail: Vec<PLogOffset> = events.range(part.next..).copied().collect();
        for o in tail {
            if o != part.next {
                break;
            }
            let e = self.get_one(p, o)?.ok_or_else(|| {
                Scan::Vanished(StorageError(format!(
                    "object store: {} vanished",
                    event_object(p, o)
                )))
            })?;
            if e.damaged {
                // A writer refuses it before it appends anything; a reader goes on, so that
                // `check` names every damaged event.
                if self.access == Access::Write {
                    return Err(Scan::Failed(damaged(p, o)));
                }
                part.damaged = part.damaged.or(Some(o));
            }
            if e.prev != part.last_hash {
                return Err(Scan::Failed(StorageError(format!(
                    "object store: partition {p}: broken link at offset {o}: {} (writer {}) does not follow offset {} (its previous hash {:016x}, the PLog's {:016x})",
                    event_object(p, o),
                    e.writer,
                    o - 1,
                    e.prev,
                    part.last_hash
                ))));
            }
            part.next = o + 1;
            part.last_hash = e.hash;
        }
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
            return Err(Scan::Failed(StorageError(format!(
                "object store: partition {p}: hole at offset {}: neither {} nor a bundle holds it, yet objects exist after it: {}",
                part.next,
                event_object(p, part.next),
                after.join(", ")
            ))));
        }
        Ok(part)
    }
}
