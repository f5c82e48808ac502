//! Appends: one fenced transaction per part of a batch (see "The fence" and "Ambiguous
//! outcomes" in the module's doc), a batch split to fit the cluster's request limit; parts of
//! several partitions sent together when they wait at once (`combine.rs`).

use std::sync::atomic::Ordering;

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use sequencer::PLogOffset;

use crate::store::codec::encode_pack;
use crate::store::etcd::combine_queue::Combined;
use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{owner_key, plog_key, plog_prefix, prefix_end};
use crate::store::etcd::ownership::fences::Fence;
use crate::store::storage::{AppendError, AppendLimits, EventBatch, PartitionId};

/// The most events one PLog key (one append transaction) holds.
pub const PACK_MAX_EVENTS: usize = 1024;

/// Room in an append request for the key, the compares, the else branch and gRPC framing.
pub(super) const REQUEST_HEADROOM_BYTES: usize = 16 * 1024;

impl EtcdStorage {
    /// Appends `batch` (see
    /// [`Storage::append_events`](crate::store::storage::Storage::append_events)) in parts that
    /// each fit one request, in order, each one fenced transaction.
    pub(super) fn append_batch(
        &self, partition: PartitionId, batch: &EventBatch,
    ) -> Result<(), AppendError> {
        let limits = self.request_limits();
        if self.inner.fences.unsettled(partition) {
            return Err(AppendError::Storage(self.err(
                &format!("append at partition {partition} offset {}", batch.first()),
                "an earlier append's outcome is unknown: the PLog's tail is read first (actualize)",
            )));
        }
        batch.append_in_parts(limits, |part| {
            if part.encoded_len() > limits.max_bytes {
                // One event alone over this store's own limit: refused here, before etcd would
                // refuse the request (which would mean the limits disagree, see `too_large`).
                return Err(AppendError::Storage(self.err(
                    &format!(
                        "append at partition {partition} offset {}",
                        part.first()
                    ),
                    &format!(
                        "the event is {} bytes, more than one request of this store takes ({} bytes)",
                        part.encoded_len(),
                        limits.max_bytes
                    ),
                )));
            }
            let pack = encode_pack(part.iter().map(|(_, e)| e));
            let appended = self.block(self.clone().append_part_async(
                partition,
                part.first(),
                part.next() - 1,
                pack,
            ));
            if let Err(AppendError::Storage(_)) = &appended {
                // Whether it was written is unknown: settled by reading the PLog's tail.
                self.inner.fences.unsettle(partition);
            }
            appended
        })
    }

    /// What one append request takes: at most [`PACK_MAX_EVENTS`] events, and the cluster's
    /// request limit less what the request needs beside the events.
    pub(super) fn request_limits(&self) -> AppendLimits {
        // The pack's lengths, the key, the compares, the else branch and gRPC framing take at
        // most this much beside the events.
        let overhead = 4 * PACK_MAX_EVENTS + REQUEST_HEADROOM_BYTES;
        AppendLimits {
            max_events: PACK_MAX_EVENTS,
            max_bytes: self
                .inner
                .config
                .max_request_bytes
                .saturating_sub(overhead)
                .max(1),
        }
    }

    /// One fenced append transaction: stores the events from `first` to `last` (encoded as
    /// one value, `pack`) under `last`'s key if `first` is the PLog's next offset, else nothing.
    async fn append_part_async(
        self, partition: PartitionId, first: PLogOffset, last: PLogOffset, pack: Vec<u8>,
    ) -> Result<(), AppendError> {
        if first == 0 {
            return Err(AppendError::WrongOffset {
                expected: self
                    .clone()
                    .next_plog_offset_async(partition)
                    .await
                    .map_err(AppendError::Storage)?,
                offered: 0,
            });
        }
        let stats = &self.inner.stats;
        let fence = self.inner.fences.check(partition).map_err(|r| {
            stats.not_sent.fetch_add(1, Ordering::Relaxed);
            AppendError::NotOwner {
                partition,
                epoch: r.epoch,
                why: r.why,
            }
        })?;
        let part = AppendPart {
            partition,
            first,
            last,
            key: plog_key(partition, last),
            pack,
        };
        let prefix = plog_prefix(partition);
        // The fence: no key at or after `first` (no event there: a key holds the events up to
        // its offset), and a key at `first - 1` (the PLog ends exactly there).
        let mut when = vec![
            Compare::create_revision(plog_key(partition, first), CompareOp::Equal, 0)
                .with_range(prefix_end(&prefix)),
        ];
        if first > 1 {
            when.push(Compare::create_revision(
                plog_key(partition, first - 1),
                CompareOp::Greater,
                0,
            ));
        }
        let mut owner_read = Vec::new();
        let epoch = epoch_compare(partition, fence, &mut when, &mut owner_read);
        // With the other partitions' appends waiting now, in one transaction (`combine.rs`);
        // on its own below only if that one did not say "written".
        let put = TxnOp::put(part.key.clone(), part.pack.clone(), None);
        let ambiguous = match self
            .append_combined(when.clone(), put, part.key.len() + part.pack.len())
            .await
        {
            Combined::Written => {
                self.appended(&part);
                return Ok(());
            }
            Combined::NotWritten => false,
            Combined::Unknown => true,
        };
        self.append_alone(part, when, owner_read, epoch, ambiguous)
            .await
    }

    /// `part` appended on its own under the compares `when`, with the else branch that says why
    /// it was not written (`owner_read` at its end for the partition's `epoch`, if owned);
    /// `ambiguous`: an earlier attempt's outcome is unknown, so the events found stored may be
    /// this writer's own.
    async fn append_alone(
        self, part: AppendPart, when: Vec<Compare>, owner_read: Vec<TxnOp>, epoch: Option<u64>,
        ambiguous: bool,
    ) -> Result<(), AppendError> {
        let stats = &self.inner.stats;
        let AppendPart {
            partition,
            first,
            last,
            ..
        } = part;
        let end_read = self.last_key_read(partition);
        let mut otherwise = vec![
            TxnOp::get(part.key.clone(), None),
            TxnOp::get(end_read.start.clone(), Some(end_read.options.clone())),
        ];
        otherwise.extend(owner_read);
        let txn = Txn::new()
            .when(when)
            .and_then(vec![TxnOp::put(part.key.clone(), part.pack.clone(), None)])
            .or_else(otherwise);
        let mut attempts = 0u32;
        let count = last + 1 - first;
        let what = if count == 1 {
            format!("append at partition {partition} offset {first}")
        } else {
            format!("append at partition {partition} offset {first} ({count} events, to {last})")
        };
        let resp = self
            .clone()
            .retrying(what, |mut kv| {
                attempts += 1;
                stats.txns.fetch_add(1, Ordering::Relaxed);
                stats.append_txns.fetch_add(1, Ordering::Relaxed);
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
            .map_err(AppendError::Storage)?;
        if resp.succeeded() {
            self.appended(&part);
            return Ok(());
        }
        let mut at_last: Option<Vec<u8>> = None;
        let mut end_key: Option<Vec<u8>> = None;
        let mut owner_now: Option<i64> = None;
        for (i, r) in resp.op_responses().into_iter().enumerate() {
            if let TxnOpResponse::Get(g) = r {
                match i {
                    0 => at_last = g.kvs().first().map(|kv| kv.value().to_vec()),
                    1 => end_key = g.kvs().first().map(|kv| kv.key().to_vec()),
                    _ => owner_now = Some(g.kvs().first().map_or(0, |kv| kv.create_revision())),
                }
            }
        }
        // Only after an attempt whose outcome is unknown (a combined one included) can the
        // events be ours: a first attempt that was answered "no" wrote nothing (and another
        // writer's events may be byte-for-byte equal to ours).
        if (attempts > 1 || ambiguous) && at_last.as_deref() == Some(part.pack.as_slice()) {
            stats.read_backs.fetch_add(1, Ordering::Relaxed);
            self.appended(&part);
            return Ok(());
        }
        if let Some(epoch) = epoch
            && let Some(now) = owner_now
            && now != epoch as i64
        {
            return Err(self.refused_by_epoch(partition, epoch, now));
        }
        stats.fenced.fetch_add(1, Ordering::Relaxed);
        let plog_last = match self.last_key_found(partition, &end_read, end_key.as_deref()) {
            Ok(Some(last)) => last,
            // The hint found nothing (the PLog is not what it was): read its whole end.
            Ok(None) => self
                .clone()
                .plog_last_async(partition)
                .await
                .map_err(AppendError::Storage)?,
            Err(e) => return Err(AppendError::Storage(e)),
        };
        Err(AppendError::WrongOffset {
            expected: plog_last + 1,
            offered: first,
        })
    }

    /// `part` is in the PLog: counted, and its last key is where the PLog's end was last seen.
    fn appended(&self, part: &AppendPart) {
        let stats = &self.inner.stats;
        stats
            .appends
            .fetch_add(part.last + 1 - part.first, Ordering::Relaxed);
        stats.packs.fetch_add(1, Ordering::Relaxed);
        self.inner.plog_ends.saw(part.partition, part.last);
    }
}

/// One part of a batch as one PLog key: the events `first..=last` of a partition, encoded as
/// one value (`pack`) under `key` (`last`'s).
struct AppendPart {
    partition: PartitionId,
    first: PLogOffset,
    last: PLogOffset,
    key: String,
    pack: Vec<u8>,
}

/// Adds the epoch compare of `fence` (if the partition is owned) to a write's compares, and a
/// read of the owner key to its else branch (its last operation); returns the epoch.
pub(super) fn epoch_compare(
    partition: PartitionId, fence: Fence, when: &mut Vec<Compare>, otherwise: &mut Vec<TxnOp>,
) -> Option<u64> {
    let Fence::Epoch(epoch) = fence else {
        return None;
    };
    let key = owner_key(partition);
    when.push(Compare::create_revision(
        key.clone(),
        CompareOp::Equal,
        i64::try_from(epoch).unwrap_or(i64::MAX),
    ));
    otherwise.push(TxnOp::get(key, None));
    Some(epoch)
}

impl EtcdStorage {
    /// The cluster refused `epoch` for `partition` (its owner key's create revision is `now`,
    /// 0 if gone): the partition is lost, nothing more is written under that epoch.
    pub(super) fn refused_by_epoch(
        &self, partition: PartitionId, epoch: u64, now: i64,
    ) -> AppendError {
        self.inner
            .stats
            .epoch_refused
            .fetch_add(1, Ordering::Relaxed);
        let why = if now == 0 {
            format!(
                "the cluster refused epoch {epoch}: the partition has no owner key (the lease expired or it was handed over)"
            )
        } else {
            format!("the cluster refused epoch {epoch}: another host owns it at epoch {now}")
        };
        self.inner.fences.lose(partition, &why);
        AppendError::NotOwner {
            partition,
            epoch,
            why,
        }
    }
}

/// What the composite store (its PLog on object storage) asks of the ownership.
#[cfg(feature = "objects")]
impl EtcdStorage {
    /// The fence of an append of `partition` to a PLog kept outside the cluster (the composite
    /// store's objects), judged without a request: the epoch the host owns the partition at
    /// (`None` while no lease is registered on this store: one host, only the offset fence),
    /// or `NotOwner` when nothing may be written: not owned, lost, or the lease may have
    /// expired ([`ownership`](crate::store::etcd::ownership)).
    pub(crate) fn plog_fence(&self, partition: PartitionId) -> Result<Option<u64>, AppendError> {
        match self.inner.fences.check(partition) {
            Ok(Fence::Open) => Ok(None),
            Ok(Fence::Epoch(epoch)) => Ok(Some(epoch)),
            Err(r) => {
                let stats = &self.inner.stats;
                stats.not_sent.fetch_add(1, Ordering::Relaxed);
                Err(AppendError::NotOwner {
                    partition,
                    epoch: r.epoch,
                    why: r.why,
                })
            }
        }
    }

    /// The PLog kept outside the cluster refused an append of `partition` under this host's
    /// epoch (`why`: a successor wrote its tail): the partition is lost, nothing more is
    /// written under that epoch.
    pub(crate) fn plog_superseded(&self, partition: PartitionId, why: &str) {
        let stats = &self.inner.stats;
        stats.epoch_refused.fetch_add(1, Ordering::Relaxed);
        self.inner.fences.lose(partition, why);
    }

    /// The epoch this host owns `partition` at now, if a lease is registered and it does
    /// (no request, nothing counted).
    pub(crate) fn plog_epoch(&self, partition: PartitionId) -> Option<u64> {
        match self.inner.fences.check(partition) {
            Ok(Fence::Epoch(epoch)) => Some(epoch),
            _ => None,
        }
    }
}
