//! The data each instance's store holds, and the imports the guest calls.

use std::sync::Arc;

use sequencer::{Instant, PLogOffset, SeqValue};
use wasmtime::StoreLimits;

use crate::bindings::{GuestSeqValue, clock, storage};
use crate::clock::Clock;
use crate::storage::{PartitionId, Storage};

/// A storage operation the guest began, waiting for the task driver to perform it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Read the stored next PLog offset.
    ReadNextOffset {
        /// The guest's operation id.
        op: u64,
    },
    /// Write values, then the next offset.
    Write {
        /// The guest's operation id.
        op: u64,
        /// The values.
        values: Vec<SeqValue>,
        /// The next PLog offset.
        next_offset: PLogOffset,
    },
    /// Read PLog events from an offset.
    ReadPlog {
        /// The guest's operation id.
        op: u64,
        /// The first offset.
        from: PLogOffset,
    },
}

/// Store data: the partition's storage and clock, plus what the guest asked for during the
/// current call (collected, then handed to the task driver after the call returns).
pub struct HostState {
    pub(crate) partition: PartitionId,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) limits: StoreLimits,
    pub(crate) outbox: Vec<Op>,
    /// `Some` when the guest changed its wake-up request during the call.
    pub(crate) wake: Option<Option<Instant>>,
}

impl HostState {
    pub(crate) fn new(
        partition: PartitionId,
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        limits: StoreLimits,
    ) -> Self {
        Self {
            partition,
            storage,
            clock,
            limits,
            outbox: Vec::new(),
            wake: None,
        }
    }
}

impl storage::Host for HostState {
    fn read_numbers(&mut self, ws: u64, seqs: Vec<u16>) -> Result<Vec<u64>, String> {
        self.storage
            .read_numbers(self.partition, ws, &seqs)
            .map_err(|e| e.to_string())
    }

    fn read_numbers_many(&mut self, ws: Vec<u64>, seqs: Vec<u16>) -> Result<Vec<u64>, String> {
        self.storage
            .read_numbers_many(self.partition, &ws, &seqs)
            .map_err(|e| e.to_string())
    }

    fn begin_read_next_offset(&mut self, op: u64) {
        self.outbox.push(Op::ReadNextOffset { op });
    }

    fn begin_write(&mut self, op: u64, values: Vec<GuestSeqValue>, next_plog_offset: u64) {
        let values = values
            .into_iter()
            .map(|v| SeqValue::new(v.ws, v.seq, v.value))
            .collect();
        self.outbox.push(Op::Write {
            op,
            values,
            next_offset: next_plog_offset,
        });
    }

    fn begin_read_plog(&mut self, op: u64, first: u64) {
        self.outbox.push(Op::ReadPlog { op, from: first });
    }
}

impl clock::Host for HostState {
    fn now(&mut self) -> u64 {
        self.clock.now().as_nanos()
    }

    fn set_wake(&mut self, at: Option<u64>) {
        self.wake = Some(at.map(Instant::from_nanos));
    }
}

impl crate::bindings::sequencer::plugin::types::Host for HostState {}
