//! Reading the PLog: range reads in pages of at most [`PAGE_EVENTS`] events, as many keys
//! (packs) per request as should hold what is wanted, sized by what earlier reads met; and the
//! PLog's end (its last key).

use std::sync::atomic::{AtomicU64, Ordering};

use etcd_client::{SortOrder, SortTarget};
use sequencer::PLogOffset;

use crate::store::codec::{StoredEvent, decode_event, split_pack};
use crate::store::etcd::EtcdStorage;
use crate::store::etcd::keys::{offset_of, plog_key, plog_prefix, prefix_end};
use crate::store::storage::{PartitionId, StorageError};

/// Most PLog events one range read returns (keeps responses well under the client's limit).
pub const PAGE_EVENTS: usize = 1024;

/// The most a PLog range read asks for, in stored bytes (keys × the largest value seen), well
/// under the client's response limit.
const READ_BUDGET_BYTES: usize = 16 * 1024 * 1024;

/// What PLog reads have met, to size the next read: events per key (last read) and the
/// largest value (ever; 0 before the first read).
pub(super) struct PackShape {
    events_per_key: AtomicU64,
    largest_value: AtomicU64,
}

impl PackShape {
    /// Before any read: one event per key, the largest value not known yet.
    pub(super) fn new() -> Self {
        Self {
            events_per_key: AtomicU64::new(1),
            largest_value: AtomicU64::new(0),
        }
    }
}

impl EtcdStorage {
    pub(super) async fn next_plog_offset_async(
        self,
        partition: PartitionId,
    ) -> Result<PLogOffset, StorageError> {
        let prefix = plog_prefix(partition);
        let opts = self
            .get_options()
            .with_range(prefix_end(&prefix))
            .with_sort(SortTarget::Key, SortOrder::Descend)
            .with_limit(1);
        let resp = self
            .clone()
            .retrying(
                format!("read the PLog end of partition {partition}"),
                |mut kv| {
                    let (prefix, opts) = (prefix.clone(), opts.clone());
                    async move { kv.get(prefix, Some(opts)).await }
                },
            )
            .await?;
        Ok(resp
            .kvs()
            .first()
            .and_then(|kv| offset_of(kv.key()))
            .unwrap_or(0)
            + 1)
    }

    pub(super) async fn events_async(
        self,
        partition: PartitionId,
        from: PLogOffset,
        max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        let max = max.min(PAGE_EVENTS);
        let prefix = plog_prefix(partition);
        let mut out: Vec<StoredEvent> = Vec::new();
        let mut start = plog_key(partition, from);
        while out.len() < max {
            // A key holds a pack of events: ask for as many keys as should hold what is still
            // wanted, and no more than keeps the response within READ_BUDGET_BYTES.
            let shape = &self.inner.pack_shape;
            let per_key = shape.events_per_key.load(Ordering::Relaxed).max(1);
            // Until a read has seen one, a value may be as large as a request.
            let key_bytes = match shape.largest_value.load(Ordering::Relaxed) {
                0 => self.inner.config.max_request_bytes as u64,
                seen => seen,
            };
            let keys = (max - out.len())
                .div_ceil(usize::try_from(per_key).unwrap_or(1))
                .min(READ_BUDGET_BYTES / usize::try_from(key_bytes).unwrap_or(usize::MAX))
                .clamp(1, PAGE_EVENTS);
            let opts = self
                .get_options()
                .with_range(prefix_end(&prefix))
                .with_limit(i64::try_from(keys).unwrap_or(i64::MAX));
            let resp = self
                .clone()
                .retrying(
                    format!("read the PLog of partition {partition} from {from}"),
                    |mut kv| {
                        let (start, opts) = (start.clone(), opts.clone());
                        async move { kv.get(start, Some(opts)).await }
                    },
                )
                .await?;
            let (mut events_read, mut largest) = (0u64, 0u64);
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
                for (offset, bytes) in (first..).zip(pack) {
                    if offset < from || out.len() >= max {
                        continue;
                    }
                    let (values, payload) = decode_event(bytes).ok_or_else(corrupt)?;
                    out.push(StoredEvent {
                        offset,
                        values,
                        payload: payload.to_vec(),
                    });
                }
            }
            if let Some(n) = events_read.checked_div(resp.kvs().len() as u64) {
                shape.events_per_key.store(n.max(1), Ordering::Relaxed);
                shape.largest_value.fetch_max(largest, Ordering::Relaxed);
            }
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
