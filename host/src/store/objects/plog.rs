//! The PLog on object storage (spec 003's log merger, adapted to a PLog): one object per
//! event, fenced by a conditional put, merged into fixed-size bundles by a merger thread.
//!
//! Objects under the store's root (see `docs/STORAGE.md`, "The PLog on object storage"):
//!
//! | object                                   | holds                                          |
//! |------------------------------------------|------------------------------------------------|
//! | `events/<partition:05>/<offset:020>`     | one event, its hash, the previous event's hash and the writer's id |
//! | `bundles/<partition:05>/<first:020>-<last:020>` | the events `first..=last`, a bundle of `bundle_events` events aligned on multiples of it |
//!
//! - **The fence.** An event is created with `PutMode::Create` under a name that depends on its
//!   offset alone, so of two writers of one offset exactly one succeeds (on the local file
//!   system a hard link, which is atomic). A create that reports "already exists" is compared
//!   with the stored object: the same bytes are this writer's own earlier attempt (a lost
//!   response), anything else is a lost race (`WrongOffset`). After its creates, an append
//!   checks that no bundle holds its offsets (the merger writes a bundle before it deletes
//!   the events it holds, so a writer that re-created a merged offset sees the bundle then),
//!   and takes its objects back if one does.
//! - **Links.** Each event's hash covers its offset, the previous event's hash and its bytes
//!   (64 bits, [`event_hash`]): a chain that reads, the merger and the start-up scan verify. A hole,
//!   a broken link or two different objects for one offset is reported with offsets and
//!   object names, never skipped.
//! - **Durable before acknowledged.** On the local file system every object of an append is
//!   written, then each file is synced and its directory once, before the append returns.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use futures::executor::block_on;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use sequencer::PLogOffset;

use crate::store::storage::{AppendError, EventBatch, PartitionId, StorageError};

/// Events per bundle unless the store was created with another count.
pub const DEFAULT_BUNDLE_EVENTS: u64 = 1024;

const EVENT_MAGIC: &[u8; 4] = b"SQE1";
const BUNDLE_MAGIC: &[u8; 4] = b"SQB1";

/// The link hash of the event at `offset` whose predecessor's hash is `prev` (0 before the
/// first event): the event's bytes mixed 8 bytes at a time into four lanes (each step a
/// bijection of its lane's state, so a change in any one word always changes the hash; four
/// lanes let the processor work on them at once), folded together with the offset, `prev` and
/// the length, then finalized as MurmurHash3's `fmix64`.
pub fn event_hash(offset: PLogOffset, prev: u64, event: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let step = |h: u64, w: u64| (h ^ w).wrapping_mul(K).rotate_left(31);
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
    let mut lanes = [
        0x2545_F491_4F6C_DD1D,
        0x9FB2_1C65_1E98_DF25,
        0xD6E8_FEB8_6659_FD93,
        0xA076_1D64_78BD_642F,
    ];
    let mut blocks = event.chunks_exact(32);
    for b in &mut blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = step(*lane, word(&b[8 * i..8 * i + 8]));
        }
    }
    let mut words = blocks.remainder().chunks_exact(8);
    for (i, w) in (&mut words).enumerate() {
        lanes[i] = step(lanes[i], word(w));
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    let mut h = step(step(step(lanes[0], offset), prev), event.len() as u64);
    h = step(h, u64::from_le_bytes(tail));
    for lane in &lanes[1..] {
        h = step(h, *lane);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The name of the one-event object of `offset` in `partition`.
pub fn event_object(partition: PartitionId, offset: PLogOffset) -> String {
    format!("events/{partition:05}/{offset:020}")
}

/// The name of the bundle holding `first..=last` of `partition`.
pub fn bundle_object(partition: PartitionId, first: PLogOffset, last: PLogOffset) -> String {
    format!("bundles/{partition:05}/{first:020}-{last:020}")
}

/// A one-event object, decoded and verified.
#[derive(Clone, Debug, PartialEq, Eq)]
struct OneEvent {
    offset: PLogOffset,
    prev: u64,
    hash: u64,
    writer: String,
    event: Vec<u8>,
}

fn encode_one(offset: PLogOffset, prev: u64, writer: &str, event: &[u8]) -> (Vec<u8>, u64) {
    let hash = event_hash(offset, prev, event);
    let w = &writer.as_bytes()[..writer.len().min(255)];
    let mut out = Vec::with_capacity(4 + 24 + 1 + w.len() + event.len());
    out.extend_from_slice(EVENT_MAGIC);
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&prev.to_le_bytes());
    out.extend_from_slice(&hash.to_le_bytes());
    out.push(w.len() as u8);
    out.extend_from_slice(w);
    out.extend_from_slice(event);
    (out, hash)
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Decodes a one-event object; `None` if it is not one or its hash does not match its bytes.
fn decode_one(b: &[u8]) -> Option<OneEvent> {
    if b.get(..4)? != EVENT_MAGIC {
        return None;
    }
    let (offset, prev, hash) = (u64_at(b, 4)?, u64_at(b, 12)?, u64_at(b, 20)?);
    let wlen = usize::from(*b.get(28)?);
    let writer = String::from_utf8_lossy(b.get(29..29 + wlen)?).into_owned();
    let event = b.get(29 + wlen..)?.to_vec();
    crate::store::codec::decode_event(&event)?;
    (event_hash(offset, prev, &event) == hash).then_some(OneEvent {
        offset,
        prev,
        hash,
        writer,
        event,
    })
}

/// A bundle, decoded and verified: its events from `first` on, each with its hash, kept as
/// the object's bytes and each event's span in them.
#[derive(Clone, Debug)]
struct Bundle {
    first: PLogOffset,
    prev: u64,
    hashes: Vec<u64>,
    bytes: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl Bundle {
    fn len(&self) -> usize {
        self.spans.len()
    }

    fn last(&self) -> PLogOffset {
        self.first + self.len() as u64 - 1
    }

    fn last_hash(&self) -> u64 {
        self.hashes.last().copied().unwrap_or(self.prev)
    }

    /// Event `i` (from `first`).
    fn event(&self, i: usize) -> &[u8] {
        let (a, b) = self.spans[i];
        &self.bytes[a..b]
    }

    /// The object of the bundle from `first` whose predecessor's hash is `prev`, holding
    /// `events` (each with its hash) in order.
    fn encode(first: PLogOffset, prev: u64, events: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let body: usize = events.iter().map(|e| e.1.len()).sum();
        let mut out = Vec::with_capacity(24 + 12 * events.len() + body);
        out.extend_from_slice(BUNDLE_MAGIC);
        out.extend_from_slice(&first.to_le_bytes());
        out.extend_from_slice(&(events.len() as u32).to_le_bytes());
        out.extend_from_slice(&prev.to_le_bytes());
        for (h, e) in events {
            out.extend_from_slice(&h.to_le_bytes());
            out.extend_from_slice(&(e.len() as u32).to_le_bytes());
        }
        for (_, e) in events {
            out.extend_from_slice(e);
        }
        out
    }

    /// Decodes a bundle and verifies every link inside it; `None` if it is not a sound one.
    fn decode(b: Vec<u8>) -> Option<Self> {
        if b.get(..4)? != BUNDLE_MAGIC {
            return None;
        }
        let first = u64_at(&b, 4)?;
        let n = u32_at(&b, 12)? as usize;
        let prev = u64_at(&b, 16)?;
        let mut at = 24 + n.checked_mul(12)?;
        let (mut hashes, mut spans) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut link = prev;
        for i in 0..n {
            let h = u64_at(&b, 24 + 12 * i)?;
            let len = u32_at(&b, 32 + 12 * i)? as usize;
            let end = at.checked_add(len)?;
            if event_hash(first + i as u64, link, b.get(at..end)?) != h {
                return None;
            }
            link = h;
            hashes.push(h);
            spans.push((at, end));
            at = end;
        }
        (at == b.len() && n > 0).then_some(Self {
            first,
            prev,
            hashes,
            bytes: b,
            spans,
        })
    }
}

/// What a partition's PLog holds, as this handle knows it.
#[derive(Clone, Debug, Default)]
struct Part {
    /// The next offset to append (1 for an empty PLog).
    next: PLogOffset,
    /// The hash of the event at `next - 1` (0 for none).
    last_hash: u64,
    /// The last offset held by bundles (dense from 1), 0 for none.
    merged_to: PLogOffset,
    /// The hash of the event at `merged_to`.
    merged_hash: u64,
    /// Why the merger stopped on this partition (a hole, a broken link, a conflict).
    merge_error: Option<String>,
}

/// Counters of what the object PLog did.
#[derive(Debug, Default)]
pub struct ObjectStats {
    /// Events appended (one object each).
    pub events_written: AtomicU64,
    /// Appends (batches) acknowledged.
    pub appends: AtomicU64,
    /// Files and directories synced.
    pub syncs: AtomicU64,
    /// Bundles written by the merger.
    pub bundles_written: AtomicU64,
    /// One-event objects the merger deleted after bundling them.
    pub merged_events: AtomicU64,
    /// Leftovers removed at open: of an interrupted merge (identical to their bundle's), or a
    /// stale writer's object under a bundle (created after the merge deleted the name).
    pub leftovers_removed: AtomicU64,
    /// Creates that found their object there already and were found to be their own.
    pub own_retries: AtomicU64,
    /// Appends refused by the fence.
    pub fenced: AtomicU64,
}

/// Whether a handle may change the store (append, merge, clean up) or only read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Appends, merges and the repair of interrupted merges.
    Write,
    /// Reads only: nothing in the store changes.
    ReadOnly,
}

struct Shared {
    objects: Arc<dyn ObjectStore>,
    /// The local root, when the objects are files (their durability is ours to ensure).
    local: Option<PathBuf>,
    bundle_events: u64,
    writer: String,
    access: Access,
    parts: Mutex<HashMap<PartitionId, Arc<Mutex<Part>>>>,
    stats: ObjectStats,
    /// Partitions whose bundle-sized range may be complete, for the merger.
    merge_tx: Mutex<Option<mpsc::Sender<PartitionId>>>,
    /// Held while merging: one merge at a time per handle.
    merging: Mutex<()>,
    /// The bundle each partition read last (pages of a replay straddle bundles).
    last_bundle: Mutex<HashMap<PartitionId, Arc<Bundle>>>,
    /// A pause after writing a bundle and again half-way through its deletes, for the kill
    /// test (`SEQUENCER_OBJECTS_MERGE_PAUSE_MS`; none by default).
    merge_pause: Duration,
}

/// A PLog of many partitions on object storage. Clones share the handle and its merger
/// thread, which stops when the last clone is dropped.
#[derive(Clone)]
pub struct ObjectPlog {
    shared: Arc<Shared>,
    _merger: Arc<MergerThread>,
}

struct MergerThread(Mutex<Option<JoinHandle<()>>>, Arc<Shared>);

impl Drop for MergerThread {
    fn drop(&mut self) {
        lock(&self.1.merge_tx).take();
        if let Some(t) = lock(&self.0).take() {
            let _ = t.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn os_err(what: impl std::fmt::Display, e: impl std::fmt::Display) -> StorageError {
    StorageError(format!("object store: {what}: {e}"))
}

/// Names a pause (milliseconds) the merger makes after writing a bundle and half-way
/// through deleting what it holds: lets the kill test land SIGKILLs inside merges.
pub const MERGE_PAUSE_ENV: &str = "SEQUENCER_OBJECTS_MERGE_PAUSE_MS";

/// How often the merger looks at every partition even when no append woke it.
const MERGE_POLL: Duration = Duration::from_millis(500);

impl ObjectPlog {
    /// Opens the PLog under the local directory `root` (which must exist): lists and scans
    /// every partition (bundles until a hole, then one-event objects; verifying links), and
    /// with [`Access::Write`] removes the leftovers of an interrupted merge and starts the
    /// merger. A hole, a broken link or two different objects for one offset is an error
    /// naming them.
    pub fn open_local(
        root: &Path,
        bundle_events: u64,
        access: Access,
    ) -> Result<Self, StorageError> {
        let fs = LocalFileSystem::new_with_prefix(root)
            .map_err(|e| os_err(format!("{}", root.display()), e))?;
        Self::open(
            Arc::new(fs),
            Some(root.to_path_buf()),
            bundle_events,
            access,
        )
    }

    /// Opens the PLog on any object store (see [`open_local`](Self::open_local)); `local` is
    /// the root directory when the objects are local files, so that appends sync them.
    pub fn open(
        objects: Arc<dyn ObjectStore>,
        local: Option<PathBuf>,
        bundle_events: u64,
        access: Access,
    ) -> Result<Self, StorageError> {
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
            access,
            parts: Mutex::new(HashMap::new()),
            stats: ObjectStats::default(),
            merge_tx: Mutex::new(None),
            merging: Mutex::new(()),
            last_bundle: Mutex::new(HashMap::new()),
            merge_pause: Duration::from_millis(
                std::env::var(MERGE_PAUSE_ENV)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            ),
        });
        for p in shared.list_partitions()? {
            let part = shared.scan(p)?;
            lock(&shared.parts).insert(p, Arc::new(Mutex::new(part)));
        }
        let mut handle = None;
        if access == Access::Write {
            let (tx, rx) = mpsc::channel();
            *lock(&shared.merge_tx) = Some(tx);
            let s = shared.clone();
            handle = std::thread::Builder::new()
                .name("plog-merger".into())
                .spawn(move || merger_loop(&s, &rx))
                .ok();
        }
        Ok(Self {
            _merger: Arc::new(MergerThread(Mutex::new(handle), shared.clone())),
            shared,
        })
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

    /// Bundles the merger still owes: complete bundle-sized ranges of one-event objects not
    /// yet merged, over every partition whose merging has not stopped on an error.
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
        match self.shared.create(name, bytes.clone()) {
            Ok(()) => Ok(bytes),
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
            written += self.shared.merge_ready(p)?;
        }
        Ok(written)
    }

    /// Appends `batch` (events at consecutive offsets from `batch.first()`), one object per
    /// event in offset order, each created only if absent, then syncs them all: returns once
    /// every event is durable. Refused with `WrongOffset` when the batch does not start at the
    /// PLog's next offset or another writer holds one of its offsets; the events before that
    /// offset are then durable (a dense prefix), none after it are written.
    pub fn append(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        if batch.is_empty() {
            return Ok(());
        }
        let sh = &self.shared;
        if sh.access == Access::ReadOnly {
            return Err(AppendError::Storage(StorageError(
                "object store: opened read-only".into(),
            )));
        }
        let part = sh.part(partition);
        let mut st = lock(&part);
        if batch.first() != st.next {
            // Another writer may have appended: look again before refusing.
            *st = Part {
                merge_error: st.merge_error.clone(),
                ..sh.scan(partition)?
            };
            if batch.first() != st.next {
                sh.stats.fenced.fetch_add(1, Ordering::Relaxed);
                return Err(AppendError::WrongOffset {
                    expected: st.next,
                    offered: batch.first(),
                });
            }
        }
        sh.ensure_dirs(partition)?;
        let mut prev = st.last_hash;
        let mut written: Vec<PLogOffset> = Vec::with_capacity(batch.len());
        let mut refused: Option<PLogOffset> = None;
        for (offset, event) in batch.whole().iter() {
            let (bytes, hash) = encode_one(offset, prev, &sh.writer, event);
            match sh.create(&event_object(partition, offset), bytes) {
                Ok(()) => written.push(offset),
                Err(e) => {
                    // Whatever was written before is kept (a dense prefix) once synced.
                    sh.sync_events(partition, &written)?;
                    if !written.is_empty() {
                        st.next = offset;
                        st.last_hash = prev;
                    }
                    match e {
                        CreateError::Taken => {
                            refused = Some(offset);
                            break;
                        }
                        CreateError::Storage(e) => return Err(AppendError::Storage(e)),
                    }
                }
            }
            prev = hash;
        }
        if refused.is_none() {
            sh.sync_events(partition, &written)?;
        }
        // A merger (of this or another host) writes a bundle before it deletes the events it
        // holds: an offset found in a bundle now was taken before this append created it.
        if let Some(first) = written.first().copied()
            && let Some(taken) = sh.bundled_among(partition, first, written.len() as u64)?
        {
            for &o in written.iter().filter(|&&o| o >= taken) {
                let _ = block_on(
                    sh.objects
                        .delete(&ObjPath::from(event_object(partition, o))),
                );
            }
            *st = Part {
                merge_error: st.merge_error.clone(),
                ..sh.scan(partition)?
            };
            sh.stats.fenced.fetch_add(1, Ordering::Relaxed);
            return Err(AppendError::WrongOffset {
                expected: st.next,
                offered: taken,
            });
        }
        if let Some(offered) = refused {
            sh.stats.fenced.fetch_add(1, Ordering::Relaxed);
            let scanned = sh.scan(partition)?;
            *st = Part {
                merge_error: st.merge_error.clone(),
                ..scanned
            };
            return Err(AppendError::WrongOffset {
                expected: st.next,
                offered,
            });
        }
        st.next = batch.next();
        st.last_hash = prev;
        let crossed = (batch.next() - 1) / sh.bundle_events
            > (batch.first() - 1) / sh.bundle_events
            || (batch.next() - 1).is_multiple_of(sh.bundle_events);
        drop(st);
        sh.stats
            .events_written
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        sh.stats.appends.fetch_add(1, Ordering::Relaxed);
        if crossed && let Some(tx) = lock(&sh.merge_tx).as_ref() {
            let _ = tx.send(partition);
        }
        Ok(())
    }

    /// Up to `max` events of a partition from `from` on, in order (encoded as
    /// [`encode_event`](crate::encode_event) makes them), from bundles and one-event objects,
    /// verifying each link; fewer than `max` only at the PLog's end.
    pub fn read(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max: usize,
    ) -> Result<Vec<(PLogOffset, Vec<u8>)>, StorageError> {
        let mut out = Vec::new();
        self.shared.visit(partition, from.max(1), max, |o, e| {
            out.push((o, e.to_vec()));
            Ok(())
        })?;
        Ok(out)
    }

    /// [`read`](Self::read), handing each event's bytes to `f` without copying them.
    pub fn visit(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max: usize,
        f: impl FnMut(PLogOffset, &[u8]) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        self.shared.visit(partition, from.max(1), max, f)
    }
}

impl ObjectPlog {
    /// Writes the bundle that follows the last one of `partition` (an archive's bundles are
    /// written by `sequencer-host archive`, not merged from one-event objects): `events` are
    /// the events from the partition's next offset on, exactly `bundle_events` of them,
    /// encoded as every backend stores them. The bundle is created only if absent (one found
    /// with the same bytes is an earlier attempt's, and is fine; with other bytes it is an
    /// error naming it), synced, then read back and verified (every hash, and its link to the
    /// previous bundle) before the handle counts it. Returns its name.
    pub fn put_bundle(
        &self,
        partition: PartitionId,
        events: &[Vec<u8>],
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
        match sh.create(&name, Bundle::encode(first, prev, &hashed)) {
            Ok(()) => {}
            Err(CreateError::Taken) => {
                return Err(refused(format!(
                    "object store: partition {partition}: {name} exists and differs from the events {first}..={last} it should hold"
                )));
            }
            Err(CreateError::Storage(e)) => return Err(PutBundleError::Io(e)),
        }
        sh.sync_objects(
            &format!("bundles/{partition:05}"),
            std::slice::from_ref(&name),
        )
        .map_err(PutBundleError::Io)?;
        // Read back what the store now holds (not this handle's cache) and verify it.
        let back = sh.get(&name).map_err(PutBundleError::Io)?;
        match back.and_then(Bundle::decode) {
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
/// Why a scan stopped.
enum Scan {
    /// An object listed was gone when read (merged meanwhile): scan again.
    Vanished(StorageError),
    Failed(StorageError),
}

impl From<StorageError> for Scan {
    fn from(e: StorageError) -> Self {
        Self::Failed(e)
    }
}

/// Scans of a partition tried when objects vanish under them.
const SCAN_TRIES: u32 = 3;

/// Why a create did not write.
enum CreateError {
    /// Another writer's object is there.
    Taken,
    Storage(StorageError),
}

impl Shared {
    fn part(&self, p: PartitionId) -> Arc<Mutex<Part>> {
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

    fn list_partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        let mut out = BTreeSet::new();
        for top in ["events", "bundles"] {
            let listed = block_on(self.objects.list_with_delimiter(Some(&ObjPath::from(top))))
                .map_err(|e| os_err(format!("list {top}/"), e))?;
            for prefix in listed.common_prefixes {
                if let Some(p) = prefix.filename().and_then(|n| n.parse::<u32>().ok()) {
                    out.insert(p);
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    /// Names (file names) under `dir/partition`.
    fn list_names(&self, dir: &str, p: PartitionId) -> Result<Vec<String>, StorageError> {
        let prefix = ObjPath::from(format!("{dir}/{p:05}"));
        let listed = block_on(self.objects.list_with_delimiter(Some(&prefix)))
            .map_err(|e| os_err(format!("list {prefix}/"), e))?;
        Ok(listed
            .objects
            .into_iter()
            .filter_map(|m| m.location.filename().map(str::to_string))
            .collect())
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let path = ObjPath::from(name);
        match block_on(async { self.objects.get(&path).await?.bytes().await }) {
            // A `Bytes` made from a `Vec` gives it back without a copy.
            Ok(b) => Ok(Some(Vec::from(b))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(os_err(format!("read {name}"), e)),
        }
    }

    fn get_one(&self, p: PartitionId, o: PLogOffset) -> Result<Option<OneEvent>, StorageError> {
        let name = event_object(p, o);
        let Some(bytes) = self.get(&name)? else {
            return Ok(None);
        };
        match decode_one(&bytes) {
            Some(e) if e.offset == o => Ok(Some(e)),
            _ => Err(StorageError(format!(
                "object store: {name} is corrupt: not a sound event object for offset {o} (partition {p})"
            ))),
        }
    }

    /// The one-event objects `from..from + n`, read from a few threads at once, in order
    /// (`None` for one not found).
    fn get_many(
        &self,
        p: PartitionId,
        from: PLogOffset,
        n: usize,
    ) -> Result<Vec<Option<OneEvent>>, StorageError> {
        if n <= 1 {
            return (from..from + n as u64)
                .map(|o| self.get_one(p, o))
                .collect();
        }
        let offsets: Vec<PLogOffset> = (from..from + n as u64).collect();
        let chunk = n.div_ceil(READ_THREADS);
        let parts: Vec<Result<Vec<Option<OneEvent>>, StorageError>> = std::thread::scope(|s| {
            let handles: Vec<_> = offsets
                .chunks(chunk)
                .map(|c| s.spawn(move || c.iter().map(|&o| self.get_one(p, o)).collect()))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(StorageError("a read thread panicked".into())))
                })
                .collect()
        });
        let mut out = Vec::with_capacity(n);
        for part in parts {
            out.extend(part?);
        }
        Ok(out)
    }

    /// The bundle that would hold `o` (bundles are aligned on `bundle_events`).
    fn bundle_range(&self, o: PLogOffset) -> (PLogOffset, PLogOffset) {
        let first = (o - 1) / self.bundle_events * self.bundle_events + 1;
        (first, first + self.bundle_events - 1)
    }

    fn get_bundle(
        &self,
        p: PartitionId,
        o: PLogOffset,
    ) -> Result<Option<Arc<Bundle>>, StorageError> {
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
        match Bundle::decode(bytes) {
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
    fn bundle_link(
        &self,
        p: PartitionId,
        first: PLogOffset,
        last: PLogOffset,
        name: &str,
    ) -> Result<(u64, u64), StorageError> {
        let n = last - first + 1;
        let at = 24 + 12 * (n - 1);
        let path = ObjPath::from(bundle_object(p, first, last));
        let ranges = block_on(self.objects.get_ranges(&path, &[0..24, at..at + 8]))
            .map_err(|e| os_err(format!("read bundles/{p:05}/{name}"), e))?;
        let head = &ranges[0];
        let sound = head.get(..4) == Some(BUNDLE_MAGIC.as_slice())
            && u64_at(head, 4) == Some(first)
            && u32_at(head, 12).map(u64::from) == Some(n);
        match (sound, u64_at(head, 16), u64_at(&ranges[1], 0)) {
            (true, Some(prev), Some(last_hash)) => Ok((prev, last_hash)),
            _ => Err(StorageError(format!(
                "object store: bundles/{p:05}/{name} is corrupt: not a sound bundle of offsets {first}..={last} (partition {p})"
            ))),
        }
    }

    /// The first offset of `first..first + n` that a bundle holds, if any.
    fn bundled_among(
        &self,
        p: PartitionId,
        first: PLogOffset,
        n: u64,
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
    fn create(&self, name: &str, bytes: Vec<u8>) -> Result<(), CreateError> {
        let path = ObjPath::from(name);
        let opts = PutOptions::from(PutMode::Create);
        match block_on(
            self.objects
                .put_opts(&path, PutPayload::from(bytes.clone()), opts),
        ) {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => match self.get(name) {
                Ok(Some(found)) if found == bytes => {
                    self.stats.own_retries.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
                Ok(_) => Err(CreateError::Taken),
                Err(e) => Err(CreateError::Storage(e)),
            },
            Err(e) => Err(CreateError::Storage(os_err(format!("create {name}"), e))),
        }
    }

    /// Creates (and syncs) the directories of a partition before its first object, so that
    /// syncing an object's file and its directory is enough to make it durable.
    fn ensure_dirs(&self, p: PartitionId) -> Result<(), StorageError> {
        let Some(root) = &self.local else {
            return Ok(());
        };
        for top in ["events", "bundles"] {
            let dir = root.join(top).join(format!("{p:05}"));
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

    fn sync_path(&self, path: &Path) -> Result<(), StorageError> {
        std::fs::File::open(path)
            .and_then(|f| f.sync_all())
            .map_err(|e| os_err(format!("sync {}", path.display()), e))?;
        self.stats.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Makes the objects `names` (under `dir`) durable: each file, then the directory once.
    fn sync_objects(&self, dir: &str, names: &[String]) -> Result<(), StorageError> {
        let Some(root) = &self.local else {
            return Ok(());
        };
        if names.is_empty() {
            return Ok(());
        }
        // Files are synced from a few threads at once: the file system commits concurrent
        // syncs together.
        let paths: Vec<PathBuf> = names.iter().map(|n| root.join(n)).collect();
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

    fn sync_events(&self, p: PartitionId, offsets: &[PLogOffset]) -> Result<(), StorageError> {
        let names: Vec<String> = offsets.iter().map(|&o| event_object(p, o)).collect();
        self.sync_objects(&format!("events/{p:05}"), &names)
    }

    /// Reads a partition's PLog from its objects: bundles from offset 1 until a hole, then
    /// one-event objects, verifying every link. With write access, one-event objects that a
    /// bundle also holds are deleted: with the same bytes an interrupted merge left them, with
    /// other bytes a stale writer did (never acknowledged: the bundle was there first). A hole
    /// with objects after it and a broken link are errors.
    fn scan(&self, p: PartitionId) -> Result<Part, StorageError> {
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

    /// One pass of [`scan`](Self::scan).
    fn scan_once(&self, p: PartitionId) -> Result<Part, Scan> {
        // Events are listed before bundles: a merger writes a bundle before it deletes the
        // events it holds, so an event missing from this listing is in a bundle listed next.
        let mut events: BTreeSet<PLogOffset> = BTreeSet::new();
        for name in self.list_names("events", p)? {
            match name.parse::<u64>() {
                Ok(o) if name.len() == 20 && o > 0 => {
                    events.insert(o);
                }
                _ => tracing::warn!("object store: ignoring events/{p:05}/{name}"),
            }
        }
        let mut bundles: Vec<(PLogOffset, PLogOffset, String)> = Vec::new();
        for name in self.list_names("bundles", p)? {
            let parsed = name
                .split_once('-')
                .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
            match parsed {
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

    /// Calls `f` with each of up to `max` events from `from` on, in order, verifying links;
    /// stops early only at the PLog's end.
    fn visit(
        &self,
        p: PartitionId,
        from: PLogOffset,
        max: usize,
        mut f: impl FnMut(PLogOffset, &[u8]) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let (merged_to, known_next) = {
            let part = self.part(p);
            let st = lock(&part);
            (st.merged_to, st.next)
        };
        let mut o = from;
        let mut seen = 0;
        let mut link: Option<u64> = None;
        let mut check_link = |o: PLogOffset, prev: u64, hash: u64, name: &dyn Fn() -> String| {
            if let Some(l) = link
                && l != prev
            {
                return Err(StorageError(format!(
                    "object store: partition {p}: broken link at offset {o}: {} does not follow offset {}",
                    name(),
                    o - 1
                )));
            }
            link = Some(hash);
            Ok(())
        };
        while seen < max {
            let bundle = if o <= merged_to {
                self.get_bundle(p, o)?
            } else {
                // One-event objects, read ahead in parallel, used in order up to the first
                // one not found.
                // Past the end this handle knows of, one object at a time: another host may
                // have appended, but a store answers a missing object slowly (S3's 404), and
                // a chunk read past the end would ask for hundreds of them.
                let ahead = if o < known_next {
                    (known_next - o).min(READ_CHUNK as u64) as usize
                } else {
                    1
                };
                let fetched = self.get_many(p, o, (max - seen).min(ahead))?;
                let wanted = fetched.len();
                let mut found = 0;
                for e in fetched.into_iter().map_while(|e| e) {
                    check_link(o, e.prev, e.hash, &|| event_object(p, o))?;
                    f(o, &e.event)?;
                    o += 1;
                    found += 1;
                }
                seen += found;
                if found == wanted {
                    continue;
                }
                // Merged meanwhile, or the end.
                self.get_bundle(p, o)?
            };
            let Some(b) = bundle else {
                break;
            };
            let name = || bundle_object(p, b.first, b.last());
            let skip = (o - b.first) as usize;
            let take = (max - seen).min(b.len() - skip);
            let prev = if skip == 0 {
                b.prev
            } else {
                b.hashes[skip - 1]
            };
            check_link(o, prev, b.hashes[skip + take - 1], &name)?;
            for i in skip..skip + take {
                f(b.first + i as u64, b.event(i))?;
            }
            o += take as u64;
            seen += take;
        }
        Ok(())
    }

    /// Merges every complete, linked bundle-sized range of a partition; returns how many
    /// bundles it wrote.
    fn merge_ready(&self, p: PartitionId) -> Result<u64, StorageError> {
        let _merging = lock(&self.merging);
        let part = self.part(p);
        let mut written = 0;
        loop {
            let (first, prev) = {
                let st = lock(&part);
                if st.merge_error.is_some() || st.next < st.merged_to + 1 + self.bundle_events {
                    return Ok(written);
                }
                (st.merged_to + 1, st.merged_hash)
            };
            match self.merge(p, first, prev) {
                Ok(last_hash) => {
                    let mut st = lock(&part);
                    st.merged_to = first + self.bundle_events - 1;
                    st.merged_hash = last_hash;
                    written += 1;
                }
                Err(e) => {
                    tracing::error!("{e}; merging stops on partition {p}");
                    lock(&part).merge_error = Some(e.0.clone());
                    return Err(e);
                }
            }
        }
    }

    /// Writes the bundle of `first..first + bundle_events` (whose predecessor's hash is
    /// `prev`), makes it durable, then deletes the one-event objects it holds. Returns the
    /// hash of its last event.
    fn merge(&self, p: PartitionId, first: PLogOffset, prev: u64) -> Result<u64, StorageError> {
        let last = first + self.bundle_events - 1;
        let mut events: Vec<(u64, Vec<u8>)> = Vec::with_capacity(self.bundle_events as usize);
        let mut link = prev;
        for o in first..=last {
            let Some(e) = self.get_one(p, o)? else {
                // Another host's merger may have bundled the range first.
                if let Some(b) = self.get_bundle(p, first)?
                    && b.prev == prev
                {
                    return Ok(b.last_hash());
                }
                return Err(StorageError(format!(
                    "object store: partition {p}: hole at offset {o} while merging {first}..={last}: {} is missing",
                    event_object(p, o)
                )));
            };
            if e.prev != link {
                return Err(StorageError(format!(
                    "object store: partition {p}: broken link at offset {o} while merging: {} (writer {}) does not follow offset {}",
                    event_object(p, o),
                    e.writer,
                    o - 1
                )));
            }
            link = e.hash;
            events.push((e.hash, e.event));
        }
        let name = bundle_object(p, first, last);
        match self.create(&name, Bundle::encode(first, prev, &events)) {
            Ok(()) => {}
            Err(CreateError::Taken) => {
                return Err(StorageError(format!(
                    "object store: partition {p}: two different objects for offsets {first}..={last}: {name} exists and differs from the events it should hold"
                )));
            }
            Err(CreateError::Storage(e)) => return Err(e),
        }
        self.sync_objects(&format!("bundles/{p:05}"), &[name])?;
        self.stats.bundles_written.fetch_add(1, Ordering::Relaxed);
        for o in first..=last {
            if !self.merge_pause.is_zero() && (o == first || o == first + self.bundle_events / 2) {
                std::thread::sleep(self.merge_pause);
            }
            let n = event_object(p, o);
            match block_on(self.objects.delete(&ObjPath::from(n.as_str()))) {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(os_err(format!("delete {n}"), e)),
            }
        }
        self.stats
            .merged_events
            .fetch_add(self.bundle_events, Ordering::Relaxed);
        Ok(link)
    }
}

/// Threads that sync one append's files together.
const SYNC_THREADS: usize = 4;

/// One-event objects a read asks for at once (from [`READ_THREADS`] threads).
const READ_CHUNK: usize = 256;

/// Threads reading one-event objects ahead.
const READ_THREADS: usize = 4;

fn merger_loop(shared: &Shared, rx: &mpsc::Receiver<PartitionId>) {
    loop {
        let wanted: Vec<PartitionId> = match rx.recv_timeout(MERGE_POLL) {
            Ok(p) => {
                let mut v = vec![p];
                v.extend(rx.try_iter());
                v.sort_unstable();
                v.dedup();
                v
            }
            Err(RecvTimeoutError::Timeout) => lock(&shared.parts).keys().copied().collect(),
            Err(RecvTimeoutError::Disconnected) => return,
        };
        for p in wanted {
            // An error is kept on the partition (and logged); merging goes on elsewhere.
            let _ = shared.merge_ready(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_decodes_to_what_was_encoded_and_a_flipped_byte_is_refused() {
        let events: Vec<Vec<u8>> = (0..3)
            .map(|i| crate::encode_event(&[sequencer::SeqValue::new(1, 1, i)], b"x"))
            .collect();
        let mut hashes = Vec::new();
        let mut prev = 7;
        for (i, e) in events.iter().enumerate() {
            prev = event_hash(10 + i as u64, prev, e);
            hashes.push(prev);
        }
        let pairs: Vec<(u64, Vec<u8>)> = hashes.into_iter().zip(events.clone()).collect();
        let bytes = Bundle::encode(10, 7, &pairs);
        let back = Bundle::decode(bytes.clone()).expect("sound");
        assert_eq!(
            (0..3).map(|i| back.event(i).to_vec()).collect::<Vec<_>>(),
            events
        );
        assert_eq!(back.last(), 12);
        let mut bad = bytes;
        let n = bad.len();
        bad[n - 1] ^= 1;
        assert!(Bundle::decode(bad).is_none());
    }

    #[test]
    fn an_event_object_with_a_flipped_byte_is_refused() {
        let e = crate::encode_event(&[sequencer::SeqValue::new(1, 1, 5)], b"p");
        let (bytes, hash) = encode_one(3, 9, "w", &e);
        let one = decode_one(&bytes).expect("sound");
        assert_eq!((one.offset, one.prev, one.hash), (3, 9, hash));
        let mut bad = bytes;
        let n = bad.len();
        bad[n - 1] ^= 1;
        assert!(decode_one(&bad).is_none());
    }
}
