//! Storage in memory, laid out as in docs/DESIGN.md §6, with switches to make it misbehave in
//! tests.

mod gate;

pub use gate::Gate;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::FutureExt;
use hashbrown::HashMap;
use sequencer::{Number, NumberKey, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::codec::{Checksum, StoredEvent, decode_event};
use crate::store::storage::StorageFuture;
use crate::store::storage::{
    AppendError, AppendLimits, BatchPart, EventBatch, PartitionId, PlogPage, Storage, StorageError,
};
use crate::store::tail_probe::{Offsets, TailProbe};

/// One write storage received, in the order received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteRecord {
    /// A view row: (partition, workspace, sequence) → last.
    Value(PartitionId, SeqValue),
    /// A partition's next PLog offset.
    Offset(PartitionId, PLogOffset),
}

#[derive(Default)]
struct Partition {
    plog: BTreeMap<PLogOffset, Vec<SeqValue>>,
    /// The payloads of appended events that have one.
    payloads: BTreeMap<PLogOffset, Vec<u8>>,
    next_offset: PLogOffset,
}

/// Switches that make storage fail. Counters count down one per failed operation.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Fail this many of the next writes, writing nothing.
    pub fail_writes: u32,
    /// Fail this many of the next offset or PLog reads.
    pub fail_reads: u32,
    /// Fail every operation (appends included) until cleared: storage is down.
    pub down: bool,
    /// Fail this many of the next append writes (one per event for `append_event`, one per
    /// part for `append_events`), writing nothing of them.
    pub fail_appends: u32,
    /// Let this many append writes succeed before `fail_appends` applies (to fail a batch's
    /// second part, say).
    pub appends_before_failing: u32,
}

#[derive(Default)]
struct Inner {
    /// The sequences view: (partition, workspace, sequence) → last.
    view: HashMap<(PartitionId, NumberKey), Number>,
    partitions: HashMap<PartitionId, Partition>,
    writes: Vec<WriteRecord>,
    faults: Faults,
    append_limits: Option<AppendLimits>,
}

/// In-memory storage for any number of partitions. Clones share the same data.
#[derive(Clone, Default)]
pub struct MemoryStorage {
    inner: Arc<Mutex<Inner>>,
    /// Writes wait here before touching the data.
    pub write_gate: Gate,
    /// Offset and PLog reads wait here before touching the data.
    pub read_gate: Gate,
}

impl MemoryStorage {
    /// Empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes the fault switches.
    pub fn set_faults(&self, faults: Faults) {
        self.lock().faults = faults;
    }

    /// Makes `append_events` split batches as a backend with these limits must (one
    /// all-or-nothing write per part), so tests see what a failure between parts leaves.
    pub fn set_append_limits(&self, limits: AppendLimits) {
        self.lock().append_limits = Some(limits);
    }

    /// Places an event at any offset, as a test's starting state.
    pub fn seed_event(&self, partition: PartitionId, offset: PLogOffset, values: &[SeqValue]) {
        self.lock()
            .partitions
            .entry(partition)
            .or_default()
            .plog
            .insert(offset, values.to_vec());
    }

    /// Appends `count` events at the PLog's next offsets, each built by `event(offset)`.
    pub fn seed_events(
        &self, partition: PartitionId, count: u64,
        mut event: impl FnMut(PLogOffset) -> Vec<SeqValue>,
    ) {
        let mut g = self.lock();
        let p = g.partitions.entry(partition).or_default();
        let first = plog_next(p);
        for offset in first..first + count {
            p.plog.insert(offset, event(offset));
        }
    }

    /// The view's last number for a key, 0 if none.
    pub fn view_value(&self, partition: PartitionId, ws: WsId, seq: SeqId) -> Number {
        self.lock()
            .view
            .get(&(partition, NumberKey { ws, seq }))
            .copied()
            .unwrap_or(0)
    }

    /// The stored next PLog offset of a partition, 0 if none.
    pub fn stored_next_offset(&self, partition: PartitionId) -> PLogOffset {
        self.lock()
            .partitions
            .get(&partition)
            .map_or(0, |p| p.next_offset)
    }

    /// Every write received so far, in order.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.lock().writes.clone()
    }

    /// The events of a partition's PLog, in offset order.
    pub fn plog(&self, partition: PartitionId) -> Vec<(PLogOffset, Vec<SeqValue>)> {
        self.lock()
            .partitions
            .get(&partition)
            .map(|p| p.plog.iter().map(|(o, v)| (*o, v.clone())).collect())
            .unwrap_or_default()
    }

    /// The payload of the event at `offset` (empty if it has none or does not exist).
    pub fn payload(&self, partition: PartitionId, offset: PLogOffset) -> Vec<u8> {
        self.lock()
            .partitions
            .get(&partition)
            .and_then(|p| p.payloads.get(&offset).cloned())
            .unwrap_or_default()
    }

    fn take_write_fault(&self) -> Option<StorageError> {
        let faults = &mut self.lock().faults;
        take_fault(faults.down, &mut faults.fail_writes, "write")
    }

    /// An offset or PLog read: waits at the read gate, fails as the fault switches say, else
    /// answers `read` of the data.
    fn gated_read<T: Send + 'static>(
        &self, read: impl FnOnce(&Inner) -> T + Send + 'static,
    ) -> StorageFuture<T> {
        let this = self.clone();
        let gate = self.read_gate.wait();
        async move {
            gate.await;
            let mut g = this.lock();
            match Self::take_read_fault(&mut g) {
                Some(e) => Err(e),
                None => Ok(read(&g)),
            }
        }
        .boxed()
    }

    fn take_read_fault(g: &mut Inner) -> Option<StorageError> {
        take_fault(g.faults.down, &mut g.faults.fail_reads, "read")
    }
}

/// The failure an operation of `kind` ("read", "write") meets: the store is `down`, or one of
/// the `left` injected failures (taken).
fn take_fault(down: bool, left: &mut u32, kind: &str) -> Option<StorageError> {
    if down {
        return Some(StorageError("memory storage is down".into()));
    }
    if *left > 0 {
        *left -= 1;
        return Some(StorageError(format!("injected {kind} failure")));
    }
    None
}

fn plog_next(p: &Partition) -> PLogOffset {
    p.plog.last_key_value().map_or(1, |(o, _)| o + 1)
}

impl crate::store::reader::StoreReader for MemoryStorage {
    fn describe(&self) -> String {
        "memory (nothing kept after the process ends)".into()
    }

    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        let mut out: Vec<PartitionId> = self.lock().partitions.keys().copied().collect();
        out.sort_unstable();
        Ok(out)
    }

    fn plog_bounds(
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        let g = self.lock();
        let Some(p) = g.partitions.get(&partition) else {
            return Ok(None);
        };
        Ok(p.plog
            .keys()
            .next()
            .zip(p.plog.keys().next_back())
            .map(|(f, l)| (*f, *l)))
    }

    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        let g = self.lock();
        let Some(p) = g.partitions.get(&partition) else {
            return Ok(Vec::new());
        };
        Ok(p.plog
            .range(from..)
            .take(max)
            .map(|(&offset, values)| StoredEvent {
                offset,
                values: values.clone(),
                payload: p.payloads.get(&offset).cloned().unwrap_or_default(),
                // Verified when it was appended (memory keeps events decoded).
                checksum: Checksum::Verified,
            })
            .collect())
    }

    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        Ok(MemoryStorage::stored_next_offset(self, partition))
    }

    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        let mut out: Vec<(WsId, SeqId, Number)> = (self.lock().view.iter())
            .filter(|((p, _), _)| *p == partition)
            .map(|((_, k), &last)| (k.ws, k.seq, last))
            .collect();
        out.sort_unstable();
        Ok(out)
    }
}

impl Storage for MemoryStorage {
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        let g = self.lock();
        if g.faults.down {
            return Err(StorageError("memory storage is down".into()));
        }
        Ok(seqs
            .iter()
            .map(|&seq| {
                g.view
                    .get(&(partition, NumberKey { ws, seq }))
                    .copied()
                    .unwrap_or(0)
            })
            .collect())
    }

    fn read_next_offset(&self, partition: PartitionId) -> StorageFuture<PLogOffset> {
        self.read_offsets(partition)
            .map(|r| r.map(|o| o.stored))
            .boxed()
    }

    fn write(
        &self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
    ) -> StorageFuture<()> {
        let this = self.clone();
        let gate = self.write_gate.wait();
        async move {
            gate.await;
            if let Some(e) = this.take_write_fault() {
                return Err(e);
            }
            let mut g = this.lock();
            for v in values {
                g.view.insert((partition, v.key), v.value);
                g.writes.push(WriteRecord::Value(partition, v));
            }
            g.partitions.entry(partition).or_default().next_offset = next_offset;
            g.writes.push(WriteRecord::Offset(partition, next_offset));
            Ok(())
        }
        .boxed()
    }

    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        self.gated_read(move |g| {
            let events = g
                .partitions
                .get(&partition)
                .into_iter()
                .flat_map(|p| p.plog.range(from..).map(|(&o, event)| (o, event)));
            PlogPage::collect(from, max_events, events)
        })
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        let limits = self.append_limits();
        batch.append_in_parts(limits, |part| self.lock().append_part(partition, &part))
    }

    fn append_limits(&self) -> AppendLimits {
        self.lock().append_limits.unwrap_or(AppendLimits::UNLIMITED)
    }
}

/// The stored offset and the PLog's end under one lock: what `OwnTail` proves its tail with.
impl TailProbe for MemoryStorage {
    fn read_offsets(&self, partition: PartitionId) -> StorageFuture<Offsets> {
        self.gated_read(move |g| {
            let p = g.partitions.get(&partition);
            Offsets {
                stored: p.map_or(0, |p| p.next_offset),
                plog_next: p.map_or(1, plog_next),
            }
        })
    }
}

impl Inner {
    /// One all-or-nothing append write.
    fn append_part(
        &mut self, partition: PartitionId, part: &BatchPart<'_>,
    ) -> Result<(), AppendError> {
        if self.faults.down {
            return Err(AppendError::Storage(StorageError(
                "memory storage is down".into(),
            )));
        }
        if self.faults.fail_appends > 0 && self.faults.appends_before_failing > 0 {
            self.faults.appends_before_failing -= 1;
        } else if self.faults.fail_appends > 0 {
            self.faults.fail_appends -= 1;
            return Err(AppendError::Storage(StorageError(
                "injected append failure".into(),
            )));
        }
        // A refused append leaves no trace, not even an empty partition.
        let expected = self.partitions.get(&partition).map_or(1, plog_next);
        if part.first() != expected {
            return Err(AppendError::WrongOffset {
                expected,
                offered: part.first(),
            });
        }
        let mut events = Vec::with_capacity(part.len());
        for (offset, bytes) in part.iter() {
            let (values, payload) = decode_event(offset, bytes).map_err(|e| {
                AppendError::Storage(StorageError(format!("PLog append refused: {e}")))
            })?;
            events.push((offset, values, payload));
        }
        let p = self.partitions.entry(partition).or_default();
        for (offset, values, payload) in events {
            p.plog.insert(offset, values);
            if !payload.is_empty() {
                p.payloads.insert(offset, payload.to_vec());
            }
        }
        Ok(())
    }
}
