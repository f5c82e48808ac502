//! The PLog's end (its last key), read from a hint so that the read costs the keys near the end
//! and not every key of the partition.
//!
//! etcd has no reverse scan: a range read sorted by key descending fetches every key of the
//! range (values too) and sorts them before its limit applies, so "the last key under
//! `plog/P/`" cost as many keys as the partition holds (34,061 keys: 90-140 ms, against
//! 20-40 ms for an ascending read). The store remembers, for each partition, an offset the
//! PLog's last key is at or after: the last PLog key it has seen (its own appends, every read
//! of the end, the keys PLog reads return), or the stored next offset less one (the view's
//! offset is written after the events it covers). Keys at the end of a PLog are never deleted
//! (a trim removes old keys and keeps the last; a pack key is named by its last offset), so
//! the descending read ranges only from there. Before a first hint the stored offset is read
//! (one small read instead of every key). A hinted range that comes back empty (the store was
//! wiped or rebuilt under a running host) is read again over the whole partition.

use etcd_client::{GetOptions, SortOrder, SortTarget};
use sequencer::PLogOffset;

use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{next_key, offset_of, plog_key, plog_prefix, prefix_end};
use crate::store::storage::{PartitionId, StorageError};

/// A read of the last PLog key of a partition, from a hint: the start key and its options
/// (keys only, descending, one key). Reading from `hint` 0 reads the whole PLog.
pub(super) struct LastKeyRead {
    /// The offset the range starts at (0: the whole PLog).
    pub(super) hint: PLogOffset,
    pub(super) start: String,
    pub(super) options: GetOptions,
}

impl EtcdStorage {
    /// `partition`'s stored next offset is `stored`: its PLog holds the events before it.
    pub(super) fn saw_stored_offset(&self, partition: PartitionId, stored: PLogOffset) {
        self.inner
            .plog_ends
            .saw(partition, stored.saturating_sub(1));
    }

    /// Before a first read of `partition`'s PLog end: its stored next offset read as the hint,
    /// so that the read of the end does not range over the whole PLog (once: a partition with
    /// no stored offset keeps hint 0).
    pub(super) async fn hint_plog_end(self, partition: PartitionId) -> Result<(), StorageError> {
        if self.inner.plog_ends.hint(partition).is_none() {
            let stored = self
                .clone()
                .get_u64(
                    next_key(partition),
                    format!("read the next offset of partition {partition}"),
                )
                .await?;
            self.saw_stored_offset(partition, stored.unwrap_or(0));
        }
        Ok(())
    }

    /// The read of `partition`'s last PLog key, from its hint.
    pub(super) fn last_key_read(&self, partition: PartitionId) -> LastKeyRead {
        let hint = self.inner.plog_ends.hint(partition).unwrap_or(0);
        self.last_key_read_from(partition, hint)
    }

    /// The read of `partition`'s last PLog key among the keys from `hint` on.
    pub(super) fn last_key_read_from(
        &self, partition: PartitionId, hint: PLogOffset,
    ) -> LastKeyRead {
        let prefix = plog_prefix(partition);
        let options = self
            .get_options()
            .with_range(prefix_end(&prefix))
            .with_sort(SortTarget::Key, SortOrder::Descend)
            .with_limit(1)
            .with_keys_only();
        let start = if hint == 0 {
            prefix
        } else {
            plog_key(partition, hint)
        };
        LastKeyRead {
            hint,
            start,
            options,
        }
    }

    /// What a [`LastKeyRead`] returned: `Some(last offset)` (0: the PLog is empty), or `None`
    /// when a hinted read found nothing, which must be read again over the whole PLog. Records
    /// what it found as the next hint.
    pub(super) fn last_key_found(
        &self, partition: PartitionId, read: &LastKeyRead, key: Option<&[u8]>,
    ) -> Result<Option<PLogOffset>, StorageError> {
        let Some(key) = key else {
            if read.hint == 0 {
                return Ok(Some(0));
            }
            self.inner.plog_ends.forget(partition);
            return Ok(None);
        };
        let last = offset_of(key).ok_or_else(|| {
            self.err(
                &format!("read the PLog end of partition {partition}"),
                &format!("PLog key is not ours: {}", String::from_utf8_lossy(key)),
            )
        })?;
        self.inner.plog_ends.saw(partition, last);
        Ok(Some(last))
    }

    /// The last offset of `partition`'s PLog (0 if empty): the hinted read, and the whole PLog
    /// if the hint found nothing.
    pub(super) async fn plog_last_async(
        self, partition: PartitionId,
    ) -> Result<PLogOffset, StorageError> {
        self.clone().hint_plog_end(partition).await?;
        let hinted = self.last_key_read(partition);
        if let Some(last) = self.clone().run_last_key_read(partition, &hinted).await? {
            return Ok(last);
        }
        let whole = self.last_key_read_from(partition, 0);
        Ok(self
            .run_last_key_read(partition, &whole)
            .await?
            .unwrap_or(0))
    }

    /// Sends one [`LastKeyRead`] (with the store's retries); as [`Self::last_key_found`].
    async fn run_last_key_read(
        self, partition: PartitionId, read: &LastKeyRead,
    ) -> Result<Option<PLogOffset>, StorageError> {
        let what = format!("read the PLog end of partition {partition}");
        let resp = self
            .clone()
            .get_retrying(what, read.start.clone(), read.options.clone())
            .await?;
        self.last_key_found(partition, read, resp.kvs().first().map(|kv| kv.key()))
    }
}
