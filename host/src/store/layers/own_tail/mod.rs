//! Actualization from the host's own tail: a layer that keeps, per partition, the PLog events
//! past the stored offset that this host appended (or replayed), and the numbers it saw, and
//! answers an actualization's reads from them while it knows where the PLog ended. Why what it
//! serves never lets a number reach the PLog twice: [`OwnTail`].
//!
//! A mechanism for speed (docs/ARCHITECTURE.md, "What exists only for speed"): 932 lines, for
//! the etcd main job 10,757 → 23,114 durable events/s (41747ab). Remove it when etcd reads get
//! cheap.

mod state;

pub use state::TailLimits;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::FutureExt;
use hashbrown::HashMap;
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::codec::decode_event;
use crate::store::forward::forward_storage;
use crate::store::layers::counts::layer_counts;
use crate::store::layers::write_watch::watched;
use crate::store::storage::StorageFuture;
use crate::store::storage::{
    AppendError, EventBatch, PartitionId, PlogPage, Storage, StorageError,
};
use crate::store::tail_probe::TailProbe;
use state::PartitionTail;

/// Storage that serves actualizations from what this host appended. It wraps a [`Storage`]
/// and a [`TailProbe`] of the same store, and keeps per partition (within [`TailLimits`]):
///
/// - the **tail**: the PLog's events from the stored offset on, as this host appended them
///   (or read them in a replay), with the offset after the last one, where the PLog ended when
///   last seen;
/// - the **numbers** seen: read from the view, raised by every event appended or replayed and
///   every flusher write.
///
/// An actualization begins with an offset read. While the kept tail reaches where the PLog
/// ended when this host last appended to it or read it, and no append is under way, the layer
/// answers it from memory (the stored offset this host last read or wrote) and serves the
/// replay that follows from the tail: no read of the store at all. Otherwise it makes the
/// offset read one [`TailProbe::read_offsets`], which also reads where the PLog ends: if that
/// is where the kept tail ends, and nothing was appended meanwhile, the replay is served from
/// the tail; if not, everything kept is forgotten and the replay is read from the store, and
/// followed: once it reaches the PLog's end, the tail continues from there.
///
/// Numbers are served (to `read_numbers` and `read_numbers_many`) once the replay of the
/// current epoch reached the PLog's end, for keys read from the store in that epoch: the view
/// read after the epoch's offset read holds every number of the events before the stored
/// offset, every event from there on was seen here, so the largest of what was read and what
/// was seen is the largest number the PLog holds, which is what the view holds for every key
/// the sequencer asks for (it asks only for keys it does not hold).
///
/// A second writer is always seen, by the fence: once it has appended after the kept end it
/// holds the offset this host numbers next, so this host's next append is refused (the
/// [`Storage::append_event`] contract) before any number given from the stale tail reaches the
/// PLog; the refusal forgets the tail, and the actualization that follows reads the store. (A
/// read of the store at the actualization would find the writer sooner, but the fence is what
/// proves it either way: another writer may append right after any such read.) A probe of the
/// store that finds the PLog longer than the tail also forgets it. Everything kept is forgotten on
/// any error of the store, on an append whose outcome is unknown or refused, and on a flusher
/// write that fails or is abandoned; the tail before a flusher write's stored offset is
/// dropped when that write succeeds.
///
/// What is kept belongs to one tenure of this host's ownership of the partition
/// ([`TailProbe::tenure`]): when the host loses the partition or takes it again, everything
/// kept is forgotten, so an acquisition starts from the store as it is, never from the end
/// this host saw in an earlier tenure (the fence would refuse the first append of such a
/// start, and the actualization would be done twice).
///
/// It counts what it served and read ([`OwnTail::counts`]).
pub struct OwnTail {
    inner: Arc<dyn Storage>,
    probe: Arc<dyn TailProbe>,
    limits: TailLimits,
    partitions: Mutex<HashMap<PartitionId, Arc<Mutex<PartitionTail>>>>,
    counters: Arc<Counters>,
}

layer_counts! {
    /// What an [`OwnTail`] has served from memory and read from the store.
    pub struct TailCounts, counted by Counters {
        /// Offset reads answered from memory, the kept tail known to end where the PLog did
        /// (the append fence is the proof): their replays were served from it.
        vouched,
        /// Offset reads whose probe proved the kept tail: their replays were served from it.
        proofs_held,
        /// Offset reads whose probe did not (another writer, nothing kept yet, an error):
        /// their replays were read from the store.
        proofs_failed,
        /// PLog pages served from the kept tail.
        pages_served,
        /// PLog events in them.
        events_served,
        /// PLog pages read from the store.
        pages_read,
        /// Workspaces whose numbers were served from memory.
        workspaces_served,
        /// Workspaces whose numbers were read from the store.
        workspaces_read,
        /// Times what was kept of a partition was forgotten because this host lost it or took
        /// it again.
        tenures_ended,
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

impl OwnTail {
    /// Wraps `inner`, whose PLog's end `probe` reads (the same store, possibly under other
    /// layers), keeping at most `limits` per partition.
    pub fn new(inner: Arc<dyn Storage>, probe: Arc<dyn TailProbe>, limits: TailLimits) -> Self {
        Self {
            inner,
            probe,
            limits,
            partitions: Mutex::new(HashMap::new()),
            counters: Arc::new(Counters::default()),
        }
    }

    /// What it has served and read so far.
    pub fn counts(&self) -> TailCounts {
        self.counters.snapshot()
    }

    /// The partition's kept tail, forgotten first if this host's tenure of it changed.
    fn partition(&self, partition: PartitionId) -> Arc<Mutex<PartitionTail>> {
        let tenure = self.probe.tenure(partition);
        let part = lock(&self.partitions)
            .entry(partition)
            .or_insert_with(|| Arc::new(Mutex::new(PartitionTail::new(self.limits))))
            .clone();
        if lock(&part).in_tenure(tenure) {
            bump(&self.counters.tenures_ended, 1);
        }
        part
    }

    /// Numbers of `ws` read from the store, recorded (or everything forgotten on an error).
    fn read_numbers_from_store(
        &self, part: &Mutex<PartitionTail>, ws: &[WsId], seqs: &[SeqId],
        read: impl FnOnce() -> Result<Vec<Number>, StorageError>,
    ) -> Result<Vec<Number>, StorageError> {
        let ticket = lock(part).read_ticket();
        let found = read();
        match &found {
            Ok(numbers) => lock(part).numbers_read(ticket, ws, seqs, numbers),
            Err(_) => lock(part).forget(),
        }
        bump(&self.counters.workspaces_read, ws.len() as u64);
        found
    }

    /// Tells the partition's tail how an append of the events `first..next` ended.
    fn append_ended(
        part: &Mutex<PartitionTail>, first: PLogOffset, next: PLogOffset,
        outcome: Option<Vec<(PLogOffset, SeqValue)>>,
    ) {
        match outcome {
            Some(values) => lock(part).appended(first, next, values.into_iter()),
            None => lock(part).append_failed(),
        }
    }
}

/// The values of a batch's events, each with its offset; `None` if one cannot be decoded (then
/// the tail cannot hold it).
fn batch_values(batch: &EventBatch) -> Option<Vec<(PLogOffset, SeqValue)>> {
    let mut out = Vec::with_capacity(batch.len() * 3);
    for (offset, bytes) in batch.whole().iter() {
        let (values, _) = decode_event(offset, bytes).ok()?;
        out.extend(values.into_iter().map(|v| (offset, v)));
    }
    Some(out)
}

impl Storage for OwnTail {
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        let part = self.partition(partition);
        if let Some(numbers) = lock(&part).numbers(ws, seqs) {
            bump(&self.counters.workspaces_served, 1);
            return Ok(numbers);
        }
        self.read_numbers_from_store(&part, &[ws], seqs, || {
            self.inner.read_numbers(partition, ws, seqs)
        })
    }

    fn read_numbers_many(
        &self, partition: PartitionId, ws: &[WsId], seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        let part = self.partition(partition);
        let served: Vec<Option<Vec<Number>>> = {
            let tail = lock(&part);
            ws.iter().map(|&w| tail.numbers(w, seqs)).collect()
        };
        let missing: Vec<WsId> = (ws.iter().zip(&served))
            .filter(|(_, s)| s.is_none())
            .map(|(&w, _)| w)
            .collect();
        bump(
            &self.counters.workspaces_served,
            (ws.len() - missing.len()) as u64,
        );
        let read = if missing.is_empty() {
            Vec::new()
        } else {
            self.read_numbers_from_store(&part, &missing, seqs, || {
                self.inner.read_numbers_many(partition, &missing, seqs)
            })?
        };
        let mut read = read.chunks_exact(seqs.len().max(1));
        let mut out = Vec::with_capacity(ws.len() * seqs.len());
        for s in served {
            match s {
                Some(numbers) => out.extend(numbers),
                None => out.extend_from_slice(read.next().unwrap_or_default()),
            }
        }
        Ok(out)
    }

    fn read_next_offset(&self, partition: PartitionId) -> StorageFuture<PLogOffset> {
        let part = self.partition(partition);
        let counters = self.counters.clone();
        if let Some(stored) = lock(&part).vouch() {
            bump(&counters.vouched, 1);
            return futures::future::ready(Ok(stored)).boxed();
        }
        let ticket = lock(&part).offset_read_began();
        self.probe
            .read_offsets(partition)
            .map(move |r| match r {
                Ok(offsets) => {
                    if lock(&part).offsets_read(ticket, offsets) {
                        bump(&counters.proofs_held, 1);
                    } else {
                        bump(&counters.proofs_failed, 1);
                    }
                    Ok(offsets.stored)
                }
                Err(e) => {
                    lock(&part).forget();
                    bump(&counters.proofs_failed, 1);
                    Err(e)
                }
            })
            .boxed()
    }

    fn write(
        &self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
    ) -> StorageFuture<()> {
        let part = self.partition(partition);
        let written = values.clone();
        // An abandoned write's outcome is unknown: forgotten like a failed one.
        watched(
            self.inner.write(partition, values, next_offset),
            move |ok| {
                let mut tail = lock(&part);
                if ok {
                    tail.written(&written, next_offset);
                } else {
                    tail.forget();
                }
            },
        )
    }

    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        let part = self.partition(partition);
        let (served, ticket) = {
            let tail = lock(&part);
            (tail.page(from, max_events), tail.read_ticket())
        };
        let counters = self.counters.clone();
        if let Some(page) = served {
            bump(&counters.pages_served, 1);
            bump(&counters.events_served, page.next - from);
            return futures::future::ready(Ok(page)).boxed();
        }
        self.inner
            .read_plog(partition, from, max_events)
            .map(move |r| {
                match &r {
                    Ok(page) => lock(&part).page_read(ticket, from, page),
                    Err(_) => lock(&part).forget(),
                }
                bump(&counters.pages_read, 1);
                r
            })
            .boxed()
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        let part = self.partition(partition);
        lock(&part).append_began();
        let r = self.inner.append_events(partition, batch);
        let outcome = r.is_ok().then(|| batch_values(batch)).flatten();
        Self::append_ended(&part, batch.first(), batch.next(), outcome);
        r
    }

    forward_storage!(inner: append_limits, view_write_interval, failure, damaged);
}
