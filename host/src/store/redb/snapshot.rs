//! One consistent state of a redb store, read while its writer goes on: every read of a
//! [`RedbSnapshot`] comes from the same redb read transaction, which sees exactly the commits
//! made before it began and none after (redb's MVCC: the pages it reads are not reused while
//! it lives). What a live run serves to `check` and `inspect` (`store::live`).

use std::path::PathBuf;

use redb::{ReadTransaction, ReadableDatabase};
use sequencer::{Number, PLogOffset, SeqId, WsId};

use crate::store::codec::StoredEvent;
use crate::store::reader::StoreReader;
use crate::store::redb::storage::{
    RedbStorage, err, read_events, read_next, read_partitions, read_plog_bounds, read_view,
};
use crate::store::storage::{PartitionId, StorageError};

/// A redb store as it was when [`RedbStorage::snapshot`] was called, whatever is committed
/// since; see the module's documentation. Holding it keeps the pages it reads from being
/// reused, so the file may grow while it lives: drop it when done.
pub struct RedbSnapshot {
    rx: ReadTransaction,
    path: PathBuf,
}

impl RedbStorage {
    /// The store's committed state now, read as one snapshot.
    pub fn snapshot(&self) -> Result<RedbSnapshot, StorageError> {
        let rx = self
            .database()
            .begin_read()
            .map_err(|e| err(self.path(), "cannot begin a read", e))?;
        Ok(RedbSnapshot {
            rx,
            path: self.path().to_path_buf(),
        })
    }
}

impl StoreReader for RedbSnapshot {
    fn describe(&self) -> String {
        format!("embedded redb {} (one snapshot)", self.path.display())
    }

    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        read_partitions(&self.rx, &self.path)
    }

    fn plog_bounds(
        &self,
        partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        read_plog_bounds(&self.rx, &self.path, partition)
    }

    fn events(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        read_events(&self.rx, &self.path, partition, from, max)
    }

    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        read_next(&self.rx, &self.path, partition)
    }

    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        read_view(&self.rx, &self.path, partition)
    }
}
