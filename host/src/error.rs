//! Errors of the host, each naming what failed and where.

use core::fmt;

use crate::bindings::GuestError;
use crate::storage::PartitionId;

/// A host operation failed.
#[derive(Debug)]
pub enum HostError {
    /// The guest refused the call (misuse or storage failure it reported).
    Sequencer(GuestError),
    /// The guest trapped; its instance was replaced by a new one that is actualizing.
    Trapped {
        /// The partition whose instance trapped.
        partition: PartitionId,
        /// What the trap said.
        message: String,
    },
    /// The partition's sequencer was cleaned up or could not be re-created.
    Closed(PartitionId),
    /// The component could not be read, compiled or linked.
    Component(String),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sequencer(e) => write!(f, "sequencer refused the call: {}", describe(e)),
            Self::Trapped { partition, message } => write!(
                f,
                "the sequencer of partition {partition} trapped and was restarted: {message}"
            ),
            Self::Closed(p) => write!(f, "the sequencer of partition {p} is closed"),
            Self::Component(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for HostError {}

/// A one-line description of a guest error.
pub fn describe(e: &GuestError) -> String {
    match e {
        GuestError::InvalidParams(m) => format!("invalid params: {m}"),
        GuestError::CleanedUp => "the sequencer was cleaned up".into(),
        GuestError::TransactionInProgress => "a transaction is already in progress".into(),
        GuestError::NoTransaction => "no transaction is in progress".into(),
        GuestError::UnknownWsKind(k) => format!("unknown workspace kind {k}"),
        GuestError::UnknownSeqId(r) => {
            format!("unknown sequence {} for workspace kind {}", r.seq, r.kind)
        }
        GuestError::AlreadyActualizing => "actualization is already in progress".into(),
        GuestError::SequenceExhausted(r) => {
            format!(
                "sequence {} of workspace kind {} is exhausted",
                r.seq, r.kind
            )
        }
        GuestError::UnknownOperation(op) => format!("no storage operation {op} is outstanding"),
        GuestError::WrongOutcome(op) => format!("wrong kind of outcome for operation {op}"),
        GuestError::MalformedNumbers(m) | GuestError::MalformedPlogPage(m) => m.clone(),
        GuestError::Storage(m) => format!("storage failed: {m}"),
    }
}
