//! What the host needs from storage: the PLog, the sequences view and the next PLog offset of
//! each partition, laid out as in docs/DESIGN.md §6.

use core::fmt;
use core::ops::Range;
use core::time::Duration;

use futures::future::BoxFuture;
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::codec::{Checksum, EventError, StoredEvent, decode_event, encode_event_into};

/// Identifies a partition; each partition has its own PLog, view rows and sequencer.
pub type PartitionId = u32;

/// What a [`Storage`] call that may wait on I/O answers: a boxed future, `'static` so that
/// the caller can hold it past the call, of the value or a [`StorageError`].
pub type StorageFuture<T> = BoxFuture<'static, Result<T, StorageError>>;

/// A storage operation failed; the message says what and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageError(pub String);

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StorageError {}

/// An append the PLog refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppendError {
    /// The offset is not the PLog's next one: the writer is stale or confused.
    WrongOffset {
        /// The offset the PLog accepts next.
        expected: PLogOffset,
        /// The offset offered.
        offered: PLogOffset,
    },
    /// Storage failed.
    Storage(StorageError),
    /// The writer does not own the partition (a store shared by hosts that own partitions
    /// through leases, such as etcd with a membership): the cluster refused its epoch, or it
    /// stopped numbering because its lease may have expired. Nothing was written; trying
    /// again cannot help: the writer stops serving the partition.
    NotOwner {
        /// The partition.
        partition: PartitionId,
        /// The epoch the writer held (0 if it never owned the partition).
        epoch: u64,
        /// Why, in words.
        why: String,
    },
}

impl fmt::Display for AppendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WrongOffset { expected, offered } => write!(
                f,
                "PLog append at offset {offered} refused: the next offset is {expected}"
            ),
            Self::Storage(e) => write!(f, "PLog append failed: {e}"),
            Self::NotOwner {
                partition,
                epoch,
                why,
            } => write!(
                f,
                "PLog append refused: partition {partition} is not this host's (epoch {epoch}): {why}"
            ),
        }
    }
}

impl std::error::Error for AppendError {}

impl From<StorageError> for AppendError {
    fn from(e: StorageError) -> Self {
        Self::Storage(e)
    }
}

/// PLog events read from an offset, flattened: every value with its event's offset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlogPage {
    /// Values in offset order; keys may repeat.
    pub values: Vec<(PLogOffset, SeqValue)>,
    /// The offset after the last event read (the requested offset if none was).
    pub next: PLogOffset,
    /// No event exists at or after `next`.
    pub end: bool,
}

impl PlogPage {
    /// The page a read from `from` returns: the values of the first `max_events` of `events`
    /// (in offset order, each with its values), and `end` when `events` holds nothing more, so a
    /// backend reads one event beyond the page to tell whether the PLog ends with it.
    pub fn collect<V: AsRef<[SeqValue]>>(
        from: PLogOffset, max_events: usize, events: impl IntoIterator<Item = (PLogOffset, V)>,
    ) -> Self {
        let mut page = Self {
            values: Vec::new(),
            next: from,
            end: true,
        };
        let mut events = events.into_iter();
        for (offset, values) in events.by_ref().take(max_events) {
            page.values
                .extend(values.as_ref().iter().map(|v| (offset, *v)));
            page.next = offset + 1;
        }
        page.end = events.next().is_none();
        page
    }

    /// [`collect`](Self::collect) of events a backend read: refuses the first of the page
    /// that fails its checksum (a damaged event is never replayed) with its offset.
    pub fn of_stored(
        from: PLogOffset, max_events: usize, events: Vec<StoredEvent>,
    ) -> Result<Self, EventError> {
        if let Some(bad) =
            (events.iter().take(max_events)).find(|e| e.checksum == Checksum::Mismatch)
        {
            return Err(EventError::Checksum(bad.offset));
        }
        Ok(Self::collect(
            from,
            max_events,
            events.into_iter().map(|e| (e.offset, e.values)),
        ))
    }
}

/// An event a store's read refused because it fails its checksum: damaged, never replayed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{store}: partition {partition}: event at offset {offset} fails its checksum")]
pub struct DamagedEvent {
    /// The store, as its errors name it.
    pub store: String,
    /// The partition.
    pub partition: PartitionId,
    /// The event's offset.
    pub offset: PLogOffset,
}

/// Where a store keeps the first damaged event its reads met, for
/// [`Storage::damaged`]: the first one is kept, later ones are refused the same way.
#[derive(Debug, Default)]
pub struct DamageLatch(std::sync::OnceLock<DamagedEvent>);

impl DamageLatch {
    /// Records that `store`'s read of `partition` met `error` (kept if it is the first
    /// damaged event) and returns the error the read fails with: one line naming the store,
    /// the partition and the offset.
    pub fn refuse(&self, store: &str, partition: PartitionId, error: EventError) -> StorageError {
        match error {
            EventError::Checksum(offset) => {
                let damaged = DamagedEvent {
                    store: store.to_string(),
                    partition,
                    offset,
                };
                let line = damaged.to_string();
                let _ = self.0.set(damaged);
                StorageError(line)
            }
            EventError::Malformed(_) => {
                StorageError(format!("{store}: partition {partition}: {error}"))
            }
        }
    }

    /// The first damaged event recorded, if any.
    pub fn get(&self) -> Option<DamagedEvent> {
        self.0.get().cloned()
    }
}

/// Events for one partition's PLog at consecutive offsets from [`first`](Self::first), each
/// already encoded as every backend stores it
/// ([`encode_event`](crate::store::codec::encode_event)), in one buffer: what
/// [`Storage::append_events`] appends with as few durable writes as the backend allows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventBatch {
    first: PLogOffset,
    bytes: Vec<u8>,
    /// Where each event ends in `bytes`.
    ends: Vec<usize>,
}

impl EventBatch {
    /// An empty batch whose first event will go at `first`.
    pub fn new(first: PLogOffset) -> Self {
        Self {
            first,
            ..Self::default()
        }
    }

    /// A batch of one event.
    pub fn single(offset: PLogOffset, values: &[SeqValue], payload: &[u8]) -> Self {
        let mut b = Self::new(offset);
        b.push(values, payload);
        b
    }

    /// Empties the batch (keeping its buffers) for events from `first` on.
    pub fn reset(&mut self, first: PLogOffset) {
        self.first = first;
        self.bytes.clear();
        self.ends.clear();
    }

    /// Adds an event at [`next`](Self::next) (its checksum covers that offset).
    pub fn push(&mut self, values: &[SeqValue], payload: &[u8]) {
        let offset = self.next();
        encode_event_into(&mut self.bytes, offset, values, payload);
        self.ends.push(self.bytes.len());
    }

    /// The offset of the first event.
    pub fn first(&self) -> PLogOffset {
        self.first
    }

    /// The offset after the last event (the first's if there is none).
    pub fn next(&self) -> PLogOffset {
        self.first + self.ends.len() as u64
    }

    /// How many events the batch holds.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the batch holds no event.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// All its events as one part.
    pub fn whole(&self) -> BatchPart<'_> {
        BatchPart {
            batch: self,
            events: 0..self.len(),
        }
    }

    /// The batch cut, in order, into the fewest parts that each fit `limits` (an event larger
    /// than `limits.max_bytes` is a part of its own, which the backend then refuses).
    pub fn parts(&self, limits: AppendLimits) -> impl Iterator<Item = BatchPart<'_>> {
        let max_events = limits.max_events.max(1);
        let mut start = 0;
        std::iter::from_fn(move || {
            if start >= self.len() {
                return None;
            }
            let base = self.start_of(start);
            let mut end = start + 1;
            while end < self.len()
                && end - start < max_events
                && self.ends[end] - base <= limits.max_bytes
            {
                end += 1;
            }
            let part = BatchPart {
                batch: self,
                events: start..end,
            };
            start = end;
            Some(part)
        })
    }

    /// Appends the batch part by part as `limits` require, each part with `append_part` (one
    /// all-or-nothing durable write at the part's first offset), in order, stopping at the
    /// first failure: the PLog then holds a dense prefix of the batch (the parts before the
    /// one that failed, if their writes succeeded), never a hole.
    pub fn append_in_parts(
        &self, limits: AppendLimits,
        mut append_part: impl FnMut(BatchPart<'_>) -> Result<(), AppendError>,
    ) -> Result<(), AppendError> {
        self.parts(limits).try_for_each(&mut append_part)
    }

    /// Appends the batch event by event with `append_one(offset, values, payload)` (a
    /// write of one event, fenced at the PLog's next offset), in order, stopping at the first
    /// failure: [`Storage::append_events`] for a backend without batched writes.
    pub fn append_each(
        &self,
        mut append_one: impl FnMut(PLogOffset, &[SeqValue], &[u8]) -> Result<(), AppendError>,
    ) -> Result<(), AppendError> {
        for i in 0..self.len() {
            let offset = self.first + i as u64;
            let (values, payload) = decode_event(offset, self.event(i)).map_err(|e| {
                AppendError::Storage(StorageError(format!(
                    "PLog append at offset {offset}: the batch holds no valid event there ({e})"
                )))
            })?;
            append_one(offset, &values, payload)?;
        }
        Ok(())
    }

    /// Where event `i` starts in `bytes` (for `i == len()`, where the batch ends).
    fn start_of(&self, i: usize) -> usize {
        if i == 0 { 0 } else { self.ends[i - 1] }
    }

    fn event(&self, i: usize) -> &[u8] {
        &self.bytes[self.start_of(i)..self.ends[i]]
    }
}

/// Consecutive events of an [`EventBatch`]: what one durable write appends.
#[derive(Clone, Debug)]
pub struct BatchPart<'a> {
    batch: &'a EventBatch,
    events: Range<usize>,
}

impl<'a> BatchPart<'a> {
    /// The offset of its first event.
    pub fn first(&self) -> PLogOffset {
        self.batch.first + self.events.start as u64
    }

    /// The offset after its last event.
    pub fn next(&self) -> PLogOffset {
        self.batch.first + self.events.end as u64
    }

    /// How many events it holds (at least one).
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether it holds no event (never, for a part of [`EventBatch::parts`]).
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Encoded bytes of all its events.
    pub fn encoded_len(&self) -> usize {
        self.batch.start_of(self.events.end) - self.batch.start_of(self.events.start)
    }

    /// Its events in offset order: (offset, encoded event).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (PLogOffset, &'a [u8])> + Clone + 'a {
        let batch = self.batch;
        self.events
            .clone()
            .map(move |i| (batch.first + i as u64, batch.event(i)))
    }
}

/// The most one durable write of [`Storage::append_events`] takes; a bigger batch is split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendLimits {
    /// Events per write.
    pub max_events: usize,
    /// Encoded event bytes per write.
    pub max_bytes: usize,
}

impl AppendLimits {
    /// No limit: a batch is always one write.
    pub const UNLIMITED: Self = Self {
        max_events: usize::MAX,
        max_bytes: usize::MAX,
    };
}

/// Storage of many partitions.
///
/// Promises an implementation must keep: `write` makes the values durable before the offset;
/// one partition's writes are applied in the order they were begun (the [`Driver`](crate::Driver)
/// begins a partition's next write only once the previous one completed, so a backend need not
/// order writes of one partition that overlap; another caller must not overlap them either); a
/// read sees every write that completed before it began; `append_events` (and `append_event`,
/// `append`) accepts exactly the PLog's next offset, writes all of a write or nothing of it, and
/// returns only once the events are durable.
pub trait Storage: Send + Sync + 'static {
    /// The stored last numbers of `seqs` in `ws`, in order, 0 for a key never stored. Called
    /// inside a guest's `start`, so it must answer promptly.
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError>;

    /// [`read_numbers`](Self::read_numbers) for each workspace of `ws`: `seqs.len()` numbers
    /// per workspace, workspace after workspace. Called inside a guest's `start-batch`; a
    /// backend that can read them together should.
    fn read_numbers_many(
        &self, partition: PartitionId, ws: &[WsId], seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        let mut out = Vec::with_capacity(ws.len() * seqs.len());
        for &w in ws {
            out.extend(self.read_numbers(partition, w, seqs)?);
        }
        Ok(out)
    }

    /// The stored PLog offset (for historical reasons "next offset"), as the last completed
    /// [`write`](Self::write) stored it, 0 if none: every event before it has its numbers in
    /// the view. Actualization replays the PLog from it on, the event at it included. The
    /// sequencer also reads it to probe a storage that failed, once per retry delay while a
    /// retry waits longer than that (docs/DESIGN.md §4.4).
    fn read_next_offset(&self, partition: PartitionId) -> StorageFuture<PLogOffset>;

    /// Writes `values`, then `next_offset` as the stored PLog offset: every event before it has
    /// its numbers in the view once `values` are written (after a flush, the last flushed
    /// event's offset, not the one after it; after a replay, the offset after the last event
    /// replayed). The values must be durable before the offset.
    fn write(
        &self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
    ) -> StorageFuture<()>;

    /// Up to `max_events` PLog events from `from` on.
    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage>;

    /// Appends an event with its sequence values and its payload at exactly `offset` (the
    /// command processor's side of the PLog). Returns once the event is durable, or refuses it:
    /// any offset but the PLog's next one is [`AppendError::WrongOffset`] (the fence against a
    /// stale writer) and nothing is written. A batch of one for
    /// [`append_events`](Self::append_events), the one append a backend implements.
    fn append_event(
        &self, partition: PartitionId, offset: PLogOffset, values: &[SeqValue], payload: &[u8],
    ) -> Result<(), AppendError> {
        self.append_events(partition, &EventBatch::single(offset, values, payload))
    }

    /// [`append_event`](Self::append_event) with an empty payload.
    fn append(
        &self, partition: PartitionId, offset: PLogOffset, values: &[SeqValue],
    ) -> Result<(), AppendError> {
        self.append_event(partition, offset, values, &[])
    }

    /// Appends the events of `batch` at `batch.first()` and the offsets after it, with one
    /// durable write when [`append_limits`](Self::append_limits) allow, else with one per part
    /// of [`EventBatch::parts`], in order. Returns once every event is durable, or refuses:
    /// each write is accepted only at the PLog's next offset (the fence against a stale
    /// writer) and is all or nothing, so on an error the PLog holds a dense prefix of the
    /// batch, possibly empty and never with a hole: the parts before the one that failed.
    /// A [`AppendError::WrongOffset`] names the first offset of the part refused; after an
    /// [`AppendError::Storage`] whether that part was written is unknown (actualization reads
    /// the PLog and finds out).
    ///
    /// A backend that writes one event at a time implements it with
    /// [`EventBatch::append_each`]; every backend of this crate writes a batch at once.
    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError>;

    /// The most one write of [`append_events`](Self::append_events) takes; unlimited unless
    /// the backend has a limit (etcd: operations per transaction and request size).
    fn append_limits(&self) -> AppendLimits {
        AppendLimits::UNLIMITED
    }

    /// The shortest time between two of a partition's flusher writes this backend is best
    /// served with: the values flushed meanwhile go together in one write of the sequences
    /// view (group commit of the view; the PLog append, not this write, is what makes an
    /// event durable, so nothing acknowledged waits for it). The [`Driver`](crate::Driver)
    /// applies it unless told otherwise ([`Driver::with_min_write_interval`](crate::Driver::with_min_write_interval)).
    /// Zero (the default): each write as soon as the last one completed. A layer over another
    /// storage passes its answer on.
    fn view_write_interval(&self) -> Duration {
        Duration::ZERO
    }

    /// An error the store met that cannot clear by itself (redb after an I/O error such as a
    /// full disk takes no more writes until it is reopened), if any: a caller waiting for
    /// writes to succeed stops instead of waiting on.
    fn failure(&self) -> Option<String> {
        None
    }

    /// The first PLog event a read of this store refused because it fails its checksum, if
    /// any: actualization cannot go past it (a damaged event is never replayed), so a caller
    /// waiting for a partition to become ready stops instead of waiting on. A layer over
    /// another storage passes its answer on.
    fn damaged(&self) -> Option<DamagedEvent> {
        None
    }
}
