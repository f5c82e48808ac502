//! The simulated storage of one partition: the testkit's storage model (the PLog, the sequences
//! view, the stored next PLog offset, its fault switches), changed only by explicit simulator
//! steps so that every interleaving is reproducible, and written half a write at a time.

use sequencer::testkit::MemStorage;
use sequencer::{Number, NumberKey, PLogOffset, SeqValue};

/// One partition's durable state.
#[derive(Clone, Debug, Default)]
pub struct SimStorage {
    /// The PLog, the view, the stored next offset; `faults.down`: every operation, appends
    /// and numbers reads included, fails.
    pub mem: MemStorage,
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
    /// Storage is down.
    pub fn down(&self) -> bool {
        self.mem.faults.down
    }

    /// The view's last number of `key`, 0 if none.
    pub fn view(&self, key: &NumberKey) -> Number {
        self.mem.numbers.get(key).copied().unwrap_or(0)
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
            WriteHalf::Values => self.mem.write_values(values),
            WriteHalf::Offset => self.mem.write_offset(next_offset),
        }
    }
}
