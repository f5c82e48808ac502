//! Reading many workspaces' numbers in one go before a batch, for a command processor whose
//! sequencer has just lost its cache (after an actualization) and would otherwise read them
//! one `start` at a time. Why what it keeps is never stale: [`ReadAhead`].
//!
//! A mechanism for speed (docs/ARCHITECTURE.md, "What exists only for speed"): on etcd the
//! cold reads it replaces took 87 % of the partitions' time. Remove it when every store answers
//! a point read in microseconds.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::FutureExt;
use hashbrown::{HashMap, HashSet};
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::forward::forward_storage;
use crate::store::layers::counts::layer_counts;
use crate::store::layers::write_watch::watched;
use crate::store::storage::StorageFuture;
use crate::store::storage::{PartitionId, PlogPage, Storage, StorageError};

/// Storage that reads a batch's numbers ahead. It wraps a [`Storage`]: [`ReadAhead::read_ahead`]
/// reads the stored numbers of a batch's workspaces with one `read_numbers_many` and keeps them
/// until the guest asks for them (`read_numbers`, served once: the guest then holds them in its
/// cache). A number kept is exactly what storage holds, because nothing that could change it is let
/// through:
///
/// - when a flusher write succeeds, the kept numbers of its keys rise to what it wrote (what
///   storage now holds); when it fails, or its future is dropped before it ends, the kept
///   numbers of its workspaces are dropped; what a read-ahead finds is raised by the writes
///   that succeeded while it ran (it may have read before them) and dropped for those that
///   failed (while a write is in flight its keys are in the sequencer's memory, so the guest
///   does not read them);
/// - an offset read (the start of an actualization) drops everything kept for the partition,
///   and a read-ahead that one overlapped keeps nothing: numbers read before an actualization
///   began must never serve a guest after it (another host may have written the view
///   meanwhile, for events the replay does not cover);
/// - from an offset read until a PLog read reaches the PLog's end (an actualization), nothing
///   read ahead is kept;
/// - so what is kept was read while the partition's sequencer was ready, between its
///   actualizations, and answers as a `read_numbers` at the `start` itself would: every number
///   another host wrote for events before the stored offset read by the actualization is
///   visible, events from there on were replayed (in the sequencer's memory, never read), and
///   events after the replay's end make this host's next append fail its fence; a number this
///   host changes is changed by one of its writes, which is accounted for.
///
/// It also counts what it reads ([`ReadAhead::counts`]): the numbers reads that reached
/// storage and the time they took, and the PLog events read (an actualization's replay).
pub struct ReadAhead {
    inner: Arc<dyn Storage>,
    partitions: Arc<Mutex<HashMap<PartitionId, Kept>>>,
    counters: Arc<Counters>,
}

layer_counts! {
    /// What a [`ReadAhead`] has read so far.
    pub struct ReadCounts, counted by Counters {
        /// Guest numbers reads answered from what was read ahead.
        served,
        /// Guest numbers reads that went to storage on their own.
        missed,
        /// Numbers reads sent to storage (read-aheads and guest reads not served).
        storage_reads,
        /// Workspaces those reads were of.
        workspaces_read,
        /// Nanoseconds spent in them.
        read_nanos,
        /// PLog events read (by actualizations' replays).
        plog_events_read,
    }
}

impl Counters {
    /// Runs a numbers read of `workspaces` workspaces sent to storage, counting it.
    fn storage_read<T>(&self, workspaces: usize, read: impl FnOnce() -> T) -> T {
        let started = std::time::Instant::now();
        let out = read();
        self.storage_reads.fetch_add(1, Ordering::Relaxed);
        self.workspaces_read
            .fetch_add(workspaces as u64, Ordering::Relaxed);
        self.read_nanos.fetch_add(
            u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        out
    }
}

/// The writes that ended during a read-ahead (which may have read their keys before or after
/// them).
#[derive(Default)]
struct Overlap {
    /// Values written: what the read-ahead found rises to them.
    written: Vec<SeqValue>,
    /// Workspaces of writes that failed: nothing read of them is kept.
    unknown: HashSet<WsId>,
}

/// What is kept for one partition.
#[derive(Default)]
struct Kept {
    /// Stored numbers by workspace, with the sequences they are of.
    numbers: HashMap<WsId, (Vec<SeqId>, Vec<Number>)>,
    /// While a read-ahead runs: the writes that ended meanwhile, or `None` once an offset read
    /// has made all of it void.
    reading: Option<Option<Overlap>>,
    /// From an offset read until a PLog read reaches the end: the sequencer is actualizing,
    /// and nothing read ahead meanwhile is kept.
    actualizing: bool,
}

impl Kept {
    /// A write of `values` succeeded: storage holds at least them (no more for this host's
    /// keys: its flusher never writes a number below the stored one), so the kept numbers of
    /// their keys rise to them. A read-ahead under way keeps nothing of their workspaces.
    fn written(&mut self, values: &[SeqValue]) {
        for v in values {
            raise(&mut self.numbers, v);
        }
        if let Some(Some(overlap)) = &mut self.reading {
            overlap.written.extend_from_slice(values);
        }
    }

    /// A write of `values` failed or was abandoned: what storage holds for their workspaces is
    /// unknown, so nothing kept of them stays.
    fn unknown(&mut self, values: &[SeqValue]) {
        for v in values {
            self.numbers.remove(&v.key.ws);
            if let Some(Some(overlap)) = &mut self.reading {
                overlap.unknown.insert(v.key.ws);
            }
        }
    }

    /// An actualization begins: nothing kept or being read ahead may serve after it.
    fn actualizing(&mut self) {
        self.actualizing = true;
        self.numbers.clear();
        if let Some(reading) = &mut self.reading {
            *reading = None;
        }
    }
}

/// Raises the kept number of `v`'s key, if kept, to `v`.
fn raise(numbers: &mut HashMap<WsId, (Vec<SeqId>, Vec<Number>)>, v: &SeqValue) {
    if let Some((seqs, kept)) = numbers.get_mut(&v.key.ws)
        && let Some(i) = seqs.iter().position(|&s| s == v.key.seq)
    {
        kept[i] = kept[i].max(v.value);
    }
}

impl ReadAhead {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Storage>) -> Self {
        Self {
            inner,
            partitions: Arc::new(Mutex::new(HashMap::new())),
            counters: Arc::new(Counters::default()),
        }
    }

    /// What it has read so far.
    pub fn counts(&self) -> ReadCounts {
        self.counters.snapshot()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PartitionId, Kept>> {
        lock(&self.partitions)
    }

    /// Reads the stored numbers of `seqs` in each of `ws` with one `read_numbers_many` and
    /// keeps them for the guest's next `read_numbers` of that workspace. Call it while the
    /// partition's sequencer is ready, just before numbering the batch. Returns how many
    /// workspaces are kept.
    pub fn read_ahead(
        &self, partition: PartitionId, ws: &[WsId], seqs: &[SeqId],
    ) -> Result<usize, StorageError> {
        let mut distinct: Vec<WsId> = ws.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        {
            let mut g = self.lock();
            let kept = g.entry(partition).or_default();
            kept.reading = Some((!kept.actualizing).then(Overlap::default));
        }
        let read = self.counters.storage_read(distinct.len(), || {
            self.inner.read_numbers_many(partition, &distinct, seqs)
        });
        let mut g = self.lock();
        let kept = g.entry(partition).or_default();
        let overlap = kept.reading.take().flatten().filter(|_| !kept.actualizing);
        let (numbers, overlap) = match (read, overlap) {
            (Ok(numbers), Some(overlap)) => (numbers, overlap),
            // An actualization began meanwhile, or was under way: keep nothing.
            (Ok(_), None) => return Ok(0),
            (Err(e), _) => return Err(e),
        };
        if numbers.len() != distinct.len() * seqs.len() {
            return Err(StorageError(format!(
                "partition {partition}: a numbers read returned {} numbers for {} workspaces of {} sequences",
                numbers.len(),
                distinct.len(),
                seqs.len()
            )));
        }
        let mut count = 0;
        for (&w, n) in distinct.iter().zip(numbers.chunks_exact(seqs.len().max(1))) {
            if !overlap.unknown.contains(&w) {
                kept.numbers.insert(w, (seqs.to_vec(), n.to_vec()));
                count += 1;
            }
        }
        // The read may have come before a write that ended meanwhile: storage holds the
        // larger of the two.
        for v in &overlap.written {
            raise(&mut kept.numbers, v);
        }
        Ok(count)
    }

    /// The kept numbers of `seqs` in `ws`, taken (served once), if all of them are kept.
    fn take(&self, partition: PartitionId, ws: WsId, seqs: &[SeqId]) -> Option<Vec<Number>> {
        let mut g = self.lock();
        let (kept_seqs, numbers) = g.get_mut(&partition)?.numbers.remove(&ws)?;
        seqs.iter()
            .map(|s| kept_seqs.iter().position(|k| k == s).map(|i| numbers[i]))
            .collect()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Storage for ReadAhead {
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        match self.take(partition, ws, seqs) {
            Some(numbers) => {
                self.counters.served.fetch_add(1, Ordering::Relaxed);
                Ok(numbers)
            }
            None => {
                self.counters.missed.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .storage_read(1, || self.inner.read_numbers(partition, ws, seqs))
            }
        }
    }

    fn read_numbers_many(
        &self, partition: PartitionId, ws: &[WsId], seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.counters.storage_read(ws.len(), || {
            self.inner.read_numbers_many(partition, ws, seqs)
        })
    }

    fn read_next_offset(&self, partition: PartitionId) -> StorageFuture<PLogOffset> {
        self.lock().entry(partition).or_default().actualizing();
        self.inner.read_next_offset(partition)
    }

    fn write(
        &self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
    ) -> StorageFuture<()> {
        let partitions = self.partitions.clone();
        let written = values.clone();
        watched(
            self.inner.write(partition, values, next_offset),
            move |ok| {
                let mut g = lock(&partitions);
                let kept = g.entry(partition).or_default();
                if ok {
                    kept.written(&written);
                } else {
                    kept.unknown(&written);
                }
            },
        )
    }

    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        let partitions = self.partitions.clone();
        let counters = self.counters.clone();
        self.inner
            .read_plog(partition, from, max_events)
            .map(move |r| {
                if let Ok(page) = &r {
                    counters
                        .plog_events_read
                        .fetch_add(page.next.saturating_sub(from), Ordering::Relaxed);
                }
                if matches!(&r, Ok(page) if page.end) {
                    // The replay has reached the PLog's end: the actualization is done.
                    lock(&partitions).entry(partition).or_default().actualizing = false;
                }
                r
            })
            .boxed()
    }

    forward_storage!(inner: append_events, append_limits, view_write_interval, failure, damaged);
}
