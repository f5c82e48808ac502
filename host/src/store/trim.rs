//! The trim contract: what the archive layer needs of a hot store whose oldest PLog events may
//! go once they are archived ([`Trim`]), and what one trim did ([`Trimmed`]). A capability
//! beside [`Storage`](crate::Storage): each backend that can trim implements it in its own folder
//! (redb, etcd), and the archive layer uses it without knowing which.

use sequencer::PLogOffset;

use crate::store::reader::StoreReader;
use crate::store::storage::{PartitionId, StorageError};

/// What one trim did to a partition's PLog.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trimmed {
    /// Events deleted.
    pub deleted: u64,
    /// The first offset the PLog still holds afterwards (its next offset if it is empty).
    pub first_kept: PLogOffset,
}

/// A hot store whose oldest PLog events may be trimmed: what `archive` needs of a backend.
pub trait Trim: StoreReader + Send + Sync {
    /// Deletes some of the partition's oldest PLog events below `below`, durably, never at
    /// or past the stored next offset nor the partition's last event; returns what it did
    /// (0 deleted when nothing more can go).
    fn trim_below(
        &self, partition: PartitionId, below: PLogOffset,
    ) -> Result<Trimmed, StorageError>;

    /// Work after a pass that trimmed something (etcd: compacting its history).
    fn after_trim(&self) -> Result<Option<String>, StorageError> {
        Ok(None)
    }
}
