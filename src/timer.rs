//! The sequencer's deadlines: one named timer per thing that waits for the clock, kept in one
//! small table (after quinn-proto's `timer.rs`), so that the earliest of them is found in one
//! place instead of being merged by hand.

use crate::types::Instant;

/// A deadline the sequencer may wait for. Each one holds back a piece of storage work until
/// it passes; [`Sequencer::poll_timeout`](crate::Sequencer::poll_timeout) reports a timer only
/// while the work it holds back is wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// The flusher may not begin a write before it: set when a write fails (the retry delay,
    /// growing with consecutive failures), stopped when a write succeeds, brought forward to
    /// one first delay after the failure when storage answers anything else.
    WriteRetry = 0,
    /// The actualizer may not issue its next read before it: set when an actualization read
    /// fails, stopped when one succeeds or actualization starts over, brought forward as
    /// [`WriteRetry`](Self::WriteRetry) is when storage answers anything else.
    ActualizeRetry = 1,
    /// A replay held back by unflushed values looks again then (one batcher delay after it
    /// stopped); stopped when the next PLog read is issued or actualization ends.
    ReplayRecheck = 2,
    /// Storage is probed then: set one (jittered) first delay after a failure whose retry
    /// waits longer than that; stopped when storage answers or the probe is handed out.
    Probe = 3,
}

impl Timer {
    /// Every timer, in table order.
    pub(crate) const ALL: [Timer; 4] = [
        Timer::WriteRetry,
        Timer::ActualizeRetry,
        Timer::ReplayRecheck,
        Timer::Probe,
    ];
}

/// When each [`Timer`] is due; a stopped timer has no deadline.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TimerTable {
    at: [Option<Instant>; Timer::ALL.len()],
}

impl TimerTable {
    /// Arms `timer` for `at`, replacing its deadline if it had one.
    #[inline]
    pub(crate) fn set(&mut self, timer: Timer, at: Instant) {
        self.at[timer as usize] = Some(at);
    }

    /// The deadline of `timer`, if it is armed.
    #[inline]
    pub(crate) fn get(&self, timer: Timer) -> Option<Instant> {
        self.at[timer as usize]
    }

    /// Brings an armed `timer` forward to `at` if it is due later; a stopped one stays
    /// stopped.
    #[inline]
    pub(crate) fn pull_forward(&mut self, timer: Timer, at: Instant) {
        if let Some(due) = &mut self.at[timer as usize] {
            *due = (*due).min(at);
        }
    }

    /// Disarms `timer`.
    #[inline]
    pub(crate) fn stop(&mut self, timer: Timer) {
        self.at[timer as usize] = None;
    }

    /// Whether `timer` is armed and its deadline has come by `now`.
    #[inline]
    pub(crate) fn expired(&self, timer: Timer, now: Instant) -> bool {
        self.get(timer).is_some_and(|at| now >= at)
    }

    /// Whether `timer` is armed and its deadline is still ahead of `now`: the work it guards
    /// must wait.
    #[inline]
    pub(crate) fn pending(&self, timer: Timer, now: Instant) -> bool {
        self.get(timer).is_some_and(|at| now < at)
    }

    /// Whether no timer is armed.
    #[inline]
    pub(crate) fn none_armed(&self) -> bool {
        self.at.iter().all(Option::is_none)
    }

    /// The earliest deadline among the armed timers that `counts` keeps (asked only of armed
    /// ones, so a table with none armed costs no call of it).
    #[inline]
    pub(crate) fn earliest(&self, mut counts: impl FnMut(Timer) -> bool) -> Option<Instant> {
        Timer::ALL
            .iter()
            .filter_map(|&timer| self.get(timer).filter(|_| counts(timer)))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    #[test]
    fn a_set_timer_is_pending_until_its_deadline_then_expired() {
        let mut table = TimerTable::default();
        assert!(!table.pending(Timer::WriteRetry, at(0)));
        assert!(!table.expired(Timer::WriteRetry, at(0)));
        table.set(Timer::WriteRetry, at(10));
        assert!(table.pending(Timer::WriteRetry, at(9)));
        assert!(!table.expired(Timer::WriteRetry, at(9)));
        assert!(!table.pending(Timer::WriteRetry, at(10)));
        assert!(table.expired(Timer::WriteRetry, at(10)));
        table.stop(Timer::WriteRetry);
        assert_eq!(table.get(Timer::WriteRetry), None);
        assert!(!table.expired(Timer::WriteRetry, at(10)));
    }

    #[test]
    fn earliest_is_the_soonest_armed_timer_that_counts() {
        let mut table = TimerTable::default();
        assert_eq!(table.earliest(|_| true), None);
        table.set(Timer::WriteRetry, at(30));
        table.set(Timer::ActualizeRetry, at(20));
        table.set(Timer::ReplayRecheck, at(40));
        assert_eq!(table.earliest(|_| true), Some(at(20)));
        assert_eq!(table.earliest(|t| t != Timer::ActualizeRetry), Some(at(30)));
        assert_eq!(table.earliest(|t| t == Timer::ReplayRecheck), Some(at(40)));
        table.stop(Timer::ReplayRecheck);
        assert_eq!(table.earliest(|t| t == Timer::ReplayRecheck), None);
    }

    #[test]
    fn pulling_forward_only_ever_moves_an_armed_deadline_earlier() {
        let mut table = TimerTable::default();
        table.pull_forward(Timer::WriteRetry, at(5));
        assert_eq!(
            table.get(Timer::WriteRetry),
            None,
            "a stopped timer stays stopped"
        );
        table.set(Timer::WriteRetry, at(30));
        table.pull_forward(Timer::WriteRetry, at(10));
        assert_eq!(table.get(Timer::WriteRetry), Some(at(10)));
        table.pull_forward(Timer::WriteRetry, at(20));
        assert_eq!(table.get(Timer::WriteRetry), Some(at(10)), "never later");
    }
}
