//! The PLog on object storage: one object per append part (the events of a batch up to the
//! next bundle boundary), fenced by a conditional put, merged into fixed-size bundles by a
//! merger thread. See `docs/OBJECTS.md`; the objects' names are
//! in [`names`](super::names), the event objects in [`object`](super::object), the hash chain
//! in [`chain`](super::chain), the bundle format in [`bundle`](super::bundle).
//!
//! - **The fence.** A part's object is created with `PutMode::Create` under a name that depends
//!   on its first offset alone, so of two writers that believe the PLog ends at one offset
//!   exactly one succeeds (on the local file system a hard link, which is atomic); objects are
//!   immutable and every writer continues from the end of the last one, so no writer names an
//!   offset inside another's object. A create that reports "already exists" is compared with
//!   the stored object: the same bytes are this writer's own earlier attempt (a lost
//!   response), anything else is a lost race (`WrongOffset`). After its creates, an append
//!   checks that no bundle holds its offsets (the merger writes a bundle before it deletes
//!   the events it holds, so a writer that re-created a merged offset sees the bundle then),
//!   and takes its objects back if one does (when the bundle holds its very events, its own
//!   earlier attempt merged by another host, it keeps those past the bundles, which others
//!   may have continued from). The parts of a batch are created in order, each
//!   after the one before it answered, so a failure leaves a dense prefix.
//! - **Links.** Each event's hash covers its offset, the previous event's hash and its bytes
//!   (64 bits, [`event_hash`]): a chain that reads, the merger and the start-up scan verify. A
//!   hole, a broken link or two different objects for one offset is reported with offsets and
//!   object names, never skipped.
//! - **Durable before acknowledged.** On the local file system the objects of an append (one,
//!   or two when it crosses a bundle boundary) are written, then each file is synced and their
//!   directory once, before the append returns.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use sequencer::PLogOffset;

use crate::store::objects::bundle;
use crate::store::objects::chain::event_hash;
use crate::store::objects::merger::{MergerThread, merge_pause};
use crate::store::objects::names::{
    BUNDLES, EventKey, bundle_object, event_object_at, partition_dir,
};
use crate::store::objects::object::{ObjectFormat, encode_mark, encode_one, encode_range};
use crate::store::objects::range::EventRange;
use crate::store::objects::scan::damaged;
use crate::store::objects::shared::{
    Access, CreateError, Created, ObjectStats, Part, Shared, lock, os_err, writer_at,
};
use crate::store::storage::{AppendError, AppendLimits, EventBatch, PartitionId, StorageError};

/// Events per bundle unless the store was created with another count.
pub const DEFAULT_BUNDLE_EVENTS: u64 = 1024;

/// The encoded events an event object holds at most, unless one event alone is larger (it is
/// then an object of its own): a batch larger than that is cut into parts.
pub const MAX_OBJECT_BYTES: usize = 16 * 1024 * 1024;

/// How long the merger waits after writing a bundle before it deletes the event objects it
/// holds, when the PLog is shared by many hosts (S3): a writer's create *answered* within half
/// of it after the writer saw its tail cannot have re-created a deleted name, so an append
/// skips its look for a bundle (a request per append). A local directory has one host (its
/// view's lock) and deletes at once.
pub const REMOTE_DELETE_DELAY: Duration = Duration::from_secs(30);

/// How a handle on an object PLog works ([`ObjectPlog::open_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlogOptions {
    /// Events per bundle (every handle of one PLog must use the same).
    pub bundle_events: u64,
    /// Whether it writes.
    pub access: Access,
    /// The format of the event objects its appends create.
    pub format: ObjectFormat,
    /// How long after writing a bundle its merger deletes the objects the bundle holds; every
    /// handle of one PLog must use the same (see [`REMOTE_DELETE_DELAY`]).
    pub delete_delay: Duration,
}

impl PlogOptions {
    /// Bundles of `bundle_events`, `access`, the current format, deletes at once.
    pub fn new(bundle_events: u64, access: Access) -> Self {
        Self {
            bundle_events,
            access,
            format: ObjectFormat::Ranges,
            delete_delay: Duration::ZERO,
        }
    }
}

/// A PLog of many partitions on object storage. Clones share the handle and its merger
/// thread, which stops when the last clone is dropped.
#[derive(Clone)]
pub struct ObjectPlog {
    shared: Arc<Shared>,
    _merger: Arc<MergerThread>,
}

impl ObjectPlog {
    /// Opens the PLog under the local directory `root` (which must exist): lists and scans
    /// every partition (bundles until a hole, then event objects; verifying links), and
    /// with [`Access::Write`] removes the leftovers of an interrupted merge and starts the
    /// merger. A hole, a broken link or two different objects for one offset is an error
    /// naming them.
    pub fn open_local(
        root: &Path, bundle_events: u64, access: Access,
    ) -> Result<Self, StorageError> {
        Self::open_local_with(root, PlogOptions::new(bundle_events, access))
    }

    /// [`open_local`](Self::open_local) with `options`.
    pub fn open_local_with(root: &Path, options: PlogOptions) -> Result<Self, StorageError> {
        let fs = LocalFileSystem::new_with_prefix(root)
            .map_err(|e| os_err(format!("{}", root.display()), e))?;
        Self::open_with(Arc::new(fs), Some(root.to_path_buf()), options)
    }

    /// Opens the PLog on any object store (see [`open_local`](Self::open_local)); `local` is
    /// the root directory when the objects are local files, so that appends sync them.
    /// Appends write the current format ([`ObjectFormat::Ranges`]), and merged objects are
    /// deleted at once.
    pub fn open(
        objects: Arc<dyn ObjectStore>, local: Option<PathBuf>, bundle_events: u64, access: Access,
    ) -> Result<Self, StorageError> {
        Self::open_with(objects, local, PlogOptions::new(bundle_events, access))
    }

    /// [`open`](Self::open) with `options`: the format its appends write, and the delay before
    /// merged objects are deleted.
    pub fn open_with(
        objects: Arc<dyn ObjectStore>, local: Option<PathBuf>, options: PlogOptions,
    ) -> Result<Self, StorageError> {
        let PlogOptions {
            bundle_events,
            access,
            format,
            delete_delay,
        } = options;
        let writer = format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let shared = Arc::new(Shared {
            objects,
            local,
            bundle_events: bundle_events.max(2),
            writer,
            format,
            delete_delay,
            pending_deletes: Mutex::default(),
            access,
            parts: Mutex::new(HashMap::new()),
            stats: ObjectStats::default(),
            merge_tx: Mutex::new(None),
            merging: Mutex::new(()),
            last_bundle: Mutex::new(HashMap::new()),
            merge_pause: merge_pause(),
        });
        for p in shared.list_partitions()? {
            let part = shared.scan(p)?;
            lock(&shared.parts).insert(p, Arc::new(Mutex::new(part)));
        }
        Ok(Self {
            _merger: Arc::new(MergerThread::start(&shared, access == Access::Write)),
            shared,
        })
    }

    /// The first event of an event object that fails its checksum that the scan at open met
    /// (a handle opened for writing refuses such a store), as the error a writer meets.
    pub fn damaged(&self) -> Option<StorageError> {
        let parts = lock(&self.shared.parts);
        let mut found: Vec<(PartitionId, (PLogOffset, PLogOffset))> = parts
            .iter()
            .filter_map(|(&p, part)| lock(part).damaged.map(|d| (p, d)))
            .collect();
        found.sort_unstable();
        found.first().map(|&(p, (o, first))| damaged(p, o, first))
    }

    /// What this handle has done.
    pub fn stats(&self) -> &ObjectStats {
        &self.shared.stats
    }

    /// Events per bundle.
    pub fn bundle_events(&self) -> u64 {
        self.shared.bundle_events
    }

    /// Partitions that have objects, ascending.
    pub fn partitions(&self) -> Vec<PartitionId> {
        let mut v: Vec<_> = lock(&self.shared.parts).keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// The next offset of a partition's PLog (1 when empty) and the last offset in bundles.
    pub fn bounds(&self, partition: PartitionId) -> (PLogOffset, PLogOffset) {
        let part = self.shared.part(partition);
        let st = lock(&part);
        (st.next, st.merged_to)
    }

    /// The first error the merger met, if any (it then stops merging that partition).
    pub fn merge_error(&self) -> Option<String> {
        let parts: Vec<_> = lock(&self.shared.parts).values().cloned().collect();
        parts.iter().find_map(|p| lock(p).merge_error.clone())
    }

    /// Bundles the merger still owes: complete bundle-sized ranges of event objects not yet
    /// merged, over every partition whose merging has not stopped on an error.
    pub fn merge_backlog(&self) -> u64 {
        let parts: Vec<_> = lock(&self.shared.parts).values().cloned().collect();
        parts
            .iter()
            .map(|p| {
                let st = lock(p);
                match st.merge_error {
                    Some(_) => 0,
                    None => st.next.saturating_sub(st.merged_to + 1) / self.shared.bundle_events,
                }
            })
            .sum()
    }

    /// A record every host of this PLog shares (its numbering layout), as the object `name`
    /// beside the partitions' objects: created holding `bytes` if absent (create-if-absent,
    /// so of two hosts recording at once one wins); returns what it holds then, the winner's
    /// bytes.
    pub fn record_shared(&self, name: &str, bytes: Vec<u8>) -> Result<Vec<u8>, StorageError> {
        match self.shared.create(name, &bytes) {
            Ok(_) => Ok(bytes),
            Err(CreateError::Taken) => self.shared.get(name)?.ok_or_else(|| {
                StorageError(format!(
                    "object store: {name} was there when created, and gone when read"
                ))
            }),
            Err(CreateError::Storage(e)) => Err(e),
        }
    }

    /// Merges every complete bundle-sized range now (the merger thread does so in the
    /// background); returns how many bundles it wrote.
    pub fn merge_now(&self) -> Result<u64, StorageError> {
        let mut written = 0;
        for p in self.partitions() {
            written += self.shared.merge_ready(p).map_err(StorageError::from)?;
        }
        Ok(written)
    }

    /// The most one object of an append holds: the events up to the next bundle boundary
    /// (an object never crosses one, so the merger bundles whole objects), one in format 1.
    pub fn append_limits(&self) -> AppendLimits {
        AppendLimits {
            max_events: match self.shared.format {
                ObjectFormat::OneEvent => 1,
                ObjectFormat::Ranges => self.shared.bundle_events as usize,
            },
            max_bytes: usize::MAX,
        }
    }

    /// Appends `batch` (events at consecutive offsets from `batch.first()`): one object per
    /// part (the batch cut at bundle boundaries and at [`MAX_OBJECT_BYTES`]), in order, each
    /// created only if absent, then synced: returns once every event is durable. Refused with
    /// `WrongOffset` when the batch does not start at the PLog's next offset or another writer
    /// holds a part's first offset; the parts before that one are then durable (a dense
    /// prefix), none after it are written. Refused too when a bundle turns out to hold offsets
    /// it wrote: its objects are taken back, unless the bundle holds these very events (an
    /// earlier attempt of it that landed), whose continuation past the bundles stays durable.
    pub fn append(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.append_under(partition, batch, None)
    }

    /// [`append`](Self::append) by the owner of the partition at `epoch` (`None`: no owners),
    /// recorded in each object it creates. Refused with `NotOwner` when the PLog's tail, as
    /// this handle knows it (a rescan included: after a lost race, or a batch that does not
    /// start at the known end), was appended under a higher epoch: a successor has written,
    /// so this owner is stale and writes nothing more. The offset fence stays the last line.
    pub fn append_under(
        &self, partition: PartitionId, batch: &EventBatch, epoch: Option<u64>,
    ) -> Result<(), AppendError> {
        if batch.is_empty() {
            return Ok(());
        }
        let sh = &self.shared;
        refuse_read_only(sh)?;
        let part = sh.part(partition);
        let mut st = lock(&part);
        if batch.first() != st.next {
            // Another writer may have appended: look again before refusing.
            sh.rescan(partition, &mut st)?;
            superseded(partition, &st, epoch)?;
            if batch.first() != st.next {
                sh.stats.fenced.fetch_add(1, Ordering::Relaxed);
                return Err(AppendError::WrongOffset {
                    expected: st.next,
                    offered: batch.first(),
                });
            }
        }
        superseded(partition, &st, epoch)?;
        sh.ensure_dirs(partition)?;
        let created = self.create_objects(partition, batch, &st, epoch);
        // What was written is kept (a dense prefix) once synced: each object, then the
        // directory once.
        if let Err(e) = sh.sync_events(partition, &created.keys) {
            st.in_doubt = true;
            return Err(e.into());
        }
        for (obj, key) in created.written.iter().zip(&created.keys) {
            if let Some(after) = key.1 {
                st.renamed.insert(obj.first, after);
            }
            st.next_after = None;
            st.tail.insert(obj.first, obj.last());
            st.next = obj.last() + 1;
            st.last_hash = obj.last_hash();
            st.tail_epoch = epoch;
            st.cache(obj.clone());
        }
        st.tail_seen = created.seen;
        self.refuse_if_bundled(partition, &mut st, &created)?;
        sh.stats
            .events_written
            .fetch_add(st.next - batch.first(), Ordering::Relaxed);
        sh.stats
            .objects_written
            .fetch_add(created.written.len() as u64, Ordering::Relaxed);
        match created.failed {
            Some((offered, CreateError::Taken)) => {
                sh.stats.fenced.fetch_add(1, Ordering::Relaxed);
                sh.rescan(partition, &mut st)?;
                superseded(partition, &st, epoch)?;
                return Err(AppendError::WrongOffset {
                    expected: st.next,
                    offered,
                });
            }
            Some((_, CreateError::Storage(e))) => {
                // The failed create may have landed: reads look past the end until settled.
                st.in_doubt = true;
                st.tail_seen = None;
                return Err(AppendError::Storage(e));
            }
            None => {}
        }
        st.in_doubt = false;
        let crossed = (batch.next() - 1) / sh.bundle_events
            > (batch.first() - 1) / sh.bundle_events
            || (batch.next() - 1).is_multiple_of(sh.bundle_events);
        drop(st);
        sh.stats.appends.fetch_add(1, Ordering::Relaxed);
        if crossed && let Some(tx) = lock(&sh.merge_tx).as_ref() {
            let _ = tx.send(partition);
        }
        Ok(())
    }

    /// Creates the objects of `batch` after the tail `st` knows, in order, up to the first
    /// create that fails.
    fn create_objects(
        &self, partition: PartitionId, batch: &EventBatch, st: &Part, epoch: Option<u64>,
    ) -> Objects {
        let sh = &self.shared;
        let writer = writer_at(&sh.writer, epoch);
        let events: Vec<&[u8]> = batch.whole().iter().map(|(_, e)| e).collect();
        let mut prev = st.last_hash;
        let mut out = Objects {
            written: Vec::new(),
            keys: Vec::new(),
            failed: None,
            fresh: !sh.delete_delay.is_zero(),
            seen: st.tail_seen,
        };
        let limits = self.append_limits();
        for range in object_parts(batch.first(), &events, sh.bundle_events, limits) {
            let first = batch.first() + range.start as u64;
            let obj = Arc::new(match sh.format {
                ObjectFormat::OneEvent => encode_one(first, prev, &writer, events[range.start]),
                ObjectFormat::Ranges => encode_range(first, prev, &writer, &events[range]),
            });
            // The first object follows the takeover mark at the PLog's end, if one is there.
            let key = (first, st.next_after.filter(|_| first == st.next));
            let sent = Instant::now();
            let created = sh.create(&event_object_at(partition, key), obj.bytes());
            // The object landed before its answer came, however long the request took (a slow
            // network, retries after timeouts): timed from when it was sent, a create that
            // landed after a merger deleted the name would pass for fresh.
            out.fresh &= out.seen.is_some_and(|t| t.elapsed() <= sh.delete_delay / 2);
            match created {
                Ok(created) => {
                    // A create found to be its own earlier attempt landed at an unknown time.
                    out.seen = (created == Created::Now).then_some(sent);
                    prev = obj.last_hash();
                    out.written.push(obj);
                    out.keys.push(key);
                }
                Err(e) => {
                    out.failed = Some((first, e));
                    break;
                }
            }
        }
        out
    }

    /// Refuses the append whose objects are `created` if a bundle holds offsets it wrote (a
    /// merger, of this or another host, writes a bundle before it deletes the events it holds:
    /// an offset found in a bundle now was taken before this append created it), taking its
    /// objects back; unless every create was fresh, when no merger can have deleted the name.
    fn refuse_if_bundled(
        &self, partition: PartitionId, st: &mut Part, created: &Objects,
    ) -> Result<(), AppendError> {
        let sh = &self.shared;
        let written = &created.written;
        let (Some(a), Some(b), false) = (written.first(), written.last(), created.fresh) else {
            return Ok(());
        };
        let taken = match sh.bundled_among(partition, a.first, b.last() - a.first + 1) {
            Ok(None) => return Ok(()),
            Ok(Some(taken)) => taken,
            Err(e) => {
                st.in_doubt = true;
                return Err(e.into());
            }
        };
        let mine: Vec<&Arc<EventRange>> = written.iter().filter(|o| o.last() >= taken).collect();
        let under = match bundles_hold(sh, partition, &mine) {
            Ok(under) => under,
            Err(e) => {
                st.in_doubt = true;
                return Err(e.into());
            }
        };
        let names = |objects: &[&Arc<EventRange>]| -> Vec<String> {
            objects
                .iter()
                .map(|o| event_object_at(partition, st.key(o.first)))
                .collect()
        };
        match under {
            // Other events than the bundles': a stale writer's, linked to nothing the PLog
            // holds (no one can have continued from them): all taken back.
            None => {
                let _ = sh.delete_now(&names(&mine));
            }
            // The bundles hold these very events: this writer's earlier attempt landed (its
            // answer lost), another host continued from it and merged it (or wrote the same
            // events). Those past the bundles continue the PLog, and others may have appended
            // after them: they stay (the append is refused all the same, and the replay that
            // follows finds them). Those under the bundles are leftovers, deleted as a
            // merge's are: not before the delete delay, which the appends that skip their look
            // rest on.
            Some(n) => {
                let _ = sh.delete_later(names(&mine[..n]));
            }
        }
        sh.rescan(partition, st)?;
        sh.stats.fenced.fetch_add(1, Ordering::Relaxed);
        Err(AppendError::WrongOffset {
            expected: st.next,
            offered: taken,
        })
    }

    /// Up to `max` events of a partition from `from` on, in order (encoded as
    /// [`encode_event`](crate::store::codec::encode_event) makes them), from bundles and
    /// event objects, verifying each link; fewer than `max` only at the PLog's end.
    pub fn read(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<(PLogOffset, Vec<u8>)>, StorageError> {
        let mut out = Vec::new();
        self.shared.visit(partition, from.max(1), max, |o, e| {
            out.push((o, e.to_vec()));
            Ok(())
        })?;
        Ok(out)
    }

    /// The next offset of a partition's PLog as the store holds it now, found from `from`
    /// (an offset where an object or a bundle starts, or the PLog's end: one that this
    /// handle's [`bounds`](Self::bounds) or an earlier call answered) by reading the events
    /// other handles appended since, in order, links verified; this handle's own state is
    /// left as it is (a writer learns of other writers' appends through its fence).
    pub fn end_from(
        &self, partition: PartitionId, from: PLogOffset,
    ) -> Result<PLogOffset, StorageError> {
        let mut end = from.max(1);
        let start = end;
        (self.shared).visit_with(partition, start, usize::MAX, true, |o, _| {
            end = o + 1;
            Ok(())
        })?;
        Ok(end)
    }

    /// Reads a partition's objects again (a listing and a scan, as at open): what this handle
    /// knows of it becomes what the store holds now, other handles' appends included.
    pub fn rescan(&self, partition: PartitionId) -> Result<(), StorageError> {
        let part = self.shared.part(partition);
        let mut st = lock(&part);
        self.shared.rescan(partition, &mut st)
    }

    /// Places the takeover mark of the owner at `epoch` (a successor that has just acquired
    /// the partition) at the PLog's next offset, after reading the partition's objects again:
    /// a stale owner's next create at that offset collides with it, and its rescan finds the
    /// higher epoch, so it is refused (`NotOwner`) even where nothing else is written yet. The
    /// owner's next append names its object after the mark. Nothing is written when the tail
    /// is this epoch's already; refused with `NotOwner` when a higher epoch wrote it. A stale
    /// owner that takes the offset first has its object kept (the PLog continues from it, as
    /// it always did) and the mark goes after it, a few times at most.
    pub fn place_mark(&self, partition: PartitionId, epoch: u64) -> Result<(), AppendError> {
        let sh = &self.shared;
        refuse_read_only(sh)?;
        let part = sh.part(partition);
        let mut st = lock(&part);
        sh.rescan(partition, &mut st)?;
        for _ in 0..MARK_TRIES {
            superseded(partition, &st, Some(epoch))?;
            if st.tail_epoch == Some(epoch) {
                return Ok(());
            }
            let key = (st.next, st.next_after);
            let writer = writer_at(&sh.writer, Some(epoch));
            let mark = encode_mark(st.next, st.last_hash, &writer);
            sh.ensure_dirs(partition)?;
            match sh.create(&event_object_at(partition, key), mark.bytes()) {
                Ok(_) => {
                    if let Err(e) = sh.sync_events(partition, &[key]) {
                        st.in_doubt = true;
                        return Err(e.into());
                    }
                    st.marks.insert(key);
                    st.next_after = Some(epoch);
                    st.tail_epoch = Some(epoch);
                    sh.stats.marks.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(CreateError::Taken) => sh.rescan(partition, &mut st)?,
                Err(CreateError::Storage(e)) => {
                    st.in_doubt = true;
                    return Err(AppendError::Storage(e));
                }
            }
        }
        Err(AppendError::Storage(StorageError(format!(
            "object store: partition {partition}: the takeover mark of epoch {epoch} lost its offset to another writer {MARK_TRIES} times"
        ))))
    }

    /// [`read`](Self::read), handing each event's bytes to `f` without copying them.
    pub fn visit(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
        f: impl FnMut(PLogOffset, &[u8]) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        self.shared.visit(partition, from.max(1), max, f)
    }
}

impl ObjectPlog {
    /// Writes the bundle that follows the last one of `partition` (an archive's bundles are
    /// written by `sequencer-host archive`, not merged from event objects): `events` are
    /// the events from the partition's next offset on, exactly `bundle_events` of them,
    /// encoded as every backend stores them. The bundle is created only if absent (one found
    /// with the same bytes is an earlier attempt's, and is fine; with other bytes it is an
    /// error naming it), synced, then read back and verified (every hash, and its link to the
    /// previous bundle) before the handle counts it. Returns its name.
    pub fn put_bundle(
        &self, partition: PartitionId, events: &[Vec<u8>],
    ) -> Result<String, PutBundleError> {
        let refused = |m: String| PutBundleError::Refused(StorageError(m));
        let sh = &self.shared;
        let part = sh.part(partition);
        let mut st = lock(&part);
        let (first, prev) = (st.next, st.last_hash);
        if sh.access == Access::ReadOnly
            || st.merged_to + 1 != first
            || events.len() as u64 != sh.bundle_events
        {
            return Err(refused(format!(
                "object store: partition {partition}: a bundle of {} events from offset {first} does not fit (bundles of {} events, {} offsets in bundles{})",
                events.len(),
                sh.bundle_events,
                st.merged_to,
                if sh.access == Access::ReadOnly {
                    ", opened read-only"
                } else {
                    ""
                }
            )));
        }
        let last = first + sh.bundle_events - 1;
        let mut link = prev;
        let hashed: Vec<(u64, Vec<u8>)> = (first..)
            .zip(events)
            .map(|(o, e)| {
                link = event_hash(o, link, e);
                (link, e.clone())
            })
            .collect();
        let name = bundle_object(partition, first, last);
        sh.ensure_dirs(partition).map_err(PutBundleError::Io)?;
        match sh.create(&name, &bundle::encode(first, prev, &hashed)) {
            Ok(_) => {}
            Err(CreateError::Taken) => {
                return Err(refused(format!(
                    "object store: partition {partition}: {name} exists and differs from the events {first}..={last} it should hold"
                )));
            }
            Err(CreateError::Storage(e)) => return Err(PutBundleError::Io(e)),
        }
        sh.sync_objects(
            &partition_dir(BUNDLES, partition),
            std::slice::from_ref(&name),
        )
        .map_err(PutBundleError::Io)?;
        // Read back what the store now holds (not this handle's cache) and verify it.
        let back = sh.get(&name).map_err(PutBundleError::Io)?;
        match back.and_then(bundle::decode) {
            Some(b) if b.first == first && b.prev == prev && b.last_hash() == link => {}
            _ => {
                return Err(refused(format!(
                    "object store: {name} is corrupt: read back after writing, it is not the sound bundle of offsets {first}..={last} (partition {partition})"
                )));
            }
        }
        st.merged_to = last;
        st.merged_hash = link;
        st.next = last + 1;
        st.last_hash = link;
        sh.stats.bundles_written.fetch_add(1, Ordering::Relaxed);
        Ok(name)
    }
}

/// How often a takeover mark is placed again after another writer took its offset.
const MARK_TRIES: u32 = 8;

/// Why [`ObjectPlog::put_bundle`] wrote no bundle.
#[derive(Clone, Debug, thiserror::Error)]
pub enum PutBundleError {
    /// It cannot be written and trying again will not help: it does not follow the last
    /// bundle, another bundle with other bytes holds its name, or it read back corrupt.
    #[error("{0}")]
    Refused(StorageError),
    /// The object store failed (it may clear by itself).
    #[error("{0}")]
    Io(StorageError),
}

/// The batch of `events` from `first` on cut, in order, into the parts an append writes as one
/// object each: at every bundle boundary (an object lies inside one bundle's range), and at
/// `limits` (an event larger than `MAX_OBJECT_BYTES` is a part of its own).
fn object_parts(
    first: PLogOffset, events: &[&[u8]], bundle_events: u64, limits: AppendLimits,
) -> Vec<std::ops::Range<usize>> {
    let max_bytes = limits.max_bytes.min(MAX_OBJECT_BYTES);
    let mut parts = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, e) in events.iter().enumerate() {
        let offset = first + i as u64;
        let boundary = i > start && (offset - 1).is_multiple_of(bundle_events);
        if i > start && (boundary || i - start >= limits.max_events || bytes + e.len() > max_bytes)
        {
            parts.push(start..i);
            start = i;
            bytes = 0;
        }
        bytes += e.len();
    }
    if start < events.len() {
        parts.push(start..events.len());
    }
    parts
}

/// The objects an append created, in order, and how it went.
struct Objects {
    /// The objects created (or found to be its own earlier attempts), in order.
    written: Vec<Arc<EventRange>>,
    /// Their names.
    keys: Vec<EventKey>,
    /// The first create that failed, with the offset it was for.
    failed: Option<(PLogOffset, CreateError)>,
    /// Whether each create was answered within half the delete delay of this handle seeing
    /// the tail it continues (then no merger can have deleted the name: see
    /// [`REMOTE_DELETE_DELAY`]).
    fresh: bool,
    /// When the tail was last seen: when the last create that was new was sent.
    seen: Option<Instant>,
}

/// Whether the bundles over `objects` (an append's, from the first offset a bundle holds on)
/// hold their very events, compared by the hash of each one's last event (the chain covers
/// every event before it): how many of them bundles hold if so (the objects after those are
/// the PLog's continuation), `None` if a bundle holds other events.
fn bundles_hold(
    sh: &Shared, p: PartitionId, objects: &[&Arc<EventRange>],
) -> Result<Option<usize>, StorageError> {
    let mut under = 0;
    for o in objects {
        // Bundles are written in order from offset 1: past the first missing one, none.
        let Some(b) = sh.get_bundle(p, o.first)? else {
            break;
        };
        if b.hashes.get((o.last() - b.first) as usize) != Some(&o.last_hash()) {
            return Ok(None);
        }
        under += 1;
    }
    Ok(Some(under))
}

/// Refuses a write (an append, a mark) through a handle opened read-only.
fn refuse_read_only(sh: &Shared) -> Result<(), AppendError> {
    match sh.access {
        Access::ReadOnly => Err(AppendError::Storage(StorageError(
            "object store: opened read-only".into(),
        ))),
        Access::Write => Ok(()),
    }
}

/// Refuses an append under `epoch` to a partition whose tail (`st`) a higher epoch wrote.
fn superseded(partition: PartitionId, st: &Part, epoch: Option<u64>) -> Result<(), AppendError> {
    match (epoch, st.tail_epoch) {
        (Some(mine), Some(tail)) if tail > mine => Err(AppendError::NotOwner {
            partition,
            epoch: mine,
            why: format!(
                "the PLog's tail (to offset {}) was written at epoch {tail}: a successor owns it",
                st.next - 1
            ),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` events from `first`.
    fn batch(first: PLogOffset, n: u64) -> EventBatch {
        let mut b = EventBatch::new(first);
        for o in first..first + n {
            b.push(&[sequencer::SeqValue::new(1, 1, o)], b"e");
        }
        b
    }

    #[test]
    fn a_merger_whose_range_a_rescan_found_bundled_meanwhile_takes_the_bundle_not_a_hole() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let open = || ObjectPlog::open(store.clone(), None, 4, Access::Write).expect("open");
        let (a, b) = (open(), open());
        a.append(0, &batch(1, 8)).expect("1..=8");
        a.merge_now().expect("merge");
        assert_eq!(a.bounds(0), (9, 8));
        // b, stale, is refused and rescans: its tail starts after a's bundles.
        let refused = b.append(0, &batch(1, 2));
        assert!(
            matches!(refused, Err(AppendError::WrongOffset { expected: 9, .. })),
            "{refused:?}"
        );
        assert_eq!(b.bounds(0), (9, 8));
        // b's merger read where to start (1, after no bundle) just before that rescan, and
        // reads the tail after it: the range is in no object b knows of, and a's bundle holds
        // it. (The two reads are apart in time, not in one lock: this is what the merger sees.)
        {
            let part = b.shared.part(0);
            let mut st = lock(&part);
            (st.merged_to, st.merged_hash) = (0, 0);
        }
        assert_eq!(b.merge_now().expect("a's bundles taken"), 2);
        assert_eq!(b.bounds(0), (9, 8));
        assert!(b.merge_error().is_none());
    }

    #[test]
    fn an_owner_whose_tail_a_higher_epoch_wrote_is_refused_and_writes_nothing() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let open = || ObjectPlog::open(store.clone(), None, 64, Access::Write).expect("open");
        let (stale, successor) = (open(), open());
        stale.append_under(0, &batch(1, 2), Some(5)).expect("1..=2");
        successor.rescan(0).expect("rescan");
        (successor.append_under(0, &batch(3, 2), Some(9))).expect("3..=4 at epoch 9");
        // At the offset the successor holds: the create collides, the rescan finds epoch 9.
        let refused = stale.append_under(0, &batch(3, 1), Some(5));
        assert!(
            matches!(&refused, Err(AppendError::NotOwner { epoch: 5, why, .. }) if why.contains("epoch 9")),
            "{refused:?}"
        );
        // At the free offset after it: refused too, nothing written.
        let refused = stale.append_under(0, &batch(5, 1), Some(5));
        assert!(
            matches!(refused, Err(AppendError::NotOwner { .. })),
            "{refused:?}"
        );
        assert_eq!(open().bounds(0).0, 5);
        // The owner at the higher epoch, or a handle without owners, goes on.
        (successor.append_under(0, &batch(5, 1), Some(9))).expect("5 at epoch 9");
        stale.rescan(0).expect("rescan");
        stale.append(0, &batch(6, 1)).expect("6 without an epoch");
        assert_eq!(open().bounds(0).0, 7);
    }

    #[test]
    fn a_batch_is_cut_at_bundle_boundaries_and_at_the_object_limits() {
        let small = [1u8; 10];
        let events: Vec<&[u8]> = vec![&small; 10];
        let ranges = AppendLimits {
            max_events: 4,
            max_bytes: usize::MAX,
        };
        // Offsets 3..=12, bundles of 4 (1..=4, 5..=8, 9..=12).
        assert_eq!(object_parts(3, &events, 4, ranges), vec![0..2, 2..6, 6..10]);
        // One event per object (format 1).
        let one = AppendLimits {
            max_events: 1,
            ..ranges
        };
        assert_eq!(
            object_parts(1, &events[..3], 1024, one),
            vec![0..1, 1..2, 2..3]
        );
        // Bytes: 25 per object at most, an event larger alone.
        let big = [2u8; 40];
        let mixed: Vec<&[u8]> = vec![&small, &small, &small, &big, &small];
        let bytes = AppendLimits {
            max_events: 100,
            max_bytes: 25,
        };
        assert_eq!(
            object_parts(1, &mixed, 1024, bytes),
            vec![0..2, 2..3, 3..4, 4..5]
        );
    }
}
