//! One consistent state of a redb store, read while its writer goes on: every read of a
//! [`RedbSnapshot`] comes from the same redb read transaction, which sees exactly the commits
//! made before it began and none after (redb's MVCC: the pages it reads are not reused while
//! it lives). What a live run serves to `check` and `inspect` (`store::live`).

use std::path::PathBuf;

use redb::{ReadTransaction, ReadableDatabase};
use sequencer::{Number, PLogOffset, SeqId, WsId};

use crate::store::codec::StoredEvent;
use crate::store::reader::StoreReader;
use crate::store::redb::reads::{
    read_events, read_next, read_partitions, read_plog_bounds, read_view,
};
use crate::store::redb::storage::RedbStorage;
use crate::store::redb::tables::err;
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
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        read_plog_bounds(&self.rx, &self.path, partition)
    }

    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use sequencer::SeqValue;

    use super::*;
    use crate::store::storage::Storage;

    fn append(store: &RedbStorage, offsets: std::ops::RangeInclusive<u64>) {
        for o in offsets {
            store
                .append_event(0, o, &[SeqValue::new(1, 1, o)], b"e")
                .expect("append");
        }
    }

    #[test]
    fn a_snapshot_keeps_reading_the_state_it_began_with_while_the_store_commits() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = RedbStorage::create(&dir.path().join("s.redb")).expect("create");
        append(&store, 1..=3);
        futures::executor::block_on(store.write(0, vec![SeqValue::new(1, 1, 3)], 4))
            .expect("write");
        let snapshot = store.snapshot().expect("snapshot");
        append(&store, 4..=5);
        futures::executor::block_on(store.write(0, vec![SeqValue::new(1, 1, 5)], 6))
            .expect("write");
        // The snapshot: three events, and the view and offset written with them.
        assert_eq!(snapshot.plog_bounds(0).expect("bounds"), Some((1, 3)));
        assert_eq!(snapshot.events(0, 1, 10).expect("events").len(), 3);
        assert_eq!(snapshot.stored_next_offset(0).expect("offset"), 4);
        assert_eq!(snapshot.view(0).expect("view"), vec![(1, 1, 3)]);
        // A new one sees everything.
        let now = store.snapshot().expect("snapshot");
        assert_eq!(now.plog_bounds(0).expect("bounds"), Some((1, 5)));
        assert_eq!(now.stored_next_offset(0).expect("offset"), 6);
    }

    #[test]
    fn a_hold_on_commits_delays_an_append_until_it_is_released() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = RedbStorage::create(&dir.path().join("s.redb")).expect("create");
        let held = store.hold_commits();
        let (done, appended) = mpsc::channel();
        let writer = store.clone();
        let thread = std::thread::spawn(move || {
            let r = writer.append_event(0, 1, &[SeqValue::new(1, 1, 1)], b"e");
            let _ = done.send(r.is_ok());
        });
        assert!(
            appended.recv_timeout(Duration::from_millis(300)).is_err(),
            "no commit while held"
        );
        drop(held);
        assert_eq!(
            appended.recv_timeout(Duration::from_secs(10)),
            Ok(true),
            "the append commits once released"
        );
        thread.join().expect("join");
    }
}
