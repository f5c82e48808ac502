//! The [`Storage`] contract on etcd: each method runs its work (in `append.rs`, `plog.rs`,
//! `view.rs`) on the store's runtime, the synchronous ones waiting for it on the caller's thread.

use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::next_key;
use crate::store::etcd::plog::PAGE_EVENTS;
use crate::store::storage::StorageFuture;
use crate::store::storage::{
    AppendError, AppendLimits, DamagedEvent, EventBatch, PartitionId, PlogPage, Storage,
    StorageError,
};

impl Storage for EtcdStorage {
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.block(self.clone().numbers_async(partition, ws, seqs.to_vec()))
    }

    fn read_numbers_many(
        &self, partition: PartitionId, ws: &[WsId], seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.block(
            self.clone()
                .numbers_many_async(partition, ws.to_vec(), seqs.to_vec()),
        )
    }

    fn read_next_offset(&self, partition: PartitionId) -> StorageFuture<PLogOffset> {
        let this = self.clone();
        let fut = self.clone().get_u64(
            next_key(partition),
            format!("read the next offset of partition {partition}"),
        );
        self.spawn(async move {
            let stored = fut.await?.unwrap_or_default();
            this.saw_stored_offset(partition, stored);
            Ok(stored)
        })
    }

    fn write(
        &self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
    ) -> StorageFuture<()> {
        self.spawn(self.clone().write_async(partition, values, next_offset))
    }

    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        let this = self.clone();
        self.spawn(async move {
            // One event more than asked for tells whether the PLog ends with the page.
            let want = max_events.min(PAGE_EVENTS - 1);
            let events = this.clone().events_async(partition, from, want + 1).await?;
            let page = PlogPage::of_stored(from, want, events)
                .map_err(|e| this.inner.damage.refuse(&this.inner.label, partition, e))?;
            if page.end {
                // The PLog's tail is read: an append whose outcome was unknown is settled.
                this.inner.fences.settle(partition);
            }
            Ok(page)
        })
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.append_batch(partition, batch)
    }

    fn failure(&self) -> Option<String> {
        self.inner.quorum.failure()
    }

    fn damaged(&self) -> Option<DamagedEvent> {
        self.inner.damage.get()
    }

    fn append_limits(&self) -> AppendLimits {
        self.request_limits()
    }

    /// [`VIEW_WRITE_INTERVAL`](crate::store::etcd::VIEW_WRITE_INTERVAL): every transaction
    /// costs each member about the same CPU whatever its size, and a write puts one key per
    /// workspace it touches, so fewer, larger view writes leave the cluster to the appends.
    fn view_write_interval(&self) -> std::time::Duration {
        crate::store::etcd::VIEW_WRITE_INTERVAL
    }
}
