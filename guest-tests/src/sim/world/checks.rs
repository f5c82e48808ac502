//! The invariants checked after every step, one checker per family.

use super::*;

impl World<'_> {
    /// The invariants that must hold after every step.
    pub(super) fn check(&mut self) -> Checked {
        self.check_offset_not_ahead_of_values()?;
        self.check_status()?;
        self.check_memory_bounds()
    }

    /// OffsetNotAheadOfValues: the stored next offset never passes the PLog's end, and every
    /// event below it has its numbers in the view.
    fn check_offset_not_ahead_of_values(&mut self) -> Checked {
        let storage = &self.io.storage;
        let upto = storage.mem.next_offset.min(storage.mem.plog_next());
        if upto < self.covered_upto {
            self.covered_max.clear();
            self.covered_upto = 0;
        }
        for event in storage
            .mem
            .plog
            .range(self.covered_upto..upto)
            .map(|(_, e)| e)
        {
            for v in event {
                let max = self.covered_max.entry(v.key).or_default();
                *max = (*max).max(v.value);
            }
        }
        self.covered_upto = self.covered_upto.max(upto);
        let state = (self.covered_upto, storage.applied);
        let behind = state != self.covered_checked
            && self.covered_max.iter().any(|(k, &m)| storage.view(k) < m);
        if !behind {
            self.covered_checked = state;
        }
        if behind {
            let detail = match storage.mem.offset_ahead_of_values() {
                Some((offset, v)) => format!(
                    "storage holds next offset {} but event {offset}'s number {} of ws {} seq {} is not in the view (view has {})",
                    storage.mem.next_offset,
                    v.value,
                    v.key.ws,
                    v.key.seq,
                    storage.view(&v.key)
                ),
                None => format!(
                    "storage holds next offset {} but the view lacks numbers of the events below it",
                    storage.mem.next_offset
                ),
            };
            return Err(violation(Invariant::OffsetNotAheadOfValues, detail));
        }
        if storage.mem.next_offset > storage.mem.plog_next() {
            return Err(violation(
                Invariant::OffsetNotAheadOfValues,
                format!(
                    "storage holds next offset {} beyond the PLog's end {}",
                    storage.mem.next_offset,
                    storage.mem.plog_next()
                ),
            ));
        }
        Ok(())
    }

    /// ExpectedReply, for the status: it is the one the guest last reported, and it agrees
    /// with the command processor.
    fn check_status(&mut self) -> Checked {
        let status = self.status()?;
        if self.reported != Some(status) {
            return Err(violation(
                Invariant::ExpectedReply,
                format!(
                    "the guest last reported status {:?}, status says {status:?}",
                    self.reported
                ),
            ));
        }
        let in_tx = self.cp != Cp::Idle;
        if in_tx != (status == Status::InTransaction) {
            return Err(violation(
                Invariant::ExpectedReply,
                format!(
                    "status {status:?} while the command processor is {:?}",
                    self.cp
                ),
            ));
        }
        Ok(())
    }

    /// MemoryBounds: what the sequencer holds stays within its params, the transaction holds
    /// exactly its events' numbers, the component's memory within its bound.
    fn check_memory_bounds(&mut self) -> Checked {
        let held = self.held()?;
        let cache_bound = self.shape.lru.max(ALL_SEQS);
        let unflushed_bound = self.shape.max_unflushed + WIDEST;
        // The transaction holds exactly the staged events' numbers (one per key) and the open
        // event's sequences: staged values neither leak nor linger.
        let staged = self.staged_keys();
        let open_slots = self
            .tx()
            .and_then(|tx| tx.open.as_ref())
            .map_or(0, |(kind, _)| kind_seqs(*kind).len());
        if held.transaction != staged + open_slots {
            return Err(violation(
                Invariant::MemoryBounds,
                format!(
                    "the transaction holds {} numbers; its {staged} staged keys and {open_slots} open sequences make {}",
                    held.transaction,
                    staged + open_slots
                ),
            ));
        }
        if held.cached > cache_bound
            || held.unflushed > unflushed_bound
            || held.unflushed + staged > unflushed_bound
            || open_slots > WIDEST
        {
            return Err(violation(
                Invariant::MemoryBounds,
                format!(
                    "{held:?} ({staged} staged) exceeds cache {cache_bound}, unflushed + staged {unflushed_bound}, open event {WIDEST}"
                ),
            ));
        }
        if let Some(peak) = self.engine.as_ref().and_then(|e| e.memory_peak()) {
            self.stats.peak_guest_memory = self.stats.peak_guest_memory.max(peak as u64);
            if peak > GUEST_MEMORY_BOUND {
                return Err(violation(
                    Invariant::MemoryBounds,
                    format!(
                        "the component's linear memory grew to {peak} bytes (bound {})",
                        GUEST_MEMORY_BOUND
                    ),
                ));
            }
        }
        self.stats.max_unflushed_seen = self.stats.max_unflushed_seen.max(held.unflushed as u64);
        Ok(())
    }
}
