//! Many hosts, one deployment: a host joins the hosts on an etcd cluster and serves the
//! partitions placement gives it, as they come and go (feature `etcd`).
//!
//! [`Membership::open`] registers the host's lease on an
//! [`EtcdStorage`](crate::store::etcd::EtcdStorage)
//! ([`ownership`](crate::store::etcd::ownership): the keys, the epoch fence, the deadline) and
//! returns a stream of [`MembershipEvent`]s: a partition acquired, with its
//! [`PartitionSequencer`](crate::PartitionSequencer) opened through the given driver and its
//! epoch, or lost, and why. A command processor routes commands by it.
//!
//! Every round the membership reads the live hosts and the owners in one snapshot. A round
//! runs when a watch on the hosts' and owners' keys sees a change (a host joined or left, a
//! partition let go), when an embedder releases a partition, and at the latest a tenth of the
//! TTL (100 to 300 ms) after the last one; the snapshot, not the watch, decides. A round
//! - takes a partition without an owner: at once if placement ([`placement_keeping`]) prefers
//!   this host among the live ones, else after a short random delay (so the preferred survivor
//!   wins, and another takes it if that one does not);
//! - hands over, gracefully, a partition placement prefers another live host for (one that
//!   joined): asks the embedder through the [`Claim`] to finish its batch in flight, waits for
//!   its release (at most `handover_grace`), closes the sequencer, deletes the key;
//! - drops a partition whose epoch the cluster refused, or whose key is gone or another's.
//!
//! The lease is kept alive every third of the TTL. A lease that may have expired (no keepalive
//! acknowledged within the TTL less the margin, on the clock given) loses every partition at
//! once; the host then registers a new lease and takes its share again.
//!
//! | file | what it does |
//! |---|---|
//! | `config.rs` | [`MembershipConfig`], [`MembershipParts`]: how a host joins, with what |
//! | `events.rs` | [`MembershipEvent`], [`LostReason`], [`Claim`] |
//! | `round.rs` | one round: placement over a snapshot, takeovers, handovers, losses |
//! | `stats.rs` | [`MembershipStats`]: takeovers and handovers, with their times |
//! | `wakeup.rs` | what wakes the thread before its next round is due |

mod config;
mod events;
mod round;
mod stats;
mod wakeup;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use futures::channel::mpsc;

pub use config::{MembershipConfig, MembershipParts};
pub use events::{Claim, LostReason, MembershipEvent};
pub use stats::{MembershipStats, Transfer};

#[cfg(doc)]
use crate::store::etcd::ownership::placement_keeping;
use crate::store::etcd::ownership::{OwnershipError, lease_margin};

use crate::store::storage::PartitionId;
use config::Shared;

/// A host's membership: its lease, its partitions and the thread that keeps them. Dropping
/// it leaves as [`leave`](Self::leave) does.
pub struct Membership {
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<Shared>>,
    thread: Option<JoinHandle<()>>,
}

impl Membership {
    /// Registers the host (waiting, up to twice the TTL, for a key of the same name left by
    /// a killed process) and starts taking its share of the partitions; the events come on
    /// the returned stream.
    pub fn open(
        parts: MembershipParts, config: MembershipConfig,
    ) -> Result<(Self, mpsc::UnboundedReceiver<MembershipEvent>), OwnershipError> {
        let lease =
            parts
                .store
                .register_host(&config.host_name, config.lease_ttl, parts.clock.clone())?;
        let (events, rx) = mpsc::unbounded();
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Mutex::new(Shared::default()));
        if let Some(m) = parts.driver.metrics() {
            watch(m, &parts, &shared);
        }
        let mut rounds = round::Rounds::new(parts, config, lease, events, shared.clone());
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("sequencer-membership".into())
            .spawn(move || rounds.run(&stopping))
            .map_err(|e| {
                OwnershipError::Store(crate::store::storage::StorageError(format!(
                    "cannot start the membership's thread: {e}"
                )))
            })?;
        Ok((
            Self {
                stop,
                shared,
                thread: Some(thread),
            },
            rx,
        ))
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The partitions this host owns now, ascending.
    pub fn owned(&self) -> Vec<PartitionId> {
        self.shared().owned.clone()
    }

    /// Takeovers and handovers so far.
    pub fn stats(&self) -> MembershipStats {
        self.shared().stats.clone()
    }

    /// The error that stopped the membership, if one did (its partitions are all lost).
    pub fn failure(&self) -> Option<String> {
        self.shared().failure.clone()
    }

    /// Leaves: hands every partition over (each embedder gets its grace to finish its
    /// batch), deletes their keys and revokes the lease, so others take them at once.
    pub fn leave(mut self) -> MembershipStats {
        self.stop_thread();
        self.stats()
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// Lets `metrics` read the lease's time left and the membership's failure at each scrape.
fn watch(metrics: &crate::metrics::Metrics, parts: &MembershipParts, shared: &Arc<Mutex<Shared>>) {
    let store = parts.store.clone();
    metrics.watch_lease(move || Some(store.lease_time_left()));
    let shared = Arc::downgrade(shared);
    metrics.watch_membership(move || {
        let s = shared.upgrade()?;
        let guard = s.lock().unwrap_or_else(|p| p.into_inner());
        guard.failure.clone()
    });
}

/// The margin a host keeps before its lease can have expired, for a TTL (re-exported for
/// reports).
pub fn margin(ttl: Duration) -> Duration {
    lease_margin(ttl)
}
