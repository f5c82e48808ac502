//! [`EtcdStats`]: what the store did, counted for reports.

use std::sync::atomic::AtomicU64;

/// Counters of what the store did, for reports.
#[derive(Debug, Default)]
pub struct EtcdStats {
    /// PLog events appended by this store.
    pub appends: AtomicU64,
    /// Appends (batches, or parts of one: one PLog key each) acknowledged.
    pub packs: AtomicU64,
    /// Append transactions sent (one per batch, or per part of a batch split to fit etcd's
    /// request limit), retries included.
    pub append_txns: AtomicU64,
    /// Append transactions that held the appends of several partitions (`append_txns` counts
    /// them once each).
    pub combined_txns: AtomicU64,
    /// Combined append transactions that did not apply (a part's compare failed): each of
    /// their parts was sent again on its own.
    pub combined_refused: AtomicU64,
    /// Appends refused by the fence.
    pub fenced: AtomicU64,
    /// Appends and view writes the cluster refused for their epoch (another host owns the
    /// partition now).
    pub epoch_refused: AtomicU64,
    /// Appends and view writes not sent: the partition is not owned, or the lease may have
    /// expired.
    pub not_sent: AtomicU64,
    /// Flusher writes (values and next offset) applied.
    pub writes: AtomicU64,
    /// Transactions sent (appends, view chunks, offsets), retries included.
    pub txns: AtomicU64,
    /// Requests retried after a transport error or timeout.
    pub retries: AtomicU64,
    /// Appends found committed by an earlier attempt whose answer was lost.
    pub read_backs: AtomicU64,
    /// View writes tried again because another writer changed the same workspaces.
    pub view_conflicts: AtomicU64,
    /// The cluster's revision after the last PLog trim (what `archive` compacts up to).
    pub trim_revision: AtomicU64,
}
