//! Errors of the host, each naming what failed and where.

use crate::runtime::bindings::GuestError;
use crate::store::storage::PartitionId;

/// A host operation failed.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The guest refused the call (misuse or storage failure it reported).
    #[error("sequencer refused the call: {}", describe(.0))]
    Sequencer(GuestError),
    /// The guest trapped; its instance was replaced by a new one that is actualizing.
    #[error("the sequencer of partition {partition} trapped and was restarted: {message}")]
    Trapped {
        /// The partition whose instance trapped.
        partition: PartitionId,
        /// What the trap said.
        message: String,
    },
    /// The partition's sequencer was cleaned up or could not be re-created.
    #[error("the sequencer of partition {0} is closed")]
    Closed(PartitionId),
    /// The component could not be read, compiled or linked.
    #[error("{0}")]
    Component(String),
}

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
