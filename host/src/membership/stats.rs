//! [`MembershipStats`]: what a membership did, for reports.

use std::time::Duration;

use crate::store::storage::PartitionId;

/// One partition moved to or from this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The partition.
    pub partition: PartitionId,
    /// The other host (the previous owner of a takeover, the next of a handover, if known).
    pub other: Option<String>,
    /// How long it took: a takeover from the owner key seen gone to this host's key created;
    /// a handover from the request to the key deleted.
    pub took: Duration,
}

/// Takeovers and handovers of one membership.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MembershipStats {
    /// Partitions taken after another host owned them.
    pub takeovers: Vec<Transfer>,
    /// Partitions taken that no host owned since this one started watching.
    pub acquired_free: u64,
    /// Partitions handed over gracefully.
    pub handovers: Vec<Transfer>,
    /// Partitions lost because the cluster refused the epoch.
    pub epoch_losses: u64,
    /// Partitions lost because the lease expired or may have.
    pub lease_losses: u64,
    /// Leases registered again after one expired.
    pub reregistrations: u64,
}
