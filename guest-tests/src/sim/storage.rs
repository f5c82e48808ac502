//! The simulated storage of one partition: the PLog, the sequences view and the stored next PLog
//! offset, changed only by explicit simulator steps so that every interleaving is reproducible.

use std::collections::BTreeMap;

use sequencer::testkit::{self, Plog};
use sequencer::{Number, NumberKey, PLogOffset, SeqValue};

/// One partition's durable state.
#[derive(Clone, Debug, Default)]
pub struct SimStorage {
    /// The sequences view: last number per key.
    pub view: BTreeMap<NumberKey, Number>,
    /// The stored next PLog offset (0: none stored).
    pub next_offset: PLogOffset,
    /// PLog events by offset.
    pub plog: Plog,
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
        testkit::plog_next(&self.plog)
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
        testkit::plog_page(&self.plog, from, max_events)
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
        testkit::offset_ahead_of_values(&self.plog, self.next_offset, |k| {
            self.view.get(k).copied().unwrap_or(0)
        })
    }
}
