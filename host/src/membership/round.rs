//! The membership's thread: a round every few hundred milliseconds (keepalive when due, the
//! deadline, a snapshot of hosts and owners, placement, takeovers, handovers, losses), and
//! leaving.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use backon::ExponentialBackoff;
use futures::channel::mpsc::UnboundedSender;

use crate::rng::Rng;
use crate::store::retry::{RetryPolicy, WarnLimiter};

use crate::driver::PartitionSequencer;
use crate::store::etcd::ownership::{
    HostLease, Owners, OwnershipError, lease_margin, placement_keeping,
};
use crate::store::storage::PartitionId;

use super::config::{MembershipConfig, MembershipParts, Shared};
use super::events::{Claim, LostReason, MembershipEvent};
use super::stats::Transfer;
use super::wakeup::Wakeup;

/// The least time between two rounds, however often the thread is woken.
const MIN_ROUND_GAP: Duration = Duration::from_millis(10);

/// The shortest time between two warnings of a failing registration.
const REGISTER_WARN_INTERVAL: Duration = Duration::from_secs(5);

/// Registering again, after the lease expired, failing: when the next try is due, the waits
/// left, and when the first try failed.
struct Registering {
    next_try: Instant,
    waits: ExponentialBackoff,
    since: Instant,
}

/// A partition this host owns.
struct Held {
    epoch: u64,
    seq: PartitionSequencer,
    claim: Claim,
    /// A handover asked for: when, and to whom.
    handover: Option<(Instant, Option<String>)>,
}

pub(super) struct Rounds {
    parts: MembershipParts,
    config: MembershipConfig,
    lease: HostLease,
    events: UnboundedSender<MembershipEvent>,
    shared: Arc<Mutex<Shared>>,
    held: BTreeMap<PartitionId, Held>,
    /// Partitions seen without an owner: when first seen so, and when this host may take it.
    free: HashMap<PartitionId, (Instant, Instant)>,
    /// The last owner seen of each partition.
    last_owner: HashMap<PartitionId, String>,
    rng: Rng,
    next_keepalive: Instant,
    /// When the first round ran: a partition never seen owned is not taken until a round
    /// interval after it (hosts started together see each other first).
    first_round: Option<Instant>,
    /// Raised by the watch and by released claims: the next round runs at once.
    wake: Arc<Wakeup>,
    /// Registering again is failing (the cluster away): tried with backoff, not every round.
    registering: Option<Registering>,
    warnings: WarnLimiter,
}

impl Rounds {
    pub(super) fn new(
        parts: MembershipParts, config: MembershipConfig, lease: HostLease,
        events: UnboundedSender<MembershipEvent>, shared: Arc<Mutex<Shared>>,
    ) -> Self {
        let seed = config
            .host_name
            .bytes()
            .fold(std::process::id() as u64, |h, b| {
                h.rotate_left(5) ^ u64::from(b)
            });
        Self {
            parts,
            config,
            lease,
            events,
            shared,
            held: BTreeMap::new(),
            free: HashMap::new(),
            last_owner: HashMap::new(),
            rng: Rng::new(seed),
            next_keepalive: Instant::now(),
            first_round: None,
            wake: Arc::new(Wakeup::default()),
            registering: None,
            warnings: WarnLimiter::new(REGISTER_WARN_INTERVAL),
        }
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Rounds until `stop`, then leaves.
    pub(super) fn run(&mut self, stop: &AtomicBool) {
        let every = self.config.round();
        let wake = self.wake.clone();
        // Without a watch (the store is closing) the rounds poll as often as they are due.
        let _watch = (self.lease.store()).watch_ownership(Arc::new(move || wake.notify()));
        while !stop.load(Ordering::Acquire) {
            let started = Instant::now();
            if let Err(e) = self.round() {
                tracing::error!("{e}");
                self.lose_all(LostReason::LeaseExpired(e.to_string()));
                self.shared().failure = Some(e.to_string());
                return;
            }
            self.publish();
            let wait = match &self.registering {
                Some(r) => r.next_try.saturating_duration_since(Instant::now()),
                None => self.bounded(every).saturating_sub(started.elapsed()),
            };
            self.wake.wait(wait);
            std::thread::sleep(MIN_ROUND_GAP.saturating_sub(started.elapsed()));
        }
        self.leave();
        self.publish();
    }

    /// One round. An error is one that cannot clear by itself (the host's name held by
    /// another live host).
    ///
    /// No request of a round outlasts the lease's deadline: each is bounded by the time left,
    /// and the deadline is checked after each, so partitions are dropped when it passes.
    fn round(&mut self) -> Result<(), OwnershipError> {
        self.first_round.get_or_insert_with(Instant::now);
        let ttl = self.lease.ttl();
        if self.lease.may_have_expired() {
            return self.expired();
        }
        // A claim released (what most often wakes a round) is handed over before the round's
        // requests, which can take long on a loaded cluster.
        self.finish_handovers();
        if Instant::now() >= self.next_keepalive {
            self.next_keepalive = Instant::now() + ttl / 3;
            match self.lease.keep_alive_within(self.bounded(ttl / 3)) {
                Ok(_) => {}
                Err(e @ OwnershipError::LeaseExpired { .. }) => {
                    self.lose_all(LostReason::LeaseExpired(e.to_string()));
                    return self.register_again();
                }
                Err(e) => tracing::warn!("{e}"),
            }
            if self.lease.may_have_expired() {
                return self.expired();
            }
        }
        let refused: Vec<(PartitionId, String)> = (self.held.keys())
            .filter_map(|&p| self.lease.lost(p).map(|why| (p, why)))
            .collect();
        for (p, why) in refused {
            self.drop_partition(p, LostReason::EpochRefused(why));
        }
        let owners = match self.lease.store().owners(self.bounded(ttl / 3)) {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!("{e}");
                return Ok(());
            }
        };
        if self.lease.may_have_expired() {
            return self.expired();
        }
        self.place(&owners);
        self.finish_handovers();
        Ok(())
    }

    /// `wait`, or less: the time left before the lease may have expired (at least 10 ms).
    pub(super) fn bounded(&self, wait: Duration) -> Duration {
        wait.min(self.lease.time_left())
            .max(Duration::from_millis(10))
    }

    /// The lease may have expired: every partition dropped, the lease revoked (its keys go at
    /// once if it still lives, so others need not wait), a new one registered.
    fn expired(&mut self) -> Result<(), OwnershipError> {
        // Once registering has failed, the lease is gone already: only registering is tried.
        if self.registering.is_none() {
            let ttl = self.lease.ttl();
            self.lose_all(LostReason::LeaseExpired(format!(
                "no keepalive acknowledged within {:.1} s (the TTL less the margin); stopped numbering",
                (ttl - lease_margin(ttl)).as_secs_f64()
            )));
            self.lease.revoke();
        }
        self.register_again()
    }

    /// Placement over one snapshot: take, ask to hand over, drop.
    fn place(&mut self, owners: &Owners) {
        let now = Instant::now();
        let me = self.config.host_name.clone();
        let live: Vec<&str> = owners.hosts.keys().map(String::as_str).collect();
        // An owner counts if its key is under its host's live lease (not one left by an
        // earlier process of the same name, which expires).
        let current: Vec<Option<&str>> = (0..self.config.partitions)
            .map(|p| {
                let o = owners.owners.get(&p)?;
                (owners.hosts.get(&o.host) == Some(&o.lease)).then_some(o.host.as_str())
            })
            .collect();
        let placed = placement_keeping(self.config.partitions, &live, &current);
        // Another live host owns partitions: a deployment running, not one starting.
        let running = (current.iter()).any(|o| o.is_some_and(|h| h != me));
        for p in 0..self.config.partitions {
            let preferred = placed[p as usize];
            match owners.owners.get(&p) {
                Some(o) if o.lease == self.lease.id() => {
                    self.free.remove(&p);
                    if let Some(h) = self.held.get_mut(&p)
                        && h.handover.is_none()
                        && let Some(to) = preferred.filter(|to| *to != me)
                    {
                        h.claim.request_handover();
                        h.handover = Some((now, Some(to.to_string())));
                    }
                }
                Some(o) => {
                    self.free.remove(&p);
                    self.last_owner.insert(p, o.host.clone());
                    if self.held.contains_key(&p) {
                        let why = format!("host {} owns it at epoch {}", o.host, o.epoch);
                        self.drop_partition(p, LostReason::EpochRefused(why));
                    }
                }
                None => {
                    if self.held.contains_key(&p) {
                        self.drop_partition(
                            p,
                            LostReason::LeaseExpired("its owner key is gone".into()),
                        );
                    }
                    // The first round interval only looks at partitions never seen owned:
                    // hosts started together see each other before anyone takes one. A
                    // partition seen owned and free now was let go (handed over to this host
                    // that just joined, or its owner's lease expired): taken as usual. So is
                    // one placed here while other hosts own partitions: this host joined a
                    // running deployment, whose owner may have let it go before this host's
                    // first look at the owners.
                    let looking =
                        (self.first_round).is_some_and(|f| f.elapsed() < self.config.round());
                    let handed_here = running && preferred == Some(me.as_str());
                    if looking && !self.last_owner.contains_key(&p) && !handed_here {
                        continue;
                    }
                    let delay = if preferred == Some(me.as_str()) {
                        Duration::ZERO
                    } else {
                        let max = self.config.takeover_delay.as_millis() as u64;
                        Duration::from_millis(max / 2 + self.rng.below(max / 2 + 1))
                    };
                    let (seen, due) = *self.free.entry(p).or_insert((now, now + delay));
                    if now >= due {
                        self.take(p, seen);
                    }
                }
            }
        }
    }

    /// Takes `p` if it is still free, opens its sequencer and says so.
    fn take(&mut self, p: PartitionId, seen_free: Instant) {
        let epoch = match self.lease.acquire(p) {
            Ok(Some(epoch)) => epoch,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("{e}");
                return;
            }
        };
        self.free.remove(&p);
        let parts = &self.parts;
        let seq = match parts.driver.open(&parts.runtime, p, &parts.params) {
            Ok(seq) => seq,
            Err(e) => {
                tracing::warn!("partition {p}: cannot open its sequencer: {e}; handing it back");
                let _ = self.lease.release(p, epoch);
                return;
            }
        };
        let previous = self.last_owner.get(&p).cloned();
        {
            let mut shared = self.shared();
            match &previous {
                Some(other) => {
                    let took = seen_free.elapsed();
                    if let Some(m) = parts.driver.metrics() {
                        m.transfer(true, took);
                    }
                    shared.stats.takeovers.push(Transfer {
                        partition: p,
                        other: Some(other.clone()),
                        took,
                    });
                }
                None => shared.stats.acquired_free += 1,
            }
        }
        tracing::debug!("partition {p}: acquired at epoch {epoch} (previous owner {previous:?})");
        let claim = Claim::new(self.wake.clone());
        self.held.insert(
            p,
            Held {
                epoch,
                seq: seq.clone(),
                claim: claim.clone(),
                handover: None,
            },
        );
        let _ = self.events.unbounded_send(MembershipEvent::Acquired {
            partition: p,
            sequencer: seq,
            epoch,
            previous,
            claim,
        });
    }

    /// Hands over the partitions whose embedder released them, or whose grace is over.
    fn finish_handovers(&mut self) {
        let grace = self.config.handover_grace;
        let due: Vec<PartitionId> = (self.held.iter())
            .filter(|(_, h)| {
                h.handover
                    .as_ref()
                    .is_some_and(|(at, _)| h.claim.released() || at.elapsed() >= grace)
            })
            .map(|(&p, _)| p)
            .collect();
        for p in due {
            self.hand_over(p, LostReason::HandedOver, true);
        }
    }

    /// Closes `p`'s sequencer, deletes its key if `delete` (and it still has our epoch; else
    /// only marks it lost: the lease's revocation deletes it) and says why.
    fn hand_over(&mut self, p: PartitionId, why: LostReason, delete: bool) {
        let Some(h) = self.held.remove(&p) else {
            return;
        };
        h.claim.mark_lost();
        h.seq.cleanup();
        if !delete {
            self.lease.forget(p, "handed over");
        } else if let Err(e) = self.lease.release(p, h.epoch) {
            tracing::warn!("{e}");
        }
        let (asked, to) = h.handover.unwrap_or((Instant::now(), None));
        let took = asked.elapsed();
        self.record_loss(p, &why, Some(took));
        self.shared().stats.handovers.push(Transfer {
            partition: p,
            other: to,
            took,
        });
        let _ = self
            .events
            .unbounded_send(MembershipEvent::Lost { partition: p, why });
    }

    /// Drops `p` at once: its sequencer closed, nothing more written under its epoch.
    fn drop_partition(&mut self, p: PartitionId, why: LostReason) {
        let Some(h) = self.held.remove(&p) else {
            return;
        };
        h.claim.mark_lost();
        h.seq.cleanup();
        self.lease.forget(p, &why.to_string());
        self.record_loss(p, &why, None);
        {
            let mut shared = self.shared();
            match why {
                LostReason::EpochRefused(_) => shared.stats.epoch_losses += 1,
                LostReason::LeaseExpired(_) => shared.stats.lease_losses += 1,
                _ => {}
            }
        }
        tracing::warn!("partition {p}: lost ({why})");
        let _ = self
            .events
            .unbounded_send(MembershipEvent::Lost { partition: p, why });
    }

    /// Records in the driver's metrics, if any, that `p` was lost for `why` (a handover that
    /// `took` so long).
    fn record_loss(&self, p: PartitionId, why: &LostReason, took: Option<Duration>) {
        let Some(m) = self.parts.driver.metrics() else {
            return;
        };
        if let Some(took) = took {
            m.transfer(false, took);
        }
        let reason = match why {
            LostReason::HandedOver => "handed_over",
            LostReason::EpochRefused(_) => "epoch_refused",
            LostReason::LeaseExpired(_) => "lease_expired",
            LostReason::Left => "left",
        };
        m.partition_lost(p, reason);
    }

    fn lose_all(&mut self, why: LostReason) {
        let held: Vec<PartitionId> = self.held.keys().copied().collect();
        for p in held {
            self.drop_partition(p, why.clone());
        }
    }

    /// A new lease after the last one expired (or may have). A name held by another live
    /// host cannot clear by itself; other failures are tried again after a jittered wait
    /// (warned about once per few seconds), until `register_within` is spent.
    fn register_again(&mut self) -> Result<(), OwnershipError> {
        if self
            .registering
            .as_ref()
            .is_some_and(|r| Instant::now() < r.next_try)
        {
            return Ok(());
        }
        let store = self.lease.store().clone();
        match store.register_host(
            &self.config.host_name,
            self.config.lease_ttl,
            self.parts.clock.clone(),
        ) {
            Ok(lease) => {
                tracing::info!(
                    "host {}: registered again with a new lease",
                    self.config.host_name
                );
                self.lease = lease;
                self.registering = None;
                self.free.clear();
                self.next_keepalive = Instant::now() + self.lease.ttl() / 3;
                self.shared().stats.reregistrations += 1;
                Ok(())
            }
            Err(e @ OwnershipError::NameInUse { .. }) => Err(e),
            Err(e) => self.register_later(&e),
        }
    }

    /// Registering failed with `e`: the next try after a jittered wait, or the error once
    /// `register_within` is spent.
    fn register_later(&mut self, e: &OwnershipError) -> Result<(), OwnershipError> {
        let now = Instant::now();
        let policy = RetryPolicy {
            deadline: self.config.register_within,
            ..RetryPolicy::REGISTER
        };
        let seed = self.rng.next_u64();
        let r = self.registering.get_or_insert_with(|| Registering {
            next_try: now,
            waits: policy.waits(seed),
            since: now,
        });
        let failing = now.saturating_duration_since(r.since);
        match r.waits.next() {
            Some(wait) if failing < policy.deadline => {
                r.next_try = now + wait;
                self.warnings.warn("register again", || {
                    format!(
                        "{e}; trying again in {} ms (failing for {:.0} s of at most {:.0} s)",
                        wait.as_millis(),
                        failing.as_secs_f64(),
                        policy.deadline.as_secs_f64()
                    )
                });
                Ok(())
            }
            _ => Err(OwnershipError::RegisterFailed {
                store: self.lease.store().label().to_string(),
                name: self.config.host_name.clone(),
                waited: failing,
                error: e.to_string(),
            }),
        }
    }

    /// Leaving: every embedder asked to finish its batch (waiting at most the grace), every
    /// sequencer closed, then the lease revoked: the host key and every owner key go in one
    /// step, so the others see the host gone and its partitions free in the same snapshot
    /// (and take them at once, as placement prefers them now).
    fn leave(&mut self) {
        for h in self.held.values_mut() {
            h.claim.request_handover();
        }
        let until = Instant::now() + self.config.handover_grace;
        while Instant::now() < until && !self.held.values().all(|h| h.claim.released()) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let held: Vec<PartitionId> = self.held.keys().copied().collect();
        for p in held {
            self.hand_over(p, LostReason::Left, false);
        }
        self.lease.revoke();
    }

    fn publish(&self) {
        let owned: Vec<PartitionId> = self.held.keys().copied().collect();
        self.shared().owned = owned;
    }
}
