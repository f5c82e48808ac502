//! Errors of the host, each naming what failed and where.

use crate::runtime::bindings::GuestError;
use crate::store::storage::PartitionId;

/// A host operation failed.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The guest refused the call (misuse or storage failure it reported).
    #[error("sequencer refused the call: {}", .0.describe())]
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

/// A one-line description of a guest error ([`GuestError::describe`]).
pub fn describe(e: &GuestError) -> String {
    e.describe()
}
