//! The archive's trim of the hot PLog: whole packs below what is archived go by range deletes,
//! and the cluster's history is compacted after a pass so their space can be reused.

use std::sync::atomic::Ordering;

use etcd_client::DeleteOptions;
use sequencer::PLogOffset;

use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{offset_of, plog_key};
use crate::store::reader::StoreReader;
use crate::store::storage::{PartitionId, StorageError};
use crate::store::trim::{Trim, Trimmed};

/// The most PLog keys (packs) one trim request deletes.
const TRIM_KEYS: i64 = 512;

impl Trim for EtcdStorage {
    /// Deletes the PLog keys (packs) of a partition whose events all lie below `below`, the
    /// stored next offset and the PLog's last event, at most 512 keys (`TRIM_KEYS`) per request (one
    /// range delete); a pack holding any event at or past those stays whole.
    fn trim_below(
        &self, partition: PartitionId, below: PLogOffset,
    ) -> Result<Trimmed, StorageError> {
        let Some((first, last)) = self.plog_bounds(partition)? else {
            return Ok(Trimmed::default());
        };
        let stored = self.stored_next_offset(partition)?;
        let end = below.min(stored).min(last);
        let none = Trimmed {
            deleted: 0,
            first_kept: first,
        };
        if end <= first {
            return Ok(none);
        }
        // Keys are packs' last offsets: the keys below `end` hold only events below it.
        let (from, to) = (plog_key(partition, 0), plog_key(partition, end));
        let this = self.clone();
        let opts = self
            .get_options()
            .with_range(to.clone())
            .with_keys_only()
            .with_limit(TRIM_KEYS);
        let what = format!("list PLog keys of partition {partition} to trim");
        let keys = self.block(this.get_retrying(what, from, opts))?;
        let Some(upto) = keys.kvs().last().and_then(|kv| offset_of(kv.key())) else {
            return Ok(none);
        };
        let this = self.clone();
        let (from, to) = (plog_key(partition, 0), plog_key(partition, upto + 1));
        let deleted = self.block(async move {
            this.retrying(
                format!("trim the PLog of partition {partition}"),
                |mut kv| {
                    let (from, to) = (from.clone(), to.clone());
                    async move {
                        kv.delete(from, Some(DeleteOptions::new().with_range(to)))
                            .await
                    }
                },
            )
            .await
        })?;
        if let Some(h) = deleted.header() {
            self.inner
                .stats
                .trim_revision
                .fetch_max(u64::try_from(h.revision()).unwrap_or(0), Ordering::Relaxed);
        }
        Ok(Trimmed {
            deleted: upto + 1 - first,
            first_kept: upto + 1,
        })
    }

    /// Compacts the cluster's history up to the revision of the last trim, so the deleted
    /// packs' space can be reused (defragmentation, which returns it to the file system, is
    /// left to the operator: it blocks a member while it runs).
    fn after_trim(&self) -> Result<Option<String>, StorageError> {
        let rev = i64::try_from(self.inner.stats.trim_revision.load(Ordering::Relaxed))
            .unwrap_or(i64::MAX);
        if rev <= 0 {
            return Ok(None);
        }
        let this = self.clone();
        let outcome = self.block(async move {
            this.retrying(
                format!("compact the history up to revision {rev}"),
                |mut kv| async move { kv.compact(rev, None).await },
            )
            .await
        });
        match outcome {
            Ok(_) => Ok(Some(format!("etcd history compacted up to revision {rev}"))),
            // Compacted already (by another archive pass or the cluster's own compaction).
            Err(e) if e.0.contains("compacted") => Ok(Some(format!(
                "etcd history already compacted past revision {rev}"
            ))),
            Err(e) => Err(e),
        }
    }
}
