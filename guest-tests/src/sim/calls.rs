//! The calls of the WIT contract as the simulator makes them, what they return, and the
//! [`Engine`] interface both engines (the native shell and the component) answer them through.

use core::fmt;

use sequencer::{HeldNumbers, NotNowReason, PLogOffset, SeqValue, Status};
use sequencer_host::runtime::GuestError;

use super::io::Io;

/// True if the engines hand a PLog page of operation `op` over in the flat layout
/// (`deliver-plog-words`, [`PlogWords`](sequencer::PlogWords)) rather than as records (`deliver`): odd operations
/// do, even ones do not, so every simulation replays through both layouts and compares them.
pub fn flat_layout(op: u64) -> bool {
    op % 2 == 1
}

/// The outcome of a storage operation, as `deliver` takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The write is durable.
    Written,
    /// The stored next PLog offset.
    NextOffset(u64),
    /// PLog events read.
    PlogPage {
        /// The values with their events' offsets.
        values: Vec<(PLogOffset, SeqValue)>,
        /// The offset after the last event read.
        next: PLogOffset,
        /// No event exists at or after `next`.
        end: bool,
    },
    /// The operation failed.
    Failed(String),
}

/// A WIT `seq-quad`: the first `count` of `seqs` (a count above 4 is refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quad {
    /// How many of `seqs` are named.
    pub count: u8,
    /// The sequences.
    pub seqs: [u16; 4],
}

impl Quad {
    /// The quad naming `seqs` (at most 4).
    pub fn of(seqs: &[u16]) -> Self {
        let mut q = Self {
            count: seqs.len().min(4) as u8,
            seqs: [0; 4],
        };
        q.seqs[..usize::from(q.count)].copy_from_slice(&seqs[..usize::from(q.count)]);
        q
    }

    /// The sequences named, or `None` if the count is above 4.
    pub fn named(&self) -> Option<&[u16]> {
        self.seqs.get(..usize::from(self.count))
    }
}

/// The reply of `start-batch` and `flush-start-batch`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchReply {
    /// The offset of the first event started.
    pub first_offset: PLogOffset,
    /// How many events were started and staged.
    pub started: u32,
    /// Why the next event was not started, if one was not.
    pub not_now: Option<NotNowReason>,
    /// `count` numbers per started event.
    pub numbers: Vec<u64>,
}

/// One call of the WIT `sequencer` resource (`create` is [`boot`](super::engine::boot)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `start`.
    Start {
        /// Workspace kind.
        kind: u16,
        /// Workspace.
        ws: u64,
    },
    /// `start-next`.
    StartNext {
        /// Workspace kind.
        kind: u16,
        /// Workspace.
        ws: u64,
        /// The sequences to take a number of.
        seqs: Vec<u16>,
    },
    /// `flush-start-next`.
    FlushStartNext {
        /// Workspace kind.
        kind: u16,
        /// Workspace.
        ws: u64,
        /// The sequences to take a number of.
        seqs: Vec<u16>,
    },
    /// `start-next-quad`.
    StartNextQuad {
        /// Workspace kind.
        kind: u16,
        /// Workspace.
        ws: u64,
        /// The sequences to take a number of.
        seqs: Quad,
    },
    /// `flush-start-next-quad`.
    FlushStartNextQuad {
        /// Workspace kind.
        kind: u16,
        /// Workspace.
        ws: u64,
        /// The sequences to take a number of.
        seqs: Quad,
    },
    /// `stage`.
    Stage,
    /// `start-batch`.
    StartBatch {
        /// Workspace kind.
        kind: u16,
        /// One event per workspace.
        ws: Vec<u64>,
        /// The sequences each event takes a number of.
        seqs: Quad,
    },
    /// `flush-start-batch`.
    FlushStartBatch {
        /// Workspace kind.
        kind: u16,
        /// One event per workspace.
        ws: Vec<u64>,
        /// The sequences each event takes a number of.
        seqs: Quad,
    },
    /// `next`.
    Next {
        /// The sequence.
        seq: u16,
    },
    /// `flush`.
    Flush,
    /// `actualize`.
    Actualize,
    /// `actualize-beside-write`.
    ActualizeBesideWrite,
    /// `cleanup`.
    Cleanup,
    /// `status`.
    Status,
    /// `held-numbers`.
    HeldNumbers,
    /// `deliver`.
    Deliver {
        /// The operation id.
        op: u64,
        /// Its outcome.
        outcome: Delivery,
    },
    /// `pump`.
    Pump,
}

/// The outcome of a successful `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Started {
    /// The transaction began at this PLog offset.
    Offset(PLogOffset),
    /// Not now.
    NotNow(NotNowReason),
}

/// A call the sequencer refused: the WIT `error` variant, comparable across engines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Invalid params. (The text is left out: which rule is reported first depends on hash
    /// map order, which differs between engines.)
    InvalidParams,
    /// Cleaned up.
    CleanedUp,
    /// `start` during a transaction.
    TransactionInProgress,
    /// `next`/`flush` without a transaction.
    NoTransaction,
    /// Unknown workspace kind.
    UnknownWsKind(u16),
    /// Unknown sequence of the transaction's kind.
    UnknownSeqId {
        /// Kind.
        kind: u16,
        /// Sequence.
        seq: u16,
    },
    /// `actualize` while actualizing.
    AlreadyActualizing,
    /// A sequence reached `u64::MAX`.
    SequenceExhausted {
        /// Kind.
        kind: u16,
        /// Sequence.
        seq: u16,
    },
    /// `deliver` for no outstanding operation.
    UnknownOperation(u64),
    /// `deliver` with the wrong kind of outcome.
    WrongOutcome(u64),
    /// `read-numbers` returned the wrong count.
    MalformedNumbers(String),
    /// A PLog page broke its contract.
    MalformedPlogPage(String),
    /// `read-numbers` failed.
    Storage(String),
}

/// The refusal as the simulator compares it; the WIT error's one mapping to the core's is
/// `GuestError`'s own (`sequencer_host`'s `runtime::guest_error`), which the native engine
/// goes through as well.
impl From<GuestError> for Refusal {
    fn from(e: GuestError) -> Self {
        match e {
            GuestError::InvalidParams(_) => Refusal::InvalidParams,
            GuestError::CleanedUp => Refusal::CleanedUp,
            GuestError::TransactionInProgress => Refusal::TransactionInProgress,
            GuestError::NoTransaction => Refusal::NoTransaction,
            GuestError::UnknownWsKind(k) => Refusal::UnknownWsKind(k),
            GuestError::UnknownSeqId(r) => Refusal::UnknownSeqId {
                kind: r.kind,
                seq: r.seq,
            },
            GuestError::AlreadyActualizing => Refusal::AlreadyActualizing,
            GuestError::SequenceExhausted(r) => Refusal::SequenceExhausted {
                kind: r.kind,
                seq: r.seq,
            },
            GuestError::UnknownOperation(op) => Refusal::UnknownOperation(op),
            GuestError::WrongOutcome(op) => Refusal::WrongOutcome(op),
            GuestError::MalformedNumbers(m) => Refusal::MalformedNumbers(m),
            GuestError::MalformedPlogPage(m) => Refusal::MalformedPlogPage(m),
            GuestError::Storage(m) => Refusal::Storage(m),
        }
    }
}

/// What a call returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// From `start`.
    Start(Result<Started, Refusal>),
    /// From `start-next`, `flush-start-next`.
    StartNext(Result<(Started, Vec<u64>), Refusal>),
    /// From `start-next-quad`, `flush-start-next-quad`: the outcome and the four places.
    Quad(Result<(Started, [u64; 4]), Refusal>),
    /// From `start-batch`, `flush-start-batch`.
    Batch(Result<BatchReply, Refusal>),
    /// From `next`.
    Number(Result<u64, Refusal>),
    /// From `flush`, `actualize`, `deliver`, `stage`.
    Done(Result<(), Refusal>),
    /// From `status`.
    Status(Status),
    /// From `held-numbers`.
    Held(HeldNumbers),
    /// From `cleanup`, `pump`.
    Nothing,
}

/// An engine failed in a way no call may: a bug, not a refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineFault {
    /// The component trapped (a guest panic, running out of fuel or memory, a bad import).
    Trap(String),
    /// Native code panicked.
    Panic(String),
    /// The two engines of a [`Lockstep`](super::engine::Lockstep) disagreed.
    Divergence {
        /// The call.
        call: String,
        /// What the native core returned and asked for.
        native: String,
        /// What the component returned and asked for.
        component: String,
    },
}

impl fmt::Display for EngineFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Trap(m) => write!(f, "the component trapped: {m}"),
            Self::Panic(m) => write!(f, "native code panicked: {m}"),
            Self::Divergence {
                call,
                native,
                component,
            } => write!(
                f,
                "engines diverged on {call}:\n    native:    {native}\n    component: {component}"
            ),
        }
    }
}

/// A sequencer the simulator can drive: one call at a time, against an [`Io`].
pub trait Engine {
    /// Performs one call.
    fn call(&mut self, call: &Call, io: &mut Io) -> Result<Reply, EngineFault>;

    /// The most linear memory the engine's instance has grown to, in bytes (component only).
    fn memory_peak(&self) -> Option<usize> {
        None
    }
}
