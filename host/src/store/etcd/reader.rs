//! The read side ([`StoreReader`]): what `check` and `inspect` read, and the partitions a store
//! holds (found by skip-scanning the PLog, one read per partition).

use sequencer::{Number, PLogOffset, SeqId, WsId};

use crate::store::codec::StoredEvent;
use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{next_key, offset_of, plog_prefix, prefix_end};
#[cfg(doc)]
use crate::store::etcd::plog::PAGE_EVENTS;
use crate::store::layout::Layout;
use crate::store::reader::{StoreReader, partitions_of};
use crate::store::storage::{PartitionId, StorageError};

impl EtcdStorage {
    async fn partitions_async(self) -> Result<Vec<PartitionId>, StorageError> {
        // next/<p> keys.
        let opts = self.get_options().with_range(prefix_end("next/"));
        let resp = (self.clone())
            .get_retrying("list partitions".into(), "next/", opts)
            .await?;
        let stored: Vec<PartitionId> = (resp.kvs().iter())
            .filter_map(|kv| offset_of(kv.key()).and_then(|p| u32::try_from(p).ok()))
            .collect();
        // Skip-scan the PLog: one read per partition.
        let mut with_plog = Vec::new();
        let mut start = "plog/".to_string();
        loop {
            let opts = self
                .get_options()
                .with_range(prefix_end("plog/"))
                .with_limit(1);
            let resp = (self.clone())
                .get_retrying("list partitions".into(), start.clone(), opts)
                .await?;
            let Some(kv) = resp.kvs().first() else { break };
            let key = String::from_utf8_lossy(kv.key()).into_owned();
            let Some(p) = key.split('/').nth(1).and_then(|p| p.parse::<u32>().ok()) else {
                return Err(self.err("PLog key is not ours", &key));
            };
            with_plog.push(p);
            start = String::from_utf8_lossy(&prefix_end(&plog_prefix(p))).into_owned();
        }
        Ok(partitions_of(stored, with_plog))
    }
}

impl StoreReader for EtcdStorage {
    fn describe(&self) -> String {
        self.label().to_string()
    }

    fn layout(&self) -> Result<Option<Layout>, StorageError> {
        self.read_layout()
    }

    /// Partitions that have a PLog or a stored next offset, ascending.
    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        self.block(self.clone().partitions_async())
    }

    /// The first and last offsets of a partition's PLog, `None` if it is empty.
    fn plog_bounds(
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        let first = self.events(partition, 0, 1)?.first().map(|e| e.offset);
        let Some(first) = first else { return Ok(None) };
        let next = self.block(self.clone().next_plog_offset_async(partition))?;
        Ok(Some((first, next - 1)))
    }

    /// Up to `max` events of a partition's PLog from `from` on (at most [`PAGE_EVENTS`] per
    /// call), in offset order.
    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        self.block(self.clone().events_async(partition, from, max))
    }

    /// The stored next PLog offset of a partition, 0 if none.
    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        self.block(self.clone().get_u64(
            next_key(partition),
            format!("read the next offset of partition {partition}"),
        ))
        .map(Option::unwrap_or_default)
    }

    /// The sequences view of a partition: (workspace, sequence, last), in key order.
    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        self.block(self.clone().view_async(partition))
    }
}
