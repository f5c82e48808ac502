//! What a membership tells its embedder: a partition acquired (with its sequencer, epoch and
//! [`Claim`]) or lost (and why); and the claim through which a graceful handover waits for
//! the embedder's batch in flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::driver::PartitionSequencer;
use crate::store::storage::PartitionId;

use super::wakeup::Wakeup;

/// An event of a [`Membership`](super::Membership)'s stream.
pub enum MembershipEvent {
    /// This host owns `partition` from now on: its sequencer is open (actualizing from the
    /// shared view and the PLog's tail), every write of it carries `epoch`.
    Acquired {
        /// The partition.
        partition: PartitionId,
        /// Its sequencer, opened through the membership's driver.
        sequencer: PartitionSequencer,
        /// The epoch (the owner key's create revision).
        epoch: u64,
        /// The host that owned it last, as this host saw it (`None`: nobody since this host
        /// started watching): `Some` makes this a takeover.
        previous: Option<String>,
        /// Where a handover asks the embedder to finish its batch and let go.
        claim: Claim,
    },
    /// This host does not own `partition` any more: its sequencer is closed and nothing more
    /// is written under its epoch.
    Lost {
        /// The partition.
        partition: PartitionId,
        /// Why.
        why: LostReason,
    },
}

impl std::fmt::Debug for MembershipEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Acquired {
                partition,
                epoch,
                previous,
                ..
            } => write!(
                f,
                "Acquired {{ partition: {partition}, epoch: {epoch}, previous: {previous:?} }}"
            ),
            Self::Lost { partition, why } => {
                write!(f, "Lost {{ partition: {partition}, why: {why:?} }}")
            }
        }
    }
}

/// Why a partition was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LostReason {
    /// Handed over gracefully to the host placement prefers (one that joined).
    HandedOver,
    /// The cluster refused this host's epoch: another host owns the partition now.
    EpochRefused(String),
    /// The lease expired, or may have (no keepalive acknowledged in time): the host stopped
    /// numbering before it could have.
    LeaseExpired(String),
    /// The membership was closed ([`Membership::leave`](super::Membership::leave)).
    Left,
}

impl std::fmt::Display for LostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::HandedOver => f.write_str("handed over"),
            Self::EpochRefused(why) => write!(f, "epoch refused: {why}"),
            Self::LeaseExpired(why) => write!(f, "lease: {why}"),
            Self::Left => f.write_str("the host left"),
        }
    }
}

/// The embedder's side of an owned partition: a handover asks through it, and waits (at
/// most the membership's grace) for [`release`](Self::release).
#[derive(Clone, Default)]
pub struct Claim(Arc<ClaimFlags>);

#[derive(Default)]
struct ClaimFlags {
    handover: AtomicBool,
    released: AtomicBool,
    lost: AtomicBool,
    /// The membership's thread, woken by a release so the key goes at once.
    wake: Option<Arc<Wakeup>>,
}

impl Claim {
    /// A claim whose release wakes the membership's thread.
    pub(super) fn new(wake: Arc<Wakeup>) -> Self {
        Self(Arc::new(ClaimFlags {
            wake: Some(wake),
            ..ClaimFlags::default()
        }))
    }

    /// Whether the membership wants the partition handed over: finish the batch in flight,
    /// then [`release`](Self::release); start no new one.
    pub fn handover_requested(&self) -> bool {
        self.0.handover.load(Ordering::Acquire)
    }

    /// The embedder is done with the partition (its batch in flight appended and flushed):
    /// the membership closes its sequencer and deletes its owner key.
    pub fn release(&self) {
        self.0.released.store(true, Ordering::Release);
        if let Some(wake) = &self.0.wake {
            wake.notify();
        }
    }

    /// Whether the partition is lost (its sequencer closed): the embedder stops using it.
    pub fn is_lost(&self) -> bool {
        self.0.lost.load(Ordering::Acquire)
    }

    pub(super) fn request_handover(&self) {
        self.0.handover.store(true, Ordering::Release);
    }

    pub(super) fn released(&self) -> bool {
        self.0.released.load(Ordering::Acquire)
    }

    pub(super) fn mark_lost(&self) {
        self.0.lost.store(true, Ordering::Release);
    }
}
