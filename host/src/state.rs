//! The data each instance's store holds: the partition's storage and clock as the shell's host
//! view ([`sequencer::Host`]), which the link module turns into the guest's imports.

use std::sync::Arc;

use sequencer::{Host, Instant, Read, SeqId, Status, Work, WsId};

use crate::clock::Clock;
use crate::storage::{PartitionId, Storage};

/// Store data: the partition's storage and clock, plus what the guest asked for during the
/// current call (collected, then handed to the task driver after the call returns).
pub struct HostState {
    pub(crate) partition: PartitionId,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) clock: Arc<dyn Clock>,
    /// The storage work the guest began.
    pub(crate) outbox: Vec<Work>,
    /// `Some` when the guest changed its wake-up request during the call.
    pub(crate) wake: Option<Option<Instant>>,
    /// `Some` when the guest reported a status change during the call.
    pub(crate) status: Option<Status>,
}

impl HostState {
    pub(crate) fn new(
        partition: PartitionId,
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            partition,
            storage,
            clock,
            outbox: Vec::new(),
            wake: None,
            status: None,
        }
    }
}

impl Host for HostState {
    fn now(&mut self) -> Instant {
        self.clock.now()
    }

    fn read_numbers(&mut self, ws: WsId, seqs: &[SeqId]) -> Read {
        match self.storage.read_numbers(self.partition, ws, seqs) {
            Ok(numbers) => Read::Numbers(numbers),
            Err(e) => Read::Failed(e.to_string()),
        }
    }

    fn read_numbers_many(&mut self, ws: &[WsId], seqs: &[SeqId]) -> Read {
        match self.storage.read_numbers_many(self.partition, ws, seqs) {
            Ok(numbers) => Read::Numbers(numbers),
            Err(e) => Read::Failed(e.to_string()),
        }
    }

    fn begin(&mut self, work: Work) {
        self.outbox.push(work);
    }

    fn set_wake(&mut self, at: Option<Instant>) {
        self.wake = Some(at);
    }

    fn status_changed(&mut self, status: Status) {
        self.status = Some(status);
    }
}
