//! The faults injected step by step, at the rates the seed drew ([`FaultRates`]): storage
//! acting on an operation (or failing, halfway or not), outcomes delivered late, out of order or
//! with a lost acknowledgement, and crashes.

use super::*;

impl World<'_> {
    /// Storage acts on operation `i`: a read is answered (or fails), a write applies its next
    /// half (or fails).
    pub(super) fn perform(&mut self, i: usize) {
        let calm = self.calm;
        let down = self.io.storage.down() && !calm;
        let fail = |rng: &mut Rng, percent| !calm && (down || rng.chance(percent));
        let rates = &self.faults;
        let p = &mut self.pending[i];
        let (next_state, note) = match (&p.begun, &p.state) {
            (Work::ReadNextOffset { ticket: Ticket(op) }, _) => {
                if fail(&mut self.rng, rates.read_fails_percent) {
                    self.stats.failed_reads += 1;
                    (
                        OpState::Ready(Delivery::Failed("read failed".into())),
                        format!("op {op} fails"),
                    )
                } else {
                    let o = self.io.storage.mem.next_offset;
                    (
                        OpState::Ready(Delivery::NextOffset(o)),
                        format!("op {op} reads offset {o}"),
                    )
                }
            }
            (
                Work::ReadPlog {
                    ticket: Ticket(op),
                    from,
                },
                _,
            ) => {
                if fail(&mut self.rng, rates.read_fails_percent) {
                    self.stats.failed_reads += 1;
                    (
                        OpState::Ready(Delivery::Failed("read failed".into())),
                        format!("op {op} fails"),
                    )
                } else {
                    let max = self.rng.range(1, self.shape.page_events) as usize;
                    let (values, next, end) = self.io.storage.mem.read_plog(*from, max);
                    let note = format!("op {op} reads PLog [{from}, {next}) end={end}");
                    (
                        OpState::Ready(Delivery::PlogPage { values, next, end }),
                        note,
                    )
                }
            }
            (
                Work::Write(WriteRequest {
                    ticket: Ticket(op),
                    values,
                    next_plog_offset: next_offset,
                }),
                OpState::Waiting,
            ) => {
                if fail(&mut self.rng, rates.write_fails_percent) {
                    self.stats.failed_writes += 1;
                    (
                        OpState::Ready(Delivery::Failed("write failed".into())),
                        format!("write {op} fails"),
                    )
                } else {
                    let half = self.io.storage.first_half();
                    self.io.storage.apply(half, values, *next_offset);
                    (OpState::Half, format!("write {op} applies {half:?}"))
                }
            }
            (
                Work::Write(WriteRequest {
                    ticket: Ticket(op),
                    values,
                    next_plog_offset: next_offset,
                }),
                _,
            ) => {
                if fail(&mut self.rng, rates.write_fails_halfway_percent) {
                    self.stats.failed_writes += 1;
                    (
                        OpState::Ready(Delivery::Failed("write failed halfway".into())),
                        format!("write {op} fails halfway"),
                    )
                } else {
                    let half = match self.io.storage.first_half() {
                        crate::sim::storage::WriteHalf::Values => {
                            crate::sim::storage::WriteHalf::Offset
                        }
                        crate::sim::storage::WriteHalf::Offset => {
                            crate::sim::storage::WriteHalf::Values
                        }
                    };
                    self.io.storage.apply(half, values, *next_offset);
                    (
                        OpState::Ready(Delivery::Written),
                        format!("write {op} applies {half:?}: durable"),
                    )
                }
            }
        };
        p.state = next_state;
        self.note(|| note);
    }

    /// Reports operation `i`'s outcome to the engine, which must accept it.
    pub(super) fn deliver(&mut self, i: usize) -> Checked {
        let p = self.pending.remove(i);
        let op = p.begun.ticket().0;
        let OpState::Ready(mut outcome) = p.state else {
            return Err(violation(
                Invariant::HostContract,
                "delivering an unfinished operation",
            ));
        };
        if outcome == Delivery::Written
            && !self.calm
            && self.rng.chance(self.faults.write_ack_lost_percent)
        {
            // The write landed but its acknowledgement was lost: storage reports a failure.
            self.stats.ambiguous_writes += 1;
            outcome = Delivery::Failed("timed out (the write landed)".into());
        }
        if matches!(outcome, Delivery::Failed(_)) {
            self.stats.failures_delivered += 1;
        }
        self.last_delivered = Some(op);
        let reply = self.call(Call::Deliver { op, outcome }, false)?;
        expect_done(&reply, "deliver of an outstanding operation")
    }

    /// Everything in memory is lost; storage keeps whatever already reached it, including half
    /// of a write. With `graceful`, the sequencer is cleaned up first.
    pub(super) fn crash(&mut self, graceful: bool) -> Checked {
        if graceful {
            self.stats.shutdowns += 1;
            self.call(Call::Cleanup, false)?;
            let reply = self.call(Call::Start { kind: 1, ws: 0 }, false)?;
            if reply != Reply::Start(Err(Refusal::CleanedUp)) {
                return Err(unexpected("start after cleanup", &reply));
            }
            if let Some(op) = self.pending.first().map(|p| p.begun.ticket().0) {
                let reply = self.call(
                    Call::Deliver {
                        op,
                        outcome: Delivery::Failed("late".into()),
                    },
                    false,
                )?;
                if reply != Reply::Done(Err(Refusal::CleanedUp)) {
                    return Err(unexpected("deliver after cleanup", &reply));
                }
            }
        } else {
            self.stats.crashes += 1;
            if self
                .pending
                .iter()
                .any(|p| matches!(p.state, OpState::Half))
            {
                self.stats.torn_crashes += 1;
                self.note(|| "crash between the two halves of a write".into());
            }
        }
        if self.tx().is_some_and(|tx| !tx.staged.is_empty()) {
            self.stats.staged_crashes += 1;
            self.note(|| "events staged, not flushed, are lost".into());
        }
        self.engine = None;
        self.pending.clear();
        // Operation ids start again from 0 in the new life.
        self.last_delivered = None;
        self.wake = None;
        self.cp = Cp::Idle;
        self.epoch_last.clear();
        self.boot()
    }
}
