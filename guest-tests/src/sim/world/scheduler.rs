//! The scheduler: which step comes next (weighted by what can happen now), doing it, and
//! settling without faults at the end of a run.

use super::*;

impl World<'_> {
    pub(super) fn performable(&self) -> Vec<usize> {
        (0..self.pending.len())
            .filter(|&i| {
                let p = &self.pending[i];
                !matches!(p.state, OpState::Ready(_)) && p.not_before <= self.io.now
            })
            .collect()
    }

    pub(super) fn deliverable(&self) -> Vec<usize> {
        (0..self.pending.len())
            .filter(|&i| matches!(self.pending[i].state, OpState::Ready(_)))
            .collect()
    }

    pub(super) fn next_deadline(&self) -> Option<u64> {
        let now = self.io.now;
        let ops = self
            .pending
            .iter()
            .filter(|p| !matches!(p.state, OpState::Ready(_)))
            .map(|p| p.not_before);
        ops.chain(self.wake).filter(|&t| t > now).min()
    }

    pub(super) fn choose(&mut self) -> Action {
        use Action::*;
        let down = self.io.storage.down();
        // As `performable`/`deliverable` would say, without collecting them (every step).
        let now = self.io.now;
        let (can_perform, can_deliver) = self.pending.iter().fold((false, false), |(p, d), op| {
            let ready = matches!(op.state, OpState::Ready(_));
            (p || (!ready && op.not_before <= now), d || ready)
        });
        let f = &self.faults;
        let table = [
            (Command, 300),
            (Perform, if can_perform { 140 } else { 0 }),
            (Deliver, if can_deliver { 140 } else { 0 }),
            (
                Timer,
                if self.wake.is_some_and(|w| w <= self.io.now) {
                    120
                } else {
                    0
                },
            ),
            (Pump, 5),
            (Tick, 60),
            (
                ToDeadline,
                if self.next_deadline().is_some() {
                    50
                } else {
                    0
                },
            ),
            (Jump, f.jump_weight),
            (Crash, f.crash_weight),
            (Shutdown, f.shutdown_weight),
            (Outage, if down { 0 } else { f.outage_weight }),
            (Recover, if down { f.recover_weight } else { 0 }),
            (Actualize, 5),
            (Probe, 15),
        ];
        let weights = table.map(|(_, w)| w);
        let i = self.rng.weighted(&weights).unwrap_or(0);
        table[i].0
    }

    pub(super) fn act(&mut self, action: Action) -> Checked {
        match action {
            Action::Command => self.command(),
            Action::Perform => {
                let ready = self.performable();
                let i = ready[self.rng.index(ready.len())];
                self.perform(i);
                Ok(())
            }
            Action::Deliver => {
                let ready = self.deliverable();
                let i = ready[self.rng.index(ready.len())];
                if i != ready[0] {
                    self.stats.reordered_deliveries += 1;
                }
                self.deliver(i)
            }
            Action::Timer => {
                self.wake = None;
                self.call(Call::Pump, false).map(drop)
            }
            Action::Pump => self.call(Call::Pump, false).map(drop),
            Action::Tick => {
                self.io.now = self.io.now.saturating_add(self.rng.range(1_000, 3 * MS));
                Ok(())
            }
            Action::ToDeadline => {
                if let Some(t) = self.next_deadline() {
                    self.io.now = t;
                }
                Ok(())
            }
            Action::Jump => {
                self.stats.clock_jumps += 1;
                self.io.now = if self.rng.chance(self.faults.jump_to_end_percent) {
                    self.io.now.max(u64::MAX - self.rng.below(1 << 40))
                } else {
                    let r = &self.faults.jump_ns;
                    self.io
                        .now
                        .saturating_add(self.rng.range(*r.start(), *r.end()))
                };
                self.note(|| "the clock jumps".into());
                Ok(())
            }
            Action::Crash => self.crash(false),
            Action::Shutdown => self.crash(true),
            Action::Outage => {
                self.stats.outages += 1;
                self.io.storage.mem.faults.down = true;
                Ok(())
            }
            Action::Recover => {
                self.io.storage.mem.faults.down = false;
                Ok(())
            }
            Action::Actualize => self.caller_actualize(),
            Action::Probe => self.probe(),
        }
    }

    /// Faults stop; the command processor finishes its transaction, storage completes every
    /// operation, timers fire. Then everything that reached the PLog must be in storage and
    /// the sequencer ready.
    pub(super) fn settle(&mut self) -> Checked {
        self.calm = true;
        self.io.storage.mem.faults.down = false;
        let mut rounds = 0;
        loop {
            rounds += 1;
            if rounds > 10_000 {
                return Err(violation(
                    Invariant::Liveness,
                    "the system did not settle within 10,000 fault-free steps",
                ));
            }
            self.step += 1;
            self.begin_line(
                self.head(|| format!("settle #{} t={}", self.step, fmt_ns(self.io.now))),
            );
            let result = self.settle_step();
            let result = match result {
                Ok(true) => self.check().map(|()| true),
                other => other,
            };
            self.end_line();
            if !result? {
                break;
            }
        }
        let status = self.status()?;
        if status != Status::Ready {
            return Err(violation(
                Invariant::Liveness,
                format!("after settling without faults the sequencer is {status:?}, not ready"),
            ));
        }
        let storage = &self.io.storage;
        let plog_next = storage.mem.plog_next();
        // A flush stores its own event's offset (a restart replays that event again, which is
        // harmless); a replay stores the offset after the last event it read.
        let stored_ok = if storage.mem.plog.is_empty() {
            storage.mem.next_offset <= 1
        } else {
            storage.mem.next_offset + 1 >= plog_next
        };
        if !stored_ok {
            return Err(violation(
                Invariant::Liveness,
                format!(
                    "after settling storage holds next offset {}, the PLog's next is {plog_next}: a restart would replay more than the last event",
                    storage.mem.next_offset
                ),
            ));
        }
        let view: BTreeMap<NumberKey, u64> =
            storage.mem.numbers.iter().map(|(k, v)| (*k, *v)).collect();
        if view != self.plog_max {
            let diff = self
                .plog_max
                .iter()
                .find(|(k, v)| view.get(k) != Some(v))
                .map(|(k, v)| {
                    format!(
                        "ws {} seq {}: PLog {v}, view {:?}",
                        k.ws,
                        k.seq,
                        view.get(k)
                    )
                })
                .unwrap_or_else(|| "the view holds keys the PLog does not".into());
            return Err(violation(
                Invariant::Liveness,
                format!("after settling the view differs from the PLog: {diff}"),
            ));
        }
        Ok(())
    }

    /// One fault-free step; false once nothing is left to do.
    pub(super) fn settle_step(&mut self) -> Checked<bool> {
        if self.cp != Cp::Idle {
            self.note(|| "finish the transaction".into());
            if let Some(tx) = self.tx_mut() {
                tx.nexts_left = 0;
            }
            self.command()?;
            return Ok(true);
        }
        if let Some(i) =
            (0..self.pending.len()).find(|&i| !matches!(self.pending[i].state, OpState::Ready(_)))
        {
            self.io.now = self.io.now.max(self.pending[i].not_before);
            self.perform(i);
            return Ok(true);
        }
        if !self.pending.is_empty() {
            self.deliver(0)?;
            return Ok(true);
        }
        if let Some(at) = self.wake {
            self.io.now = self.io.now.max(at);
            self.wake = None;
            self.call(Call::Pump, false)?;
            return Ok(true);
        }
        Ok(false)
    }
}
