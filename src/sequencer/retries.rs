//! What the sequencer's deadlines wait for, what a failure does to them, and what storage
//! answering does (docs/DESIGN.md §4.4): every backoff starts over and every retry waits at
//! most one first delay after the failure that set it. While a retry waits longer than that
//! and nothing outstanding would answer first, storage is probed at the first delay's rate
//! with the cheapest read there is, so a total outage ends for the flusher and the actualizer
//! about one first delay after storage is back, not at the end of a capped wait.

use super::{Phase, Sequencer, Step};
use crate::error::Error;
use crate::timer::Timer;
use crate::types::Instant;
use crate::work::{Ticket, Work};

impl Sequencer {
    /// The latest instant by which the driver must call [`poll_work`](Self::poll_work) again,
    /// if no outcome is reported before then; `None` when only a report can make work due.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        // Usually no timer is armed: said without a call.
        if self.timers.none_armed() {
            return None;
        }
        self.earliest_awaited()
    }

    /// [`poll_timeout`](Self::poll_timeout) with a timer armed.
    #[inline(never)]
    fn earliest_awaited(&self) -> Option<Instant> {
        self.timers.earliest(|timer| self.awaits(timer))
    }

    /// Whether the work `timer` holds back is wanted now. A retry delay stays armed until the
    /// next success, through the attempt it let through, and a replay recheck until the next
    /// read: while nothing waits for them their deadlines must wake no one. The actualizer's
    /// reads wait for a probe in flight (one read at a time), so its deadlines do too.
    pub(super) fn awaits(&self, timer: Timer) -> bool {
        let step = match &self.phase {
            Phase::Actualizing(a) if self.probe.in_flight.is_none() => Some(&a.step),
            _ => None,
        };
        match timer {
            Timer::WriteRetry => self.write_wanted(),
            Timer::ActualizeRetry => matches!(
                step,
                Some(Step::ReadOffset { issued: None } | Step::Replay { issued: None, .. })
            ),
            Timer::ReplayRecheck => matches!(step, Some(Step::Replay { issued: None, .. })),
            Timer::Probe => self.waiting_retry().is_some(),
        }
    }

    /// Actualization starts over or ends: its retry delay and replay recheck go with it.
    pub(super) fn stop_actualizer_timers(&mut self) {
        self.timers.stop(Timer::ActualizeRetry);
        self.timers.stop(Timer::ReplayRecheck);
    }

    /// Reports that the work under `ticket` failed. A write or an actualization read is retried
    /// after the retry delay (growing with consecutive failures, and probed for meanwhile once
    /// it is longer than the first); a numbers read is abandoned, and the start that needed it
    /// may be tried again; a failed probe is followed by the next one a first delay later,
    /// while the retry still waits longer than that.
    pub fn fail(&mut self, ticket: Ticket, now: Instant) -> Result<(), Error> {
        self.check_alive()?;
        if self.probe.in_flight == Some(ticket) {
            self.probe.in_flight = None;
            self.arm_probe(now);
            return Ok(());
        }
        if self.unflushed.in_flight() == Some(ticket) {
            let superseded = self.superseded_write.take() == Some(ticket);
            let awaited =
                matches!(&self.phase, Phase::Actualizing(a) if matches!(a.step, Step::AwaitWrite));
            if superseded && self.superseded_by_view() {
                // Another writer stored a later offset while it was out: its view holds every
                // number of this write's events, at least as large (`superseded_by_view`).
                self.unflushed.write_done();
            } else if superseded && awaited {
                // `actualize` waited for it: its values are superseded by the replay about to
                // happen; merging them back would also merge an offset the replay has not
                // reached yet.
                self.unflushed.write_done();
            } else {
                if superseded && self.reading_beside_write() {
                    self.requeue_superseded();
                } else {
                    let _ = self.unflushed.requeue_in_flight();
                }
                let at = self.write_retry.failed(now, self.retry);
                self.timers.set(Timer::WriteRetry, at);
            }
            self.after_write_settled();
            self.arm_probe(now);
            return Ok(());
        }
        if self
            .pending_load
            .as_ref()
            .is_some_and(|l| l.ticket == ticket)
        {
            self.pending_load = None;
            return Ok(());
        }
        if let Phase::Actualizing(a) = &mut self.phase {
            let issued = match &mut a.step {
                Step::ReadOffset { issued } | Step::Replay { issued, .. } => issued,
                Step::AwaitWrite => return Err(Error::UnknownTicket(ticket)),
            };
            if *issued == Some(ticket) {
                *issued = None;
                let at = a.retry.failed(now, self.retry);
                self.timers.set(Timer::ActualizeRetry, at);
                self.arm_probe(now);
                return Ok(());
            }
        }
        Err(Error::UnknownTicket(ticket))
    }

    /// A storage operation succeeded (a write, an offset read, a PLog page, a numbers read, a
    /// probe): storage answers, so every backoff starts over and each retry still waiting is
    /// due at most one first delay after the failure that set it (at once if that is past).
    /// Those bounds come from the failures' own times, so the calls that report a success need
    /// no clock. No probe is wanted any more.
    pub(super) fn storage_answered(&mut self) {
        let at = self.write_retry.succeeded(self.retry);
        self.timers.pull_forward(Timer::WriteRetry, at);
        if let Phase::Actualizing(a) = &mut self.phase {
            let at = a.retry.succeeded(self.retry);
            self.timers.pull_forward(Timer::ActualizeRetry, at);
        }
        self.timers.stop(Timer::Probe);
    }

    /// The probe under its ticket succeeded. Its value is not used: the stored offset the
    /// sequencer keeps is the one its own completed writes stored, and a write begun while the
    /// probe was out may or may not be in what it read; an actualization reads the offset
    /// afresh, after the write in flight settled. That storage answered is what it says.
    pub(super) fn complete_probe(&mut self) {
        self.probe.in_flight = None;
        self.storage_answered();
    }

    /// The deadline of the earliest retry still waiting, if a probe could stand in for it:
    /// nothing is outstanding that would answer first (a write, an actualization read, a probe)
    /// and the sequencer is not cleaned up.
    fn waiting_retry(&self) -> Option<Instant> {
        if self.probe.in_flight.is_some() || self.unflushed.in_flight().is_some() {
            return None;
        }
        match &self.phase {
            Phase::CleanedUp => return None,
            Phase::Ready => {}
            Phase::Actualizing(a) => {
                if let Step::ReadOffset { issued: Some(_) }
                | Step::Replay {
                    issued: Some(_), ..
                } = a.step
                {
                    return None;
                }
            }
        }
        self.timers.earliest(|timer| {
            matches!(timer, Timer::WriteRetry | Timer::ActualizeRetry) && self.awaits(timer)
        })
    }

    /// After a failure at `now`: the next probe one (jittered) first delay from now, if the
    /// retry it would stand in for waits longer than that; otherwise none (the retry comes
    /// first, or something outstanding will answer).
    fn arm_probe(&mut self, now: Instant) {
        match self.waiting_retry() {
            Some(retry) if retry > now.saturating_add(self.retry.first) => {
                let delay = self.retry.probe_delay(self.probe.sent, now);
                self.timers.set(Timer::Probe, now.saturating_add(delay));
            }
            _ => self.timers.stop(Timer::Probe),
        }
    }

    /// The probe, if its time has come at `now` and the retry it stands in for is still
    /// ahead (a retry already due goes itself instead). An expired probe timer is stopped
    /// either way, so it never keeps [`poll_timeout`](Self::poll_timeout) in the past.
    pub(super) fn poll_probe(&mut self, now: Instant) -> Option<Work> {
        if !self.timers.expired(Timer::Probe, now) {
            return None;
        }
        self.timers.stop(Timer::Probe);
        if self.waiting_retry().is_none_or(|retry| retry <= now) {
            return None;
        }
        let ticket = self.new_ticket();
        self.probe.in_flight = Some(ticket);
        self.probe.sent = self.probe.sent.wrapping_add(1);
        Some(Work::ReadNextOffset { ticket })
    }
}

#[cfg(test)]
mod tests;
