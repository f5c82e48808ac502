//! Reading the PLog: range reads in pages of at most [`PAGE_EVENTS`] events, as many keys
//! (packs) per request as should hold what is wanted, sized by what earlier reads met; and the
//! PLog's next offset (its end, read as `plog_end` reads it).

use sequencer::PLogOffset;

use crate::store::codec::{StoredEvent, split_pack};
use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{offset_of, plog_key, plog_prefix, prefix_end};
use crate::store::storage::{PartitionId, StorageError};

/// Most PLog events one range read returns (keeps responses well under the client's limit).
pub const PAGE_EVENTS: usize = 1024;

impl EtcdStorage {
    /// The PLog's next offset of `partition` (1 if empty): its last key's, plus one.
    pub(super) async fn next_plog_offset_async(
        self, partition: PartitionId,
    ) -> Result<PLogOffset, StorageError> {
        Ok(self.plog_last_async(partition).await? + 1)
    }

    pub(super) async fn events_async(
        self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        let max = max.min(PAGE_EVENTS);
        let prefix = plog_prefix(partition);
        let mut out: Vec<StoredEvent> = Vec::new();
        let mut start = plog_key(partition, from);
        while out.len() < max {
            // A key holds a pack of events: ask for as many keys as should hold what is still
            // wanted, and no more than keeps the response within the read budget.
            let shape = &self.inner.pack_shape;
            let keys = shape
                .keys_for(max - out.len(), self.inner.config.max_request_bytes)
                .min(PAGE_EVENTS);
            let opts = self
                .get_options()
                .with_range(prefix_end(&prefix))
                .with_limit(i64::try_from(keys).unwrap_or(i64::MAX));
            let resp = self
                .clone()
                .get_retrying(
                    format!("read the PLog of partition {partition} from {from}"),
                    start.clone(),
                    opts,
                )
                .await?;
            let (mut events_read, mut largest, mut last_key) = (0u64, 0u64, 0);
            for kv in resp.kvs() {
                let last = offset_of(kv.key()).ok_or_else(|| {
                    self.err("PLog key is not ours", &String::from_utf8_lossy(kv.key()))
                })?;
                let corrupt = || {
                    self.err(
                        "corrupt PLog event",
                        &format!("partition {partition}, the events up to offset {last}"),
                    )
                };
                let pack = split_pack(kv.value()).ok_or_else(corrupt)?;
                let first = (last + 1)
                    .checked_sub(pack.len() as u64)
                    .ok_or_else(corrupt)?;
                events_read += pack.len() as u64;
                largest = largest.max(kv.value().len() as u64);
                last_key = last;
                for (offset, bytes) in (first..).zip(pack) {
                    if offset < from || out.len() >= max {
                        continue;
                    }
                    // One that fails its checksum comes back flagged: a replay refuses it,
                    // `check` lists it.
                    out.push(StoredEvent::read(offset, bytes).map_err(|_| corrupt())?);
                }
            }
            shape.met(resp.kvs().len(), events_read, largest);
            self.inner.plog_ends.saw(partition, last_key);
            match resp.kvs().last() {
                Some(last) if resp.more() => {
                    let mut next = last.key().to_vec();
                    next.push(0);
                    start = String::from_utf8_lossy(&next).into_owned();
                }
                _ => break,
            }
        }
        Ok(out)
    }
}
