//! [`TailProbe`] on etcd: the stored offset and the PLog's last key of a partition in one
//! read-only transaction (one round trip, one revision; the end read from the last key this
//! store has seen, see `plog_end`), which proves an
//! [`OwnTail`](crate::store::layers::OwnTail)'s kept tail current.

use etcd_client::{Txn, TxnOp, TxnOpResponse};
use sequencer::PLogOffset;

use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{next_key, parse_u64};
use crate::store::etcd::plog_end::LastKeyRead;
use crate::store::storage::StorageFuture;
use crate::store::storage::{PartitionId, StorageError};
use crate::store::tail_probe::{Offsets, TailProbe};

impl TailProbe for EtcdStorage {
    fn read_offsets(&self, partition: PartitionId) -> StorageFuture<Offsets> {
        self.spawn(self.clone().offsets_async(partition))
    }

    fn tenure(&self, partition: PartitionId) -> u64 {
        self.inner.fences.tenure(partition)
    }
}

impl EtcdStorage {
    async fn offsets_async(self, partition: PartitionId) -> Result<Offsets, StorageError> {
        self.clone().hint_plog_end(partition).await?;
        let hinted = self.last_key_read(partition);
        let (mut stored, mut last) = self.clone().offsets_read(partition, &hinted).await?;
        if last.is_none() {
            let whole = self.last_key_read_from(partition, 0);
            (stored, last) = self.offsets_read(partition, &whole).await?;
        }
        Ok(Offsets {
            stored,
            plog_next: last.unwrap_or(0) + 1,
        })
    }

    /// One read-only transaction: the stored offset and `last`'s read of the PLog's last
    /// offset (`None` if a hinted read found no key: to be read again over the whole PLog).
    async fn offsets_read(
        self, partition: PartitionId, last: &LastKeyRead,
    ) -> Result<(PLogOffset, Option<PLogOffset>), StorageError> {
        let txn = Txn::new().and_then(vec![
            TxnOp::get(next_key(partition), Some(self.get_options())),
            TxnOp::get(last.start.clone(), Some(last.options.clone())),
        ]);
        let what = format!("read the stored offset and the PLog end of partition {partition}");
        let resp = self
            .clone()
            .retrying(what.clone(), |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await?;
        let mut answers = resp.op_responses().into_iter().map(|r| match r {
            TxnOpResponse::Get(g) => g
                .kvs()
                .first()
                .map(|kv| (kv.key().to_vec(), kv.value().to_vec())),
            _ => None,
        });
        let stored = match answers.next().flatten() {
            None => 0,
            Some((_, value)) => parse_u64(&value)
                .ok_or_else(|| self.err(&what, "the stored offset is not a number"))?,
        };
        self.saw_stored_offset(partition, stored);
        let key = answers.next().flatten().map(|(key, _)| key);
        Ok((
            stored,
            self.last_key_found(partition, last, key.as_deref())?,
        ))
    }
}
