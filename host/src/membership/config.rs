//! How a host joins ([`MembershipConfig`]), what a membership is opened with
//! ([`MembershipParts`]), and what its thread shares with its handle.

use std::sync::Arc;
use std::time::Duration;

use sequencer::Params;

use crate::clock::Clock;
use crate::driver::Driver;
use crate::runtime::Runtime;
use crate::store::etcd::EtcdStorage;
use crate::store::storage::PartitionId;

use super::stats::MembershipStats;

/// How a host joins.
#[derive(Clone, Debug)]
pub struct MembershipConfig {
    /// The host's name, unique among the hosts (its key is `hosts/<name>`).
    pub host_name: String,
    /// The lease's TTL (whole seconds, at least one; 3 s by default).
    pub lease_ttl: Duration,
    /// The partitions of the deployment, `0..partitions`.
    pub partitions: u32,
    /// The longest a host that placement does not prefer waits before it takes a partition
    /// without an owner (a random share of it; the preferred host takes it at once).
    pub takeover_delay: Duration,
    /// The longest a handover waits for the embedder's [`Claim::release`](super::Claim::release).
    pub handover_grace: Duration,
    /// How long registering again (after the lease expired) may keep failing, tried with
    /// jittered backoff, before the membership stops with the error (60 s; a run sets its
    /// store wait).
    pub register_within: Duration,
}

impl MembershipConfig {
    /// Defaults for `host_name` serving `0..partitions`: a 3 s lease, takeovers by others
    /// after at most 500 ms, 2 s for the embedder to finish a batch at a handover, 60 s to
    /// register again after the lease expired.
    pub fn new(host_name: impl Into<String>, partitions: u32) -> Self {
        Self {
            host_name: host_name.into(),
            lease_ttl: Duration::from_secs(3),
            partitions,
            takeover_delay: Duration::from_millis(500),
            handover_grace: Duration::from_secs(2),
            register_within: Duration::from_secs(60),
        }
    }

    /// How often the owners are read: a tenth of the TTL, 100 to 300 ms.
    pub fn round(&self) -> Duration {
        (self.lease_ttl / 10).clamp(Duration::from_millis(100), Duration::from_millis(300))
    }
}

/// What the membership's thread shares with its handle.
#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) owned: Vec<PartitionId>,
    pub(crate) stats: MembershipStats,
    /// The error that stopped the membership (the host could not register again).
    pub(crate) failure: Option<String>,
}

/// What opening a membership needs: the store, and how to open a partition's sequencer.
pub struct MembershipParts {
    /// The cluster.
    pub store: EtcdStorage,
    /// The driver the sequencers are opened through (on a storage over `store`).
    pub driver: Arc<Driver>,
    /// The component.
    pub runtime: Runtime,
    /// The sequencers' params.
    pub params: Params,
    /// The monotonic clock the lease's deadline is judged on.
    pub clock: Arc<dyn Clock>,
}
