//! The simulated storage of one partition: the PLog, the sequences view and the stored next PLog
//! offset, changed only by explicit simulator steps so that every interleaving is reproducible.

use std::collections::BTreeMap;

use sequencer::{Number, NumberKey, PLogOffset, SeqValue};

/// One partition's durable state.
#[derive(Clone, Debug, Default)]
pub struct SimStorage {
    /// The sequences view: last number per key.
    pub view: BTreeMap<NumberKey, Number>,
    /// The stored next PLog offset (0: none stored).
    pub next_offset: PLogOffset,
    /// PLog events by offset.
    pub plog: BTreeMap<PLogOffset, Vec<SeqValue>>,
    /// Storage is down: every operation, appends and numbers reads included, fails.
    pub down: bool,
    /// Halves of writes applied so far (a change counter for the view and the offset).
    pub applied: u64,
    /// The deliberately broken storage of the simulator's self-test: a write stores its next
    /// PLog offset before its values, so a crash between the two halves leaves the offset ahead
    /// of values that never arrive. Never set outside that test.
    pub offset_first: bool,
}

/// Which half of a write a storage step applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteHalf {
    /// The sequence values.
    Values,
    /// The next PLog offset.
    Offset,
}

impl SimStorage {
    /// The offset the PLog accepts next: after its last event, or 1 when it is empty.
    pub fn plog_next(&self) -> PLogOffset {
        self.plog.last_key_value().map_or(1, |(o, _)| o + 1)
    }

    /// The stored numbers of `seqs` in workspace `ws`, 0 for a key never stored.
    pub fn read_numbers(&self, ws: u64, seqs: &[u16]) -> Vec<Number> {
        seqs.iter()
            .map(|&seq| self.view.get(&NumberKey { ws, seq }).copied().unwrap_or(0))
            .collect()
    }

    /// Up to `max_events` events from `from` on: the values with their offsets, the offset
    /// after the last event read, and whether the PLog ends there.
    pub fn read_plog(
        &self,
        from: PLogOffset,
        max_events: usize,
    ) -> (Vec<(PLogOffset, SeqValue)>, PLogOffset, bool) {
        let mut values = Vec::new();
        let mut next = from;
        let mut events = self.plog.range(from..);
        for (&offset, event) in events.by_ref().take(max_events) {
            values.extend(event.iter().map(|v| (offset, *v)));
            next = offset + 1;
        }
        let end = events.next().is_none();
        (values, next, end)
    }

    /// The half of a write applied first: the values, or the offset in the broken storage.
    pub fn first_half(&self) -> WriteHalf {
        if self.offset_first {
            WriteHalf::Offset
        } else {
            WriteHalf::Values
        }
    }

    /// Applies one half of a write.
    pub fn apply(&mut self, half: WriteHalf, values: &[SeqValue], next_offset: PLogOffset) {
        self.applied += 1;
        match half {
            WriteHalf::Values => {
                for v in values {
                    self.view.insert(v.key, v.value);
                }
            }
            WriteHalf::Offset => self.next_offset = next_offset,
        }
    }

    /// The first event below the stored next offset whose numbers the view lacks, if any:
    /// a restart would skip replaying it and hand its numbers out again.
    pub fn offset_ahead_of_values(&self) -> Option<(PLogOffset, SeqValue)> {
        self.plog
            .range(..self.next_offset)
            .find_map(|(&offset, event)| {
                event
                    .iter()
                    .find(|v| self.view.get(&v.key).copied().unwrap_or(0) < v.value)
                    .map(|v| (offset, *v))
            })
    }
}
