//! The state every clone of an [`ObjectPlog`](super::plog::ObjectPlog) shares (the object
//! store, what it knows of each partition, its counters), and the object I/O on it: reading
//! events and bundles, creating an object only if absent, and syncing local files.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::executor::block_on;
use futures::stream::{self, StreamExt};
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use sequencer::PLogOffset;

use crate::store::objects::bundle;
use crate::store::objects::names::{
    BUNDLES, EVENTS, EventKey, bundle_object, event_object_at, partition_dir,
};
use crate::store::objects::object::{self, ObjectFormat};
use crate::store::objects::range::EventRange;
use crate::store::storage::{PartitionId, StorageError};

/// What a partition's PLog holds, as this handle knows it.
#[derive(Clone, Debug, Default)]
pub(super) struct Part {
    /// The next offset to append (1 for an empty PLog).
    pub(super) next: PLogOffset,
    /// The hash of the event at `next - 1` (0 for none).
    pub(super) last_hash: u64,
    /// The last offset held by bundles (dense from 1), 0 for none.
    pub(super) merged_to: PLogOffset,
    /// The hash of the event at `merged_to`.
    pub(super) merged_hash: u64,
    /// Why the merger stopped on this partition (a hole, a broken link, a conflict).
    pub(super) merge_error: Option<String>,
    /// The event objects after `merged_to`, first offset to last: they hold
    /// `merged_to + 1..next`, each offset once.
    pub(super) tail: BTreeMap<PLogOffset, PLogOffset>,
    /// Objects of the tail this handle created, as it created them (up to [`CACHE_BYTES`]):
    /// reads and the merger take them from here instead of the store. Objects are immutable,
    /// so a copy is never stale.
    pub(super) cache: BTreeMap<PLogOffset, Arc<EventRange>>,
    /// Bytes held in `cache`.
    pub(super) cache_bytes: usize,
    /// A create whose outcome is unknown (it failed, and may have landed): reads look past
    /// `next` for an object until an append or a scan settles it.
    pub(super) in_doubt: bool,
    /// When this handle last knew that no object starts at `next` (before the create of the
    /// object ending at `next - 1` was sent, or before a scan listed the partition): within
    /// the store's delete delay of it, a name this handle creates cannot be one a merger
    /// deleted (see `Shared::delete_delay`).
    pub(super) tail_seen: Option<Instant>,
    /// The owner's epoch the object ending at `next - 1` was appended under, when it is an
    /// event object whose writer recorded one ([`writer_epoch`]): an append under a lower
    /// epoch is refused (a successor wrote the tail).
    pub(super) tail_epoch: Option<u64>,
    /// The first event the scan found damaged in an event object of the tail (it fails its
    /// checksum while its links hold), and the first offset of the object holding it.
    pub(super) damaged: Option<(PLogOffset, PLogOffset)>,
    /// The epoch of the takeover mark at `next`, if one is there: the next object is named
    /// after it (`<next>_<epoch>`).
    pub(super) next_after: Option<u64>,
    /// The event objects of the tail named after a takeover mark: first offset to the mark's
    /// epoch (every other one has the plain name).
    pub(super) renamed: BTreeMap<PLogOffset, u64>,
    /// The takeover marks after `merged_to`, by name (the merger deletes them with the objects
    /// of their bundle's range).
    pub(super) marks: BTreeSet<EventKey>,
}

/// The owner's epoch a writer id records (`"<writer> epoch=<E>"`, the id of an append made
/// under an epoch), `None` if it records none.
pub(super) fn writer_epoch(writer: &str) -> Option<u64> {
    writer.rsplit_once(" epoch=")?.1.parse().ok()
}

/// The writer id of an append by the handle `writer` under `epoch`, if any.
pub(super) fn writer_at(writer: &str, epoch: Option<u64>) -> String {
    match epoch {
        Some(epoch) => format!("{writer} epoch={epoch}"),
        None => writer.to_string(),
    }
}

/// The most bytes of event objects a partition's cache holds.
pub(super) const CACHE_BYTES: usize = 8 << 20;

impl Part {
    /// The name of the tail's object whose first offset is `first`.
    pub(super) fn key(&self, first: PLogOffset) -> EventKey {
        (first, self.renamed.get(&first).copied())
    }

    /// Keeps `obj` (just created by this handle, or read) for later reads and the merger, if
    /// there is room.
    pub(super) fn cache(&mut self, obj: Arc<EventRange>) {
        let n = obj.bytes().len();
        if self.cache_bytes + n <= CACHE_BYTES {
            self.cache_bytes += n;
            self.cache.insert(obj.first, obj);
        }
    }

    /// Forgets the objects of the tail up to `last` (merged into bundles). Never moves back: a
    /// rescan may have found later bundles while the merger merged an earlier range.
    pub(super) fn merged(&mut self, last: PLogOffset, last_hash: u64) {
        if last <= self.merged_to {
            return;
        }
        self.merged_to = last;
        self.merged_hash = last_hash;
        self.tail = self.tail.split_off(&(last + 1));
        self.renamed = self.renamed.split_off(&(last + 1));
        self.marks = self.marks.split_off(&(last + 1, None));
        let kept = self.cache.split_off(&(last + 1));
        for o in self.cache.values() {
            self.cache_bytes -= o.bytes().len();
        }
        self.cache = kept;
    }

    /// The first offsets of the objects that hold `from..` (the first may start before it), at
    /// most `max_objects` of them and no more than hold `max_events` events from `from` on;
    /// empty if no object of the tail holds `from`.
    pub(super) fn objects_from(
        &self, from: PLogOffset, max_events: u64, max_objects: usize,
    ) -> Vec<PLogOffset> {
        let Some((&start, _)) = self
            .tail
            .range(..=from)
            .next_back()
            .filter(|(_, last)| **last >= from)
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (&first, &last) in self.tail.range(start..).take(max_objects) {
            if first > from && first - from >= max_events {
                break;
            }
            out.push(first);
            if last + 1 - from >= max_events {
                break;
            }
        }
        out
    }
}

/// Counters of what the object PLog did.
#[derive(Debug, Default)]
pub struct ObjectStats {
    /// Events appended.
    pub events_written: AtomicU64,
    /// Event objects created by appends (one per append part).
    pub objects_written: AtomicU64,
    /// Appends (batches) acknowledged.
    pub appends: AtomicU64,
    /// Files and directories synced.
    pub syncs: AtomicU64,
    /// Bundles written by the merger.
    pub bundles_written: AtomicU64,
    /// Events the merger bundled (their event objects deleted).
    pub merged_events: AtomicU64,
    /// Leftovers removed (at open, or by the sweep of a shared PLog; there, some are queued
    /// for the delete delay): of an interrupted merge (identical to their bundle's), or a
    /// stale writer's object under a bundle (created after the merge deleted the name).
    pub leftovers_removed: AtomicU64,
    /// Creates that found their object there already and were found to be their own.
    pub own_retries: AtomicU64,
    /// Appends refused by the fence.
    pub fenced: AtomicU64,
    /// Takeover marks placed ([`ObjectPlog::place_mark`](super::ObjectPlog::place_mark)).
    pub marks: AtomicU64,
}

/// Whether a handle may change the store (append, merge, clean up) or only read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Appends, merges and the repair of interrupted merges.
    Write,
    /// Reads only: nothing in the store changes.
    ReadOnly,
}

/// What every clone of one handle shares.
pub(super) struct Shared {
    /// The objects.
    pub(super) objects: Arc<dyn ObjectStore>,
    /// The local root, when the objects are files (their durability is ours to ensure).
    pub(super) local: Option<PathBuf>,
    /// Events per bundle.
    pub(super) bundle_events: u64,
    /// This handle's writer id, written into each event object it creates.
    pub(super) writer: String,
    /// The format of the event objects it creates.
    pub(super) format: ObjectFormat,
    /// How long after writing a bundle the merger deletes the event objects it holds (0: at
    /// once). Every handle of one PLog deletes no sooner, so an append whose creates were
    /// answered less than half of it after this handle saw the partition's tail cannot have
    /// re-created a deleted name, and skips its look for a bundle (a request on S3).
    pub(super) delete_delay: Duration,
    /// Event objects to delete once their time comes (under bundles written before).
    pub(super) pending_deletes: Mutex<PendingDeletes>,
    /// Whether the handle may change the store.
    pub(super) access: Access,
    /// What each partition's PLog holds, as this handle knows it.
    pub(super) parts: Mutex<HashMap<PartitionId, Arc<Mutex<Part>>>>,
    /// What the handle did.
    pub(super) stats: ObjectStats,
    /// Partitions whose bundle-sized range may be complete, for the merger.
    pub(super) merge_tx: Mutex<Option<mpsc::Sender<PartitionId>>>,
    /// Held while merging: one merge at a time per handle.
    pub(super) merging: Mutex<()>,
    /// The bundle each partition read last (pages of a replay straddle bundles).
    pub(super) last_bundle: Mutex<HashMap<PartitionId, Arc<EventRange>>>,
    /// A pause after writing a bundle and again half-way through its deletes, for the kill
    /// test (`SEQUENCER_OBJECTS_MERGE_PAUSE_MS`; none by default).
    pub(super) merge_pause: Duration,
}

/// Locks `m`, going on after a panic of another holder (the data stays consistent: every
/// update is a whole assignment).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An object store operation's failure: what was done, and why it failed.
pub(super) fn os_err(what: impl std::fmt::Display, e: impl std::fmt::Display) -> StorageError {
    StorageError(format!("object store: {what}: {e}"))
}

/// Threads that sync one append's files together.
const SYNC_THREADS: usize = 4;

/// Threads reading event objects ahead from local files.
const READ_THREADS: usize = 4;

/// Threads reading event objects ahead from a remote store (S3), where each read waits on a
/// request: `check` of a PLog of 8,141 event objects on SeaweedFS took 4.8 s with 16 against
/// 6.5 s with 4 (medians of three alternating pairs, docs/BENCHMARKS.md); from local files it
/// made no difference. More threads cost only their stacks while a scan or a read runs.
const REMOTE_READ_THREADS: usize = 16;

/// Event objects waiting for their deletion (a merged range's, a leftover under a bundle).
#[derive(Default)]
pub(super) struct PendingDeletes {
    /// When each batch of names may go, in the order they were added.
    pub(super) due: std::collections::VecDeque<(Instant, Vec<String>)>,
    /// Every name waiting, so that a rescan does not add one twice.
    pub(super) names: BTreeSet<String>,
}

/// How a create wrote its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Created {
    /// Now.
    Now,
    /// In an earlier attempt whose answer was lost (found there with the same bytes).
    Earlier,
}

/// Why a create did not write.
pub(super) enum CreateError {
    /// Another writer's object is there.
    Taken,
    /// The object store failed.
    Storage(StorageError),
}

impl Shared {
    /// The state of partition `p`, created (an empty PLog) on first use.
    pub(super) fn part(&self, p: PartitionId) -> Arc<Mutex<Part>> {
        lock(&self.parts)
            .entry(p)
            .or_insert_with(|| {
                Arc::new(Mutex::new(Part {
                    next: 1,
                    ..Part::default()
                }))
            })
            .clone()
    }

    /// The object `name`, `None` if there is none.
    pub(super) fn get(&self, name: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let path = ObjPath::from(name);
        match block_on(async { self.objects.get(&path).await?.bytes().await }) {
            // A `Bytes` made from a `Vec` gives it back without a copy.
            Ok(b) => Ok(Some(Vec::from(b))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(os_err(format!("read {name}"), e)),
        }
    }

    /// The event object named `key` (holding the events from its first offset on, or a
    /// takeover mark), decoded and verified; `None` if there is none.
    pub(super) fn get_object(
        &self, p: PartitionId, key: EventKey,
    ) -> Result<Option<EventRange>, StorageError> {
        let name = event_object_at(p, key);
        let Some(bytes) = self.get(&name)? else {
            return Ok(None);
        };
        let first = key.0;
        match object::decode(bytes) {
            Some(e) if e.first == first && (!e.is_mark() || writer_epoch(&e.writer).is_some()) => {
                Ok(Some(e))
            }
            _ => Err(StorageError(format!(
                "object store: {name} is corrupt: not a sound event object from offset {first} (partition {p})"
            ))),
        }
    }

    /// The event object of events named `key`, or the one after the takeover marks there (each
    /// names the next by its epoch); `None` if there is none (the marks end the PLog).
    pub(super) fn get_events_object(
        &self, p: PartitionId, mut key: EventKey,
    ) -> Result<Option<EventRange>, StorageError> {
        loop {
            match self.get_object(p, key)? {
                Some(e) if e.is_mark() => key = (key.0, writer_epoch(&e.writer)),
                found => return Ok(found),
            }
        }
    }

    /// The event objects of events from `firsts` on of partition `p`, in order (`None` for one
    /// not found), past any takeover mark there: from the partition's cache when this handle
    /// created them, the others read from a few threads at once.
    pub(super) fn objects_for(
        &self, p: PartitionId, firsts: &[PLogOffset],
    ) -> Result<Vec<Option<Arc<EventRange>>>, StorageError> {
        let (cached, missing): (Vec<Option<Arc<EventRange>>>, Vec<EventKey>) = {
            let part = self.part(p);
            let st = lock(&part);
            let cached: Vec<_> = firsts.iter().map(|f| st.cache.get(f).cloned()).collect();
            let missing = (firsts.iter().zip(&cached))
                .filter(|(_, c)| c.is_none())
                .map(|(f, _)| st.key(*f))
                .collect();
            (cached, missing)
        };
        let mut read = self.get_objects(p, &missing, true)?.into_iter();
        Ok(cached
            .into_iter()
            .map(|c| c.or_else(|| read.next().flatten().map(Arc::new)))
            .collect())
    }

    /// Deletes the objects `names` (in requests of many names where the store takes them);
    /// one already gone is fine. Returns how many it deleted or found gone.
    pub(super) fn delete_now(&self, names: &[String]) -> Result<u64, StorageError> {
        let paths: Vec<object_store::Result<ObjPath>> = names
            .iter()
            .map(|n| Ok(ObjPath::from(n.as_str())))
            .collect();
        let done = block_on(
            self.objects
                .delete_stream(stream::iter(paths).boxed())
                .collect::<Vec<_>>(),
        );
        let mut n = 0;
        for (d, name) in done.into_iter().zip(names) {
            match d {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => n += 1,
                Err(e) => return Err(os_err(format!("delete {name}"), e)),
            }
        }
        Ok(n)
    }

    /// Deletes `names` now if the store deletes at once, else once the delete delay has passed
    /// (the merger thread does it). Returns how many it deleted, or queued that were not yet.
    pub(super) fn delete_later(&self, names: Vec<String>) -> Result<u64, StorageError> {
        if self.delete_delay.is_zero() {
            return self.delete_now(&names);
        }
        let mut pending = lock(&self.pending_deletes);
        let names: Vec<String> = names
            .into_iter()
            .filter(|n| pending.names.insert(n.clone()))
            .collect();
        let n = names.len() as u64;
        if n > 0 {
            pending
                .due
                .push_back((Instant::now() + self.delete_delay, names));
        }
        Ok(n)
    }

    /// Deletes the pending objects whose time has come; returns when the next ones are due.
    pub(super) fn delete_due(&self) -> Option<Instant> {
        loop {
            let names = {
                let mut pending = lock(&self.pending_deletes);
                match pending.due.front() {
                    Some((at, _)) if *at <= Instant::now() => {}
                    Some((at, _)) => return Some(*at),
                    None => return None,
                }
                let (_, names) = pending.due.pop_front()?;
                for n in &names {
                    pending.names.remove(n);
                }
                names
            };
            if let Err(e) = self.delete_now(&names) {
                // Left where they are: the next writable open finds them under their bundle.
                tracing::warn!("{e}; {} merged event objects left in place", names.len());
            }
        }
    }

    /// The event objects named `keys`, read from a few threads at once, in order (`None` for
    /// one not found); past the takeover marks there with `past_marks`
    /// ([`get_events_object`](Self::get_events_object)), else a mark as it is.
    pub(super) fn get_objects(
        &self, p: PartitionId, keys: &[EventKey], past_marks: bool,
    ) -> Result<Vec<Option<EventRange>>, StorageError> {
        let get = |&key: &EventKey| match past_marks {
            true => self.get_events_object(p, key),
            false => self.get_object(p, key),
        };
        if keys.len() <= 1 {
            return keys.iter().map(get).collect();
        }
        let threads = match self.local {
            Some(_) => READ_THREADS,
            None => REMOTE_READ_THREADS,
        };
        let chunk = keys.len().div_ceil(threads);
        let parts: Vec<Result<Vec<Option<EventRange>>, StorageError>> = std::thread::scope(|s| {
            let handles: Vec<_> = keys
                .chunks(chunk)
                .map(|c| s.spawn(move || c.iter().map(get).collect()))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(StorageError("a read thread panicked".into())))
                })
                .collect()
        });
        let mut out = Vec::with_capacity(keys.len());
        for part in parts {
            out.extend(part?);
        }
        Ok(out)
    }

    /// The bundle that would hold `o` (bundles are aligned on `bundle_events`).
    pub(super) fn bundle_range(&self, o: PLogOffset) -> (PLogOffset, PLogOffset) {
        let first = (o - 1) / self.bundle_events * self.bundle_events + 1;
        (first, first + self.bundle_events - 1)
    }

    /// The bundle that would hold `o`, decoded and verified (the one read last is kept per
    /// partition); `None` if there is none.
    pub(super) fn get_bundle(
        &self, p: PartitionId, o: PLogOffset,
    ) -> Result<Option<Arc<EventRange>>, StorageError> {
        let (first, last) = self.bundle_range(o);
        if let Some(b) = lock(&self.last_bundle).get(&p)
            && b.first == first
        {
            return Ok(Some(b.clone()));
        }
        let name = bundle_object(p, first, last);
        let Some(bytes) = self.get(&name)? else {
            return Ok(None);
        };
        match bundle::decode(bytes) {
            Some(b) if b.first == first && b.last() == last => {
                let b = Arc::new(b);
                lock(&self.last_bundle).insert(p, b.clone());
                Ok(Some(b))
            }
            _ => Err(StorageError(format!(
                "object store: {name} is corrupt: not a sound bundle of offsets {first}..={last} (partition {p})"
            ))),
        }
    }

    /// A bundle's link without reading its events: the hash before its first event and the
    /// hash of its last (from its header and its hash table).
    pub(super) fn bundle_link(
        &self, p: PartitionId, first: PLogOffset, last: PLogOffset, name: &str,
    ) -> Result<(u64, u64), StorageError> {
        let n = last - first + 1;
        let path = ObjPath::from(bundle_object(p, first, last));
        let ranges = block_on(self.objects.get_ranges(&path, &bundle::link_ranges(n)))
            .map_err(|e| os_err(format!("read bundles/{p:05}/{name}"), e))?;
        bundle::link(&ranges[0], &ranges[1], first, n).ok_or_else(|| {
            StorageError(format!(
                "object store: bundles/{p:05}/{name} is corrupt: not a sound bundle of offsets {first}..={last} (partition {p})"
            ))
        })
    }

    /// The first offset of `first..first + n` that a bundle holds, if any.
    pub(super) fn bundled_among(
        &self, p: PartitionId, first: PLogOffset, n: u64,
    ) -> Result<Option<PLogOffset>, StorageError> {
        let mut o = first;
        while o < first + n {
            let (bf, bl) = self.bundle_range(o);
            let name = ObjPath::from(bundle_object(p, bf, bl));
            match block_on(self.objects.head(&name)) {
                Ok(_) => return Ok(Some(o)),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(os_err(format!("look for {name}"), e)),
            }
            o = bl + 1;
        }
        Ok(None)
    }

    /// Creates `name` only if absent; an object found there with the same bytes is this
    /// writer's own earlier attempt (a create retried after a lost response).
    pub(super) fn create(&self, name: &str, bytes: &[u8]) -> Result<Created, CreateError> {
        let path = ObjPath::from(name);
        let opts = PutOptions::from(PutMode::Create);
        match block_on(
            self.objects
                .put_opts(&path, PutPayload::from(bytes.to_vec()), opts),
        ) {
            Ok(_) => Ok(Created::Now),
            Err(object_store::Error::AlreadyExists { .. }) => match self.get(name) {
                Ok(Some(found)) if found == bytes => {
                    self.stats.own_retries.fetch_add(1, Ordering::Relaxed);
                    Ok(Created::Earlier)
                }
                Ok(_) => Err(CreateError::Taken),
                Err(e) => Err(CreateError::Storage(e)),
            },
            Err(e) => Err(CreateError::Storage(os_err(format!("create {name}"), e))),
        }
    }

    /// Creates (and syncs) the directories of a partition before its first object, so that
    /// syncing an object's file and its directory is enough to make it durable.
    pub(super) fn ensure_dirs(&self, p: PartitionId) -> Result<(), StorageError> {
        let Some(root) = &self.local else {
            return Ok(());
        };
        for top in [EVENTS, BUNDLES] {
            let dir = root.join(partition_dir(top, p));
            if dir.is_dir() {
                continue;
            }
            std::fs::create_dir_all(&dir)
                .map_err(|e| os_err(format!("create {}", dir.display()), e))?;
            for d in [&dir, &root.join(top), root] {
                self.sync_path(d)?;
            }
        }
        Ok(())
    }

    /// Syncs the file or directory at `path`.
    pub(super) fn sync_path(&self, path: &Path) -> Result<(), StorageError> {
        std::fs::File::open(path)
            .and_then(|f| f.sync_all())
            .map_err(|e| os_err(format!("sync {}", path.display()), e))?;
        self.stats.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Makes the objects `names` (under `dir`) durable: each file, then the directory once.
    pub(super) fn sync_objects(&self, dir: &str, names: &[String]) -> Result<(), StorageError> {
        let Some(root) = &self.local else {
            return Ok(());
        };
        if names.is_empty() {
            return Ok(());
        }
        // Files are synced from a few threads at once: the file system commits concurrent
        // syncs together. One append's object or two are synced here.
        let paths: Vec<PathBuf> = names.iter().map(|n| root.join(n)).collect();
        if paths.len() <= 2 {
            paths.iter().try_for_each(|p| self.sync_path(p))?;
            return self.sync_path(&root.join(dir));
        }
        let chunk = paths.len().div_ceil(SYNC_THREADS).max(1);
        let results: Vec<Result<(), StorageError>> = std::thread::scope(|s| {
            let handles: Vec<_> = paths
                .chunks(chunk)
                .map(|c| s.spawn(move || c.iter().try_for_each(|p| self.sync_path(p))))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(StorageError("a sync thread panicked".into())))
                })
                .collect()
        });
        results.into_iter().collect::<Result<(), _>>()?;
        self.sync_path(&root.join(dir))
    }

    /// Makes the event objects named `keys` durable: each file, then their directory once.
    pub(super) fn sync_events(
        &self, p: PartitionId, keys: &[EventKey],
    ) -> Result<(), StorageError> {
        let names: Vec<String> = keys.iter().map(|&k| event_object_at(p, k)).collect();
        self.sync_objects(&partition_dir(EVENTS, p), &names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_of_a_range_a_rescan_already_found_bundled_leaves_the_tail_as_it_is() {
        let mut part = Part {
            next: 13,
            merged_to: 8,
            merged_hash: 88,
            tail: BTreeMap::from([(9, 12)]),
            ..Part::default()
        };
        part.merged(4, 44);
        assert_eq!(
            (part.merged_to, part.merged_hash, part.tail.len()),
            (8, 88, 1)
        );
        part.merged(12, 1212);
        assert_eq!(
            (part.merged_to, part.merged_hash, part.tail.len()),
            (12, 1212, 0)
        );
    }
}
