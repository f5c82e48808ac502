//! [`TailProbe`] on etcd: the stored offset and the PLog's last key of a partition in one
//! read-only transaction (one round trip, one revision), which proves an
//! [`OwnTail`](crate::store::layers::OwnTail)'s kept tail current.

use etcd_client::{SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse};
use futures::future::BoxFuture;

use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{next_key, offset_of, parse_u64, plog_prefix, prefix_end};
use crate::store::layers::{Offsets, TailProbe};
use crate::store::storage::{PartitionId, StorageError};

impl TailProbe for EtcdStorage {
    fn read_offsets(
        &self,
        partition: PartitionId,
    ) -> BoxFuture<'static, Result<Offsets, StorageError>> {
        self.spawn(self.clone().offsets_async(partition))
    }
}

impl EtcdStorage {
    async fn offsets_async(self, partition: PartitionId) -> Result<Offsets, StorageError> {
        let prefix = plog_prefix(partition);
        let last_key = self
            .get_options()
            .with_range(prefix_end(&prefix))
            .with_sort(SortTarget::Key, SortOrder::Descend)
            .with_limit(1)
            .with_keys_only();
        let txn = Txn::new().and_then(vec![
            TxnOp::get(next_key(partition), Some(self.get_options())),
            TxnOp::get(prefix, Some(last_key)),
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
        let last = match answers.next().flatten() {
            None => 0,
            Some((key, _)) => offset_of(&key).ok_or_else(|| {
                self.err(
                    &what,
                    &format!("PLog key is not ours: {}", String::from_utf8_lossy(&key)),
                )
            })?,
        };
        Ok(Offsets {
            stored,
            plog_next: last + 1,
        })
    }
}
