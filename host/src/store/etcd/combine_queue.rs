//! The appends waiting to go with others in one transaction ([`Combiner`], held by the store's
//! handle) and what became of one ([`Combined`]); `combine.rs` sends them.

use std::sync::{Mutex, MutexGuard};

use etcd_client::{Compare, TxnOp};
use futures::channel::oneshot;

/// What became of one part sent in a combined transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Combined {
    /// Appended (with every other part of its transaction).
    Written,
    /// Not appended: some part's compare failed, so nothing was written.
    NotWritten,
    /// No answer: it may or may not have been appended.
    Unknown,
}

/// One part waiting to be sent.
pub(super) struct Part {
    pub(super) when: Vec<Compare>,
    pub(super) put: TxnOp,
    pub(super) bytes: usize,
    pub(super) done: oneshot::Sender<Combined>,
}

/// The parts waiting, and how many combined transactions are in flight.
#[derive(Default)]
pub(super) struct Combiner {
    state: Mutex<State>,
}

/// The parts waiting, oldest first, and the combined transactions in flight.
#[derive(Default)]
pub(super) struct State {
    pub(super) waiting: Vec<Part>,
    pub(super) in_flight: usize,
}

impl Combiner {
    /// The state, locked (a panic elsewhere while it was held leaves it consistent: every
    /// change under the lock is a single push, drain or count).
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
