//! The data each instance's store holds: the partition's storage and clock as the shell's host
//! view ([`sequencer::Host`]), which the link module turns into the guest's imports.

use std::sync::Arc;

use sequencer::{CheckedWords, Host, Instant, PLogOffset, Read, SeqId, Status, Ticket, Work, WsId};

use crate::clock::Clock;
use crate::store::storage::{PartitionId, Storage};

/// Storage work a guest began, as the task driver receives it.
pub(crate) enum Op {
    /// In the core's terms.
    Work(Work),
    /// A write still in the guest's flat words (checked in the call): the driver decodes
    /// them, off the caller's thread.
    WriteWords {
        ticket: Ticket,
        words: CheckedWords,
        next_plog_offset: PLogOffset,
    },
}

impl Op {
    /// The work in the core's terms (decoding a write's words).
    pub(crate) fn into_work(self) -> Work {
        match self {
            Op::Work(work) => work,
            Op::WriteWords {
                ticket,
                words,
                next_plog_offset,
            } => words.write_work(ticket, next_plog_offset),
        }
    }

    /// True for the work that waits for the partition's writes: a write (writes are applied in
    /// the order begun). Reads do not wait: an offset read beside a write finds the offset
    /// before it or the one it stores, and the core's replay is right from either.
    pub(crate) fn waits_for_writes(&self) -> bool {
        matches!(self, Op::WriteWords { .. } | Op::Work(Work::Write(_)))
    }
}

/// Store data: the partition's storage and clock, plus what the guest asked for during the
/// current call (collected, then handed to the task driver after the call returns).
pub struct HostState {
    pub(crate) partition: PartitionId,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) clock: Arc<dyn Clock>,
    /// The storage work the guest began.
    pub(crate) outbox: Vec<Op>,
    /// `Some` when the guest changed its wake-up request during the call.
    pub(crate) wake: Option<Option<Instant>>,
    /// `Some` when the guest reported a status change during the call.
    pub(crate) status: Option<Status>,
    /// The numbers `start-ahead` gave and which were handed out without a call (the per-step
    /// path; see `sequencer::ahead`). Lives with the instance: a replaced one starts afresh.
    pub(crate) ahead: sequencer::Ahead,
    /// Guest calls made to report what was done without a call (`take`, a deferred flush's
    /// `take-flush`) before the call proper, for `PartitionSequencer::guest_calls`.
    pub(crate) reports: u64,
}

impl HostState {
    pub(crate) fn new(
        partition: PartitionId, storage: Arc<dyn Storage>, clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            partition,
            storage,
            clock,
            outbox: Vec::new(),
            wake: None,
            status: None,
            ahead: sequencer::Ahead::new(),
            reports: 0,
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
        self.outbox.push(Op::Work(work));
    }

    fn begin_write_words(
        &mut self, ticket: Ticket, words: CheckedWords, next_plog_offset: PLogOffset,
    ) {
        self.outbox.push(Op::WriteWords {
            ticket,
            words,
            next_plog_offset,
        });
    }

    fn set_wake(&mut self, at: Option<Instant>) {
        self.wake = Some(at);
    }

    fn status_changed(&mut self, status: Status) {
        self.status = Some(status);
    }
}
