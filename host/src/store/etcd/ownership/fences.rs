//! What every append and view write of a partition checks before it is sent once a host
//! lease is registered on the store: the partition's epoch (compared by the cluster in the
//! same transaction), the lease's deadline (checked here, on the monotonic clock the lease
//! was registered with), and whether an append's outcome is still unknown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use sequencer::Instant;

use crate::clock::Clock;
use crate::store::storage::PartitionId;

/// What a write of a partition must carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fence {
    /// No lease is registered on the store: only the offset fence applies (one host, as
    /// before ownership).
    Open,
    /// The partition is owned at this epoch: the transaction compares the owner key's create
    /// revision with it.
    Epoch(u64),
}

/// A write refused before it is sent: the epoch held (0 if none) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) epoch: u64,
    pub(crate) why: String,
}

/// The partitions this store's host owns, their epochs, and the lease's deadline.
#[derive(Default)]
pub(crate) struct Fences {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The clock the lease's deadline is on; `None` while no lease is registered.
    clock: Option<Arc<dyn Clock>>,
    /// Past this instant the lease may have expired: nothing is written.
    valid_until: Instant,
    claims: HashMap<PartitionId, Claim>,
}

struct Claim {
    epoch: u64,
    /// Why the partition is not ours any more, once it is not.
    lost: Option<String>,
    /// An append's outcome is unknown (its answer was lost): no append until a read of the
    /// PLog's tail settles it.
    unsettled: bool,
}

impl Fences {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A lease is registered: from now on a partition not owned is refused, and nothing is
    /// written past `valid_until` on `clock`.
    pub(crate) fn register(&self, clock: Arc<dyn Clock>, valid_until: Instant) {
        let mut s = self.state();
        s.clock = Some(clock);
        s.valid_until = valid_until;
    }

    /// The lease was renewed: writes may go on until `valid_until` (never moved back).
    pub(crate) fn renewed(&self, valid_until: Instant) {
        let mut s = self.state();
        s.valid_until = s.valid_until.max(valid_until);
    }

    /// The lease is gone or may be: nothing is written any more under it.
    pub(crate) fn expire(&self, why: &str) {
        let mut s = self.state();
        s.valid_until = Instant::default();
        for c in s.claims.values_mut() {
            c.lost.get_or_insert_with(|| why.to_string());
        }
    }

    /// Whether a lease is registered and its deadline has passed.
    pub(crate) fn past_deadline(&self) -> bool {
        let s = self.state();
        s.clock.as_ref().is_some_and(|c| c.now() >= s.valid_until)
    }

    /// The time left before the deadline (zero once it passed, or with no lease).
    pub(crate) fn time_left(&self) -> std::time::Duration {
        let s = self.state();
        let now = s.clock.as_ref().map_or(s.valid_until, |c| c.now());
        std::time::Duration::from_nanos(s.valid_until.as_nanos().saturating_sub(now.as_nanos()))
    }

    /// The partition is owned at `epoch` from now on.
    pub(crate) fn own(&self, p: PartitionId, epoch: u64) {
        self.state().claims.insert(
            p,
            Claim {
                epoch,
                lost: None,
                unsettled: false,
            },
        );
    }

    /// The partition is not ours any more (`why`); the first reason is kept.
    pub(crate) fn lose(&self, p: PartitionId, why: &str) {
        if let Some(c) = self.state().claims.get_mut(&p) {
            c.lost.get_or_insert_with(|| why.to_string());
        }
    }

    /// Why the partition was lost, if it was (and was owned).
    pub(crate) fn lost(&self, p: PartitionId) -> Option<String> {
        self.state().claims.get(&p).and_then(|c| c.lost.clone())
    }

    /// The epoch this host owns `p` at, 0 if it does not (or lost it, or no lease is
    /// registered): it changes with every acquisition and loss.
    pub(crate) fn tenure(&self, p: PartitionId) -> u64 {
        match self.state().claims.get(&p) {
            Some(c) if c.lost.is_none() => c.epoch,
            _ => 0,
        }
    }

    /// What a write of `p` must carry now, or why it must not be sent.
    pub(crate) fn check(&self, p: PartitionId) -> Result<Fence, Refused> {
        let s = self.state();
        let Some(clock) = &s.clock else {
            return Ok(Fence::Open);
        };
        let Some(claim) = s.claims.get(&p) else {
            return Err(Refused {
                epoch: 0,
                why: "this host does not own it".into(),
            });
        };
        let refused = |why: String| {
            Err(Refused {
                epoch: claim.epoch,
                why,
            })
        };
        if let Some(why) = &claim.lost {
            return refused(why.clone());
        }
        if clock.now() >= s.valid_until {
            return refused(
                "the host's lease may have expired (no keepalive acknowledged in time); it stopped numbering".into(),
            );
        }
        Ok(Fence::Epoch(claim.epoch))
    }

    /// An append of `p` ended without a known outcome: the next waits for a read of the
    /// PLog's tail (no-op without a lease).
    pub(crate) fn unsettle(&self, p: PartitionId) {
        if let Some(c) = self.state().claims.get_mut(&p) {
            c.unsettled = true;
        }
    }

    /// A read reached the end of `p`'s PLog: an unknown outcome is known now.
    pub(crate) fn settle(&self, p: PartitionId) {
        if let Some(c) = self.state().claims.get_mut(&p) {
            c.unsettled = false;
        }
    }

    /// Whether an append of `p` waits for a read of the PLog's tail.
    pub(crate) fn unsettled(&self, p: PartitionId) -> bool {
        self.state().claims.get(&p).is_some_and(|c| c.unsettled)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;

    fn at(secs: f64) -> Instant {
        Instant::from_nanos((secs * 1e9) as u64)
    }

    #[test]
    fn without_a_lease_only_the_offset_fence_applies() {
        assert_eq!(Fences::default().check(3), Ok(Fence::Open));
    }

    #[test]
    fn with_a_lease_a_partition_not_owned_is_refused_and_an_owned_one_carries_its_epoch() {
        let clock = ManualClock::new();
        let f = Fences::default();
        f.register(Arc::new(clock.clone()), at(2.5));
        assert_eq!(f.check(1).map_err(|r| r.epoch), Err(0));
        f.own(1, 42);
        assert_eq!(f.check(1), Ok(Fence::Epoch(42)));
        f.lose(1, "handed over");
        assert_eq!(f.check(1).map_err(|r| r.why), Err("handed over".into()));
    }

    #[test]
    fn the_tenure_is_the_epoch_while_owned_and_zero_otherwise() {
        let f = Fences::default();
        assert_eq!(f.tenure(1), 0, "never owned");
        f.register(Arc::new(ManualClock::new()), at(2.5));
        f.own(1, 42);
        assert_eq!(f.tenure(1), 42);
        f.lose(1, "handed over");
        assert_eq!(f.tenure(1), 0, "lost");
        f.own(1, 57);
        assert_eq!(f.tenure(1), 57, "taken again: another tenure");
        f.expire("the lease expired");
        assert_eq!(f.tenure(1), 0, "every partition lost with the lease");
    }

    #[test]
    fn nothing_is_written_once_the_deadline_passes_on_the_clock_given_until_renewed() {
        let clock = ManualClock::new();
        let f = Fences::default();
        f.register(Arc::new(clock.clone()), at(2.5));
        f.own(0, 7);
        clock.advance(Duration::from_millis(2400));
        assert_eq!(f.check(0), Ok(Fence::Epoch(7)));
        clock.advance(Duration::from_millis(100));
        assert!(
            f.check(0)
                .unwrap_err()
                .why
                .contains("lease may have expired")
        );
        f.renewed(at(5.0));
        assert_eq!(f.check(0), Ok(Fence::Epoch(7)));
        f.renewed(at(1.0));
        assert_eq!(
            f.check(0),
            Ok(Fence::Epoch(7)),
            "a deadline never moves back"
        );
    }

    #[test]
    fn an_unknown_outcome_waits_for_a_read_of_the_tail() {
        let f = Fences::default();
        f.register(Arc::new(ManualClock::new()), at(10.0));
        f.own(2, 9);
        f.unsettle(2);
        assert!(f.unsettled(2));
        f.settle(2);
        assert!(!f.unsettled(2));
    }
}
