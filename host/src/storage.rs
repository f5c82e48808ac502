//! What the host needs from storage: the PLog, the sequences view and the next PLog offset of
//! each partition, laid out as in spec 002.

use core::fmt;

use futures::future::BoxFuture;
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

/// Identifies a partition; each partition has its own PLog, view rows and sequencer.
pub type PartitionId = u32;

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
}

impl fmt::Display for AppendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WrongOffset { expected, offered } => write!(
                f,
                "PLog append at offset {offered} refused: the next offset is {expected}"
            ),
            Self::Storage(e) => write!(f, "PLog append failed: {e}"),
        }
    }
}

impl std::error::Error for AppendError {}

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
        from: PLogOffset,
        max_events: usize,
        events: impl IntoIterator<Item = (PLogOffset, V)>,
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
}

/// Storage of many partitions.
///
/// Promises an implementation must keep: `write` makes the values durable before the offset;
/// one partition's writes are applied in the order they were begun; a read sees every write
/// that completed before it began; `append_event` (and `append`) accepts exactly the PLog's next
/// offset and returns only once the event is durable.
pub trait Storage: Send + Sync + 'static {
    /// The stored last numbers of `seqs` in `ws`, in order, 0 for a key never stored. Called
    /// inside a guest's `start`, so it must answer promptly.
    fn read_numbers(
        &self,
        partition: PartitionId,
        ws: WsId,
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError>;

    /// [`read_numbers`](Self::read_numbers) for each workspace of `ws`: `seqs.len()` numbers
    /// per workspace, workspace after workspace. Called inside a guest's `start-batch`; a
    /// backend that can read them together should.
    fn read_numbers_many(
        &self,
        partition: PartitionId,
        ws: &[WsId],
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        let mut out = Vec::with_capacity(ws.len() * seqs.len());
        for &w in ws {
            out.extend(self.read_numbers(partition, w, seqs)?);
        }
        Ok(out)
    }

    /// The stored next PLog offset, 0 if none.
    fn read_next_offset(
        &self,
        partition: PartitionId,
    ) -> BoxFuture<'static, Result<PLogOffset, StorageError>>;

    /// Writes `values`, then `next_offset`.
    fn write(
        &self,
        partition: PartitionId,
        values: Vec<SeqValue>,
        next_offset: PLogOffset,
    ) -> BoxFuture<'static, Result<(), StorageError>>;

    /// Up to `max_events` PLog events from `from` on.
    fn read_plog(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max_events: usize,
    ) -> BoxFuture<'static, Result<PlogPage, StorageError>>;

    /// Appends an event with its sequence values and its payload at exactly `offset` (the
    /// command processor's side of the PLog). Returns once the event is durable, or refuses it:
    /// any offset but the PLog's next one is [`AppendError::WrongOffset`] (the fence against a
    /// stale writer) and nothing is written.
    fn append_event(
        &self,
        partition: PartitionId,
        offset: PLogOffset,
        values: &[SeqValue],
        payload: &[u8],
    ) -> Result<(), AppendError>;

    /// [`append_event`](Self::append_event) with an empty payload.
    fn append(
        &self,
        partition: PartitionId,
        offset: PLogOffset,
        values: &[SeqValue],
    ) -> Result<(), AppendError> {
        self.append_event(partition, offset, values, &[])
    }
}
