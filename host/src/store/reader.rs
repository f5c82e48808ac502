//! The read side of a store: what `check` and `inspect` read, with nothing written.
//!
//! Every backend implements it: the live handles ([`MemoryStorage`](crate::MemoryStorage),
//! [`RedbStorage`](crate::store::redb::RedbStorage), `EtcdStorage`) so that a run can prove
//! what it stored, and [`RedbReader`](crate::store::redb::RedbReader), which opens a data
//! directory read-only (in place, or on a private copy when the store is live or needs crash
//! recovery) so that `check` and `inspect` leave its bytes unchanged.

use sequencer::{Number, PLogOffset, SeqId, WsId};

use crate::store::codec::StoredEvent;
use crate::store::layout::Layout;
use crate::store::storage::{PartitionId, StorageError};

/// Reads a store's partitions, PLogs, stored next offsets and sequences views. Implementations
/// never write: reading a store through this trait leaves it as it was.
pub trait StoreReader {
    /// One line naming the store and how it is read (for example "embedded redb
    /// sequencer-data/store.redb, read-only in place").
    fn describe(&self) -> String;

    /// Partitions that have a PLog or a stored next offset, ascending.
    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError>;

    /// The first and last offsets of a partition's PLog, `None` if it is empty.
    fn plog_bounds(
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError>;

    /// Up to `max` events of a partition's PLog from `from` on, in offset order (a backend may
    /// return fewer than `max` while more exist; an empty answer means none is left).
    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError>;

    /// The stored next PLog offset of a partition (replay starts there), 0 if none.
    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError>;

    /// The sequences view of a partition: (workspace, sequence, last), in key order.
    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError>;

    /// The numbering layout recorded with the store, `None` if it has none.
    fn layout(&self) -> Result<Option<Layout>, StorageError> {
        Ok(None)
    }

    /// Figures about the store as (name, value) pairs, for `inspect` (file size, revision…).
    fn statistics(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Runs the backend's own check of its files, if it has one (redb: its integrity check,
    /// every page's checksum, on a private copy), before anything is read for a check: what it
    /// verified, `None` for a backend without one; an error is one line naming what failed.
    fn verify_integrity(&self) -> Result<Option<String>, StorageError> {
        Ok(None)
    }

    /// Whether this reads the snapshots of a live run that holds the store (which opened it
    /// with its own integrity check); `inspect` then checks nothing itself.
    fn served_by_live_run(&self) -> bool {
        false
    }
}

/// The partitions of a store read in two parts (a hot store and its archive, a PLog and its
/// view): those of either, ascending, each once.
#[cfg(any(feature = "redb", feature = "etcd"))]
pub(crate) fn partitions_of(
    mut first: Vec<PartitionId>, second: impl IntoIterator<Item = PartitionId>,
) -> Vec<PartitionId> {
    first.extend(second);
    first.sort_unstable();
    first.dedup();
    first
}

/// A borrowed reader reads as the reader itself (so a `&dyn StoreReader` can be wrapped).
impl<T: StoreReader + ?Sized> StoreReader for &T {
    fn describe(&self) -> String {
        (**self).describe()
    }

    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        (**self).partitions()
    }

    fn plog_bounds(
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        (**self).plog_bounds(partition)
    }

    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        (**self).events(partition, from, max)
    }

    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        (**self).stored_next_offset(partition)
    }

    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        (**self).view(partition)
    }

    fn layout(&self) -> Result<Option<Layout>, StorageError> {
        (**self).layout()
    }

    fn statistics(&self) -> Vec<(String, String)> {
        (**self).statistics()
    }

    fn verify_integrity(&self) -> Result<Option<String>, StorageError> {
        (**self).verify_integrity()
    }

    fn served_by_live_run(&self) -> bool {
        (**self).served_by_live_run()
    }
}
