//! What the sequencer hands its driver to do, and what it takes back.

use crate::types::{Number, PLogOffset, SeqId, SeqValue, WsId};

/// Names one piece of outstanding work; the driver reports the outcome under the same ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

/// A storage operation the sequencer needs performed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Work {
    /// Write `values`, then `next_plog_offset`; report with `complete_write` or `fail`.
    Write(WriteRequest),
    /// Read the stored PLog offset, as the last completed [`Work::Write`] stored it (0 when none
    /// is stored); report with `complete_next_offset` or `fail`. Replay starts at it, the event
    /// at it included.
    ReadNextOffset {
        /// Report under this ticket.
        ticket: Ticket,
    },
    /// Read PLog events from offset `from` on, as many as the driver likes; report with
    /// `complete_plog_read` or `fail`.
    ReadPlog {
        /// Report under this ticket.
        ticket: Ticket,
        /// The first offset to read.
        from: PLogOffset,
    },
}

impl Work {
    /// The ticket to report this work's outcome under.
    pub fn ticket(&self) -> Ticket {
        match self {
            Work::Write(w) => w.ticket,
            Work::ReadNextOffset { ticket } | Work::ReadPlog { ticket, .. } => *ticket,
        }
    }
}

/// A batch to persist: the values first, then the next PLog offset.
///
/// Storage must make the values durable before the offset: an offset ahead of its values would
/// let a restart skip events whose numbers storage does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRequest {
    /// Report under this ticket.
    pub ticket: Ticket,
    /// The last number of each key; keys are unique. May be empty.
    pub values: Vec<SeqValue>,
    /// Stored after the values: every event before it has its numbers in the view (after a
    /// flush, the last flushed event's offset, not the one after it; after a replay, the offset
    /// after the last event replayed). A replay after a restart starts at it, that event
    /// included.
    pub next_plog_offset: PLogOffset,
}

/// A storage read `start` needs before it can begin a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadNumbers {
    /// Report with `complete_numbers` or `fail` under this ticket.
    pub ticket: Ticket,
    /// The workspace.
    pub ws: WsId,
    /// The sequences to read, in the order the numbers must come back; 0 for a key never stored.
    pub seqs: Vec<SeqId>,
}

/// A storage read a batch needs before its first event: the stored numbers of every sequence
/// of its kind in each of several workspaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadNumbersMany {
    /// The workspaces, in the order their numbers must come back.
    pub ws: Vec<WsId>,
    /// The sequences to read for each workspace, in order; 0 for a key never stored.
    pub seqs: Vec<SeqId>,
}

/// The outcome of storage work, as a driver reports it (the WIT's `outcome`).
#[derive(Clone, Copy, Debug)]
pub enum Outcome<'a> {
    /// A [`Work::Write`] is durable.
    Written,
    /// A [`Work::ReadNextOffset`] read this offset (0 if none is stored).
    NextOffset(PLogOffset),
    /// A [`Work::ReadPlog`] read this page.
    PlogPage(PlogPage<'a>),
    /// The work failed; the sequencer retries it after a delay if it still needs it.
    Failed,
}

/// The outcome of `start`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    /// The transaction began; the event it numbers goes at this PLog offset.
    Started(PLogOffset),
    /// No transaction began; try again later.
    NotNow(NotNowReason),
    /// No transaction began yet: perform this read and report it with `complete_numbers`,
    /// which then begins the transaction.
    Load(ReadNumbers),
}

/// Why `start` said "not now".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotNowReason {
    /// Actualization is in progress.
    Actualizing,
    /// More values than `max_unflushed_values` wait to be flushed.
    TooManyUnflushed,
}

/// A run of PLog events, as a driver read it for a `ReadPlog` request.
#[derive(Clone, Copy, Debug)]
pub struct PlogPage<'a> {
    /// The values of the events on the page, in offset order; an event's values share its
    /// offset and may repeat a key. Events without values contribute nothing here.
    pub values: &'a [(PLogOffset, SeqValue)],
    /// The offset after the last event the page covers (the requested `from` when the page is
    /// empty). Every event below it has been delivered.
    pub next: PLogOffset,
    /// No event exists at or after `next`: the PLog ends here.
    pub end: bool,
}

/// How far a PLog page was consumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayProgress {
    /// How many of the page's values were consumed; the rest are asked for again later.
    pub consumed: usize,
    /// Actualization finished with this page.
    pub finished: bool,
}

/// The number a sequence of a loaded workspace continues from.
pub(crate) fn continue_from(stored: Number, initial: Number) -> Number {
    stored.max(initial - 1)
}
