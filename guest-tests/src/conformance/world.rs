//! The host every runner models (`guest-tests/conformance/README.md`): the in-memory storage
//! model of the testkit with its fault switches, a queue of operations the sequencer began, and
//! a manual clock. Both engines see it through the shell's host view: the component through the
//! link module's imports, the native shell directly.

use std::sync::{Arc, Mutex, MutexGuard};

use sequencer::testkit::{MemStorage, StorageOp};
use sequencer::{Host, Instant, Read, SeqId, Status, Work, WsId};

/// Storage, queue, clock and faults.
#[derive(Debug, Default)]
pub struct World {
    /// The PLog, the view, the stored next offset and the fault switches.
    pub storage: MemStorage,
    /// How many PLog events a read returns at most.
    pub page_events: usize,
    /// Operations begun and not performed, in the order begun.
    pub queue: Vec<Work>,
    /// The clock, in nanoseconds.
    pub now: u64,
    /// The wake-up last asked for.
    pub wake: Option<u64>,
    /// The status last reported.
    pub status: Option<Status>,
}

impl World {
    /// Writes applied so far.
    pub fn writes(&self) -> u64 {
        self.storage
            .ops
            .iter()
            .filter(|op| matches!(op, StorageOp::Offset(_)))
            .count() as u64
    }

    /// The index of the first queued operation that may run now: in the order begun, except
    /// that no write runs while writes are held and no offset read overtakes a queued write.
    pub fn runnable(&self) -> Option<usize> {
        self.queue.iter().enumerate().position(|(i, w)| match w {
            Work::Write(_) => !self.storage.faults.hold_writes,
            Work::ReadNextOffset { .. } => {
                !self.queue[..i].iter().any(|o| matches!(o, Work::Write(_)))
            }
            Work::ReadPlog { .. } => true,
        })
    }
}

/// A shared handle on the [`World`]: the view the sequencer's host calls reach.
#[derive(Clone, Debug, Default)]
pub struct WorldHandle(pub Arc<Mutex<World>>);

impl WorldHandle {
    /// The world, locked.
    pub fn lock(&self) -> MutexGuard<'_, World> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Host for WorldHandle {
    fn now(&mut self) -> Instant {
        Instant::from_nanos(self.lock().now)
    }

    fn read_numbers(&mut self, ws: WsId, seqs: &[SeqId]) -> Read {
        self.lock().storage.answer_numbers(ws, seqs)
    }

    fn read_numbers_many(&mut self, ws: &[WsId], seqs: &[SeqId]) -> Read {
        self.lock().storage.answer_numbers_many(ws, seqs)
    }

    fn begin(&mut self, work: Work) {
        self.lock().queue.push(work);
    }

    fn set_wake(&mut self, at: Option<Instant>) {
        self.lock().wake = at.map(Instant::as_nanos);
    }

    fn status_changed(&mut self, status: Status) {
        self.lock().status = Some(status);
    }
}
