//! The actualizer's reads (docs/DESIGN.md §4.2): the stored offset, then the PLog replayed
//! page by page into the values waiting to be written, and what a write superseded by
//! `actualize_beside_write` does when it settles meanwhile.

use super::{Actualization, Phase, Sequencer, Step};
use crate::error::Error;
use crate::timer::Timer;
use crate::types::{Instant, PLogOffset, SeqId};
use crate::work::{PLOG_WORDS_PER_VALUE, PageValues, PlogPage, PlogWords, ReplayProgress, Ticket};

impl Sequencer {
    /// Reports the stored next PLog offset read for [`Work::ReadNextOffset`](crate::Work::ReadNextOffset) (0 if none). A
    /// probe's offset is not used: that storage answered is all it says (docs/DESIGN.md §4.4).
    pub fn complete_next_offset(
        &mut self, ticket: Ticket, offset: PLogOffset,
    ) -> Result<(), Error> {
        self.check_alive()?;
        if self.probe.in_flight == Some(ticket) {
            self.complete_probe();
            return Ok(());
        }
        match &mut self.phase {
            Phase::Actualizing(a) if matches!(a.step, Step::ReadOffset { issued: Some(t) } if t == ticket) =>
            {
                if offset == PLogOffset::MAX {
                    return Err(Error::MalformedPlogPage {
                        from: offset,
                        reason: "the stored next offset is the last there is: no event could follow",
                    });
                }
                self.offset_read = offset;
                if self.replay_floor > 0 && offset > self.replay_floor {
                    // The superseded write settled before this read and its values wait again,
                    // but another writer stored a later offset: its view holds every number of
                    // those events, at least as large. Served, they would issue numbers the
                    // PLog holds; so they go, and the replay starts where the view ends.
                    self.unflushed.clear_waiting();
                    self.replay_floor = 0;
                }
                a.step = Step::Replay {
                    from: offset.max(1).max(self.replay_floor),
                    issued: None,
                };
                self.storage_answered();
                self.stop_actualizer_timers();
                self.stored_offset = offset.max(self.replay_floor);
                Ok(())
            }
            _ => Err(self.ticket_error(ticket, "a next PLog offset read")),
        }
    }

    /// Reports a page read for [`Work::ReadPlog`](crate::Work::ReadPlog). Consumes the page's events in order until
    /// `max_unflushed_values` values wait; the rest is asked for again by a later `ReadPlog`.
    pub fn complete_plog_read(
        &mut self, ticket: Ticket, page: PlogPage<'_>, now: Instant,
    ) -> Result<ReplayProgress, Error> {
        let from = self.replay_from(ticket)?;
        validate_offsets(from, page.next, page.values.iter().map(|&(o, _)| o))?;
        Ok(self.replay(from, page.values, page.next, page.end, now))
    }

    /// [`complete_plog_read`](Self::complete_plog_read) for a page in the flat layout of
    /// [`PlogWords`]: the same replay, value for value. A page whose length is not a multiple
    /// of [`PLOG_WORDS_PER_VALUE`] or that names a sequence above `u16::MAX` is refused as
    /// [`Error::MalformedPlogPage`], like any other broken promise of a page, and changes
    /// nothing.
    pub fn complete_plog_words(
        &mut self, ticket: Ticket, page: PlogWords<'_>, now: Instant,
    ) -> Result<ReplayProgress, Error> {
        let from = self.replay_from(ticket)?;
        let bad = |reason| Err(Error::MalformedPlogPage { from, reason });
        let (values, rest) = page.words.as_chunks::<PLOG_WORDS_PER_VALUE>();
        if !rest.is_empty() {
            return bad("the flat page's length is not a whole number of values (4 words each)");
        }
        // One pass over the page checks both the offsets and the sequences.
        let mut wide_seq = false;
        let offsets = values.iter().map(|v| {
            wide_seq |= v[2] > u64::from(SeqId::MAX);
            v[0]
        });
        validate_offsets(from, page.next, offsets)?;
        if wide_seq {
            return bad("a flat value's sequence does not fit 16 bits");
        }
        Ok(self.replay(from, values, page.next, page.end, now))
    }

    /// The offset the PLog read under `ticket` was asked from, or the error for a report that
    /// does not match it.
    fn replay_from(&self, ticket: Ticket) -> Result<PLogOffset, Error> {
        self.check_alive()?;
        let from = match &self.phase {
            Phase::Actualizing(Actualization {
                step:
                    Step::Replay {
                        from,
                        issued: Some(t),
                        ..
                    },
                ..
            }) if *t == ticket => *from,
            _ => return Err(self.ticket_error(ticket, "a PLog read")),
        };
        Ok(from)
    }

    /// Replays a validated page read from `from`: consumes its events in order until
    /// `max_unflushed_values` values wait.
    fn replay<P: PageValues + ?Sized>(
        &mut self, from: PLogOffset, values: &P, next: PLogOffset, end: bool, now: Instant,
    ) -> ReplayProgress {
        self.storage_answered();
        let len = values.count();
        let mut i = 0;
        let mut cursor = from;
        while i < len {
            let offset = values.offset(i);
            if offset < self.replay_floor {
                // In storage already, by the write that landed beside the actualization.
                while i < len && values.offset(i) == offset {
                    i += 1;
                }
                cursor = offset + 1;
                continue;
            }
            if self.unflushed.count() >= self.max_unflushed {
                cursor = offset;
                break;
            }
            // The event's values, a run of one workspace at a time (one lookup per run).
            while i < len && values.offset(i) == offset {
                let ws = values.ws(i);
                let mut run = i + 1;
                while run < len && values.offset(run) == offset && values.ws(run) == ws {
                    run += 1;
                }
                self.unflushed
                    .raise_ws(ws, (i..run).map(|j| values.seq_value(j)));
                i = run;
            }
            cursor = offset + 1;
        }
        let whole_page = i == len;
        if whole_page {
            cursor = next;
        }
        if cursor > from {
            self.unflushed.raise_offset(cursor);
        }
        let finished = whole_page && end;
        if finished {
            self.phase = Phase::Ready;
            self.next_offset = cursor;
            self.stop_actualizer_timers();
        } else if let Phase::Actualizing(a) = &mut self.phase {
            a.step = Step::Replay {
                from: cursor,
                issued: None,
            };
            self.timers.stop(Timer::ActualizeRetry);
            if whole_page {
                self.timers.stop(Timer::ReplayRecheck);
            } else {
                let at = now.saturating_add(self.batcher_delay);
                self.timers.set(Timer::ReplayRecheck, at);
            }
        }
        ReplayProgress {
            consumed: i,
            finished,
        }
    }

    /// True while actualizing with no wait for a write ahead: after `actualize_beside_write`,
    /// or once `actualize`'s wait is over (then no write is superseded any more).
    pub(super) fn reading_beside_write(&self) -> bool {
        matches!(&self.phase, Phase::Actualizing(a) if !matches!(a.step, Step::AwaitWrite))
    }

    /// Whether the write being written (one the last actualization superseded) is older than
    /// the view that actualization read: a stored next offset past the write's was stored by
    /// another writer (this one has one write out at a time), whose view holds every number of
    /// the write's events at least as large. Its values must then not wait again: served by a
    /// start before the view's rows, they would issue numbers the PLog already holds.
    pub(super) fn superseded_by_view(&self) -> bool {
        self.unflushed
            .in_flight_offset()
            .is_some_and(|offset| self.offset_read > offset)
    }

    /// The write superseded by `actualize_beside_write` settled during the actualization,
    /// landed or maybe landed (a failure may be a lost answer). The offset read may have found
    /// the offset before it, so the replay from there would write older numbers of its keys,
    /// which a store that overwrites would let lower what it wrote. So its values and offset
    /// wait again, merged by maximum with what the replay gathered (they are written again,
    /// whether it landed or not), and the replay skips the events before its offset, which
    /// those values cover. Returns its offset.
    pub(super) fn requeue_superseded(&mut self) -> Option<PLogOffset> {
        let offset = self.unflushed.requeue_in_flight()?;
        self.replay_floor = self.replay_floor.max(offset);
        if let Phase::Actualizing(Actualization {
            step: Step::Replay { from, issued: None },
            ..
        }) = &mut self.phase
        {
            *from = (*from).max(offset);
        }
        Some(offset)
    }

    pub(super) fn after_write_settled(&mut self) {
        if let Phase::Actualizing(a) = &mut self.phase
            && matches!(a.step, Step::AwaitWrite)
        {
            a.step = Step::ReadOffset { issued: None };
        }
    }
}

/// Checks a page's promises: `next` not before `from`, value offsets within `[from, next)` and
/// never going backwards.
fn validate_offsets(
    from: PLogOffset, next: PLogOffset, offsets: impl Iterator<Item = PLogOffset>,
) -> Result<(), Error> {
    let bad = |reason| Err(Error::MalformedPlogPage { from, reason });
    if next < from {
        return bad("next offset is before the requested offset");
    }
    if next == PLogOffset::MAX {
        return bad("next offset is the last there is: no event could follow");
    }
    let mut last = from;
    for offset in offsets {
        if offset < last {
            return bad("value offsets go backwards or start before the requested offset");
        }
        if offset >= next {
            return bad("a value's offset is not below the page's next offset");
        }
        last = offset;
    }
    Ok(())
}
