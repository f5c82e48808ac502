//! [`OwnershipError`]: why a host could not register, renew its lease or take a partition.

use std::time::Duration;

use crate::store::storage::StorageError;

/// Why a host could not register, renew its lease or take a partition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OwnershipError {
    /// A request failed (after its retries).
    #[error(transparent)]
    Store(#[from] StorageError),
    /// The host name cannot name a key.
    #[error("{store}: {name:?} is not a host name (1 to 200 characters, no '/' or newline)")]
    BadName {
        /// The cluster, as the store names it.
        store: String,
        /// The name given.
        name: String,
    },
    /// Another live host holds the name: its key did not expire while this one waited.
    #[error(
        "{store}: host name {name:?} is held by a live host (hosts/{name} did not expire within {:.1} s); give each host its own --host-name",
        waited.as_secs_f64()
    )]
    NameInUse {
        /// The cluster.
        store: String,
        /// The name.
        name: String,
        /// How long this host waited.
        waited: Duration,
    },
    /// The cluster no longer knows the lease: every partition owned through it is lost.
    #[error("{store}: the lease of host {name:?} expired")]
    LeaseExpired {
        /// The cluster.
        store: String,
        /// The host.
        name: String,
    },
    /// Registering again after the lease expired kept failing for longer than the host waits.
    #[error(
        "{store}: host {name:?} could not register again for {:.0} s (is the cluster up?): {error}",
        waited.as_secs_f64()
    )]
    RegisterFailed {
        /// The cluster.
        store: String,
        /// The host.
        name: String,
        /// How long registering kept failing.
        waited: Duration,
        /// The last failure, in one line.
        error: String,
    },
    /// A lease request failed or got no answer in time.
    #[error("{store}: host {name:?}: {what}: {error}")]
    Lease {
        /// The cluster.
        store: String,
        /// The host.
        name: String,
        /// What was asked.
        what: String,
        /// The error, in one line.
        error: String,
    },
}
