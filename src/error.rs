//! Every way a caller or driver can misuse a sequencer, as a value instead of a panic.

use crate::params::ParamsError;
use crate::types::{PLogOffset, SeqId, WsKind};
use crate::work::Ticket;

/// A call the sequencer refused. The sequencer's state is unchanged by a refused call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The params given at construction were invalid.
    InvalidParams(ParamsError),
    /// The sequencer was cleaned up; it accepts no further calls.
    CleanedUp,
    /// `start` while a transaction is already in progress.
    TransactionInProgress,
    /// `next` or `flush` without a transaction in progress.
    NoTransaction,
    /// `start` for a workspace kind the params do not define.
    UnknownWsKind(WsKind),
    /// `next` for a sequence the transaction's workspace kind does not define.
    UnknownSeqId {
        /// The kind of the transaction's workspace.
        kind: WsKind,
        /// The sequence asked for.
        seq: SeqId,
    },
    /// `actualize` while actualization is already in progress.
    AlreadyActualizing,
    /// A sequence reached the largest number there is.
    SequenceExhausted {
        /// The kind of the transaction's workspace.
        kind: WsKind,
        /// The exhausted sequence.
        seq: SeqId,
    },
    /// A driver reported the outcome of work the sequencer is not waiting for (already
    /// reported, superseded by `actualize`, or never handed out).
    UnknownTicket(Ticket),
    /// A driver reported the outcome of a ticket with the wrong kind of result.
    WrongResultKind {
        /// The ticket.
        ticket: Ticket,
        /// What the ticket was for.
        expected: &'static str,
    },
    /// A numbers read returned a different count of numbers than sequences asked for.
    MalformedNumbers {
        /// How many sequences were asked for.
        expected: usize,
        /// How many numbers came back.
        got: usize,
    },
    /// A PLog page broke its contract (offsets outside the page or going backwards).
    MalformedPlogPage {
        /// The offset the page was asked from.
        from: PLogOffset,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A numbers read the host performed inside a start failed (the message says why); no
    /// transaction began.
    Storage(String),
    /// An argument is outside what the call accepts (for example a `seq-quad` naming more
    /// than four sequences); the message says which.
    InvalidArgument(String),
    /// A number the transaction issued is beyond what the front-end can represent exactly
    /// (JavaScript's safe integers); the transaction may only be actualized.
    UnsafeInteger(String),
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::InvalidParams(e) => write!(f, "invalid params: {e}"),
            Self::CleanedUp => write!(f, "the sequencer was cleaned up"),
            Self::TransactionInProgress => {
                write!(f, "a sequencing transaction is already in progress")
            }
            Self::NoTransaction => write!(f, "no sequencing transaction is in progress"),
            Self::UnknownWsKind(kind) => write!(f, "unknown workspace kind {kind}"),
            Self::UnknownSeqId { kind, seq } => {
                write!(f, "unknown sequence {seq} for workspace kind {kind}")
            }
            Self::AlreadyActualizing => write!(f, "actualization is already in progress"),
            Self::SequenceExhausted { kind, seq } => {
                write!(f, "sequence {seq} of workspace kind {kind} is exhausted")
            }
            Self::UnknownTicket(t) => write!(f, "no work is outstanding for ticket {}", t.0),
            Self::WrongResultKind { ticket, expected } => write!(
                f,
                "ticket {} was for {expected}, another kind of result was reported",
                ticket.0
            ),
            Self::MalformedNumbers { expected, got } => write!(
                f,
                "numbers read returned {got} numbers for {expected} sequences"
            ),
            Self::MalformedPlogPage { from, reason } => {
                write!(f, "malformed PLog page read from offset {from}: {reason}")
            }
            Self::Storage(message) => write!(f, "storage failed: {message}"),
            Self::InvalidArgument(message) => write!(f, "invalid argument: {message}"),
            Self::UnsafeInteger(message) => f.write_str(message),
        }
    }
}

impl core::error::Error for Error {}

impl From<ParamsError> for Error {
    fn from(e: ParamsError) -> Self {
        Self::InvalidParams(e)
    }
}
