//! One partition's sequencer: a guest instance behind a lock, called by the command processor
//! and by the task driver, replaced by a fresh instance if it ever traps.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::FutureExt;
use futures::channel::oneshot;
use sequencer::PLogOffset;
use sequencer::facade::SequenceStatus as Status02;

use crate::driver::shared::{DriverMsg, Shared, sequencer_call, settle};
use crate::metrics::PartitionProbe;
use crate::runtime::bindings::{
    BatchNumbers, EventOffsets, EventStart, HeldNumbers, QuadNumbers, SeqQuad, SequenceStatus,
    StartOutcome, Status,
};
use crate::runtime::error::HostError;
use crate::runtime::link::core_status;
use crate::runtime::{Explained, Instance};
use crate::store::storage::PartitionId;

/// The command processor's handle on one partition's sequencer. Calls are serialised; the
/// task driver performs the storage work the sequencer asks for in the background.
#[derive(Clone)]
pub struct PartitionSequencer {
    pub(crate) shared: Arc<Shared>,
}

impl PartitionSequencer {
    /// The sequencer of `shared`'s partition: its first instance created, then `register`
    /// (which tells the driver about the partition).
    pub(crate) fn open(
        shared: Shared, register: impl FnOnce(&Arc<Shared>),
    ) -> Result<Self, HostError> {
        let shared = Arc::new(shared);
        if let Some(m) = &shared.metrics {
            let probe: std::sync::Weak<dyn PartitionProbe> = Arc::downgrade(&shared) as _;
            m.opened(probe);
        }
        {
            let mut slot = shared.lock();
            let created = shared.create_first_instance(&mut slot, || register(&shared));
            shared.let_go(slot);
            created?;
        }
        Ok(Self { shared })
    }

    /// The partition this sequencer serves.
    pub fn partition(&self) -> PartitionId {
        self.shared.partition
    }

    /// Begins a transaction: the PLog offset of its event, or "not now".
    ///
    /// The per-step path (`start`, a `next` per number, `flush`) crosses into the guest once
    /// per transaction, not once per step: `start-ahead` also answers what the `next`s the
    /// last transaction made (its first four) would hand out now; [`next`](Self::next) hands
    /// those out without a call, [`flush`](Self::flush) waits for this call, and this call
    /// reports both to the guest first (`take-flush-start-ahead`), which takes the numbers as
    /// `next` would have and flushes (`sequencer::ahead`). The status comes back in the
    /// result, as `start-status` gives it.
    pub fn start(&self, kind: u16, ws: u64) -> Result<StartOutcome, HostError> {
        self.shared
            .call_start(
                |i, taken| {
                    let seqs = question(i);
                    sequencer_call!(i, call_take_flush_start_ahead(taken, kind, ws, seqs))
                },
                |i| {
                    let seqs = question(i);
                    sequencer_call!(i, call_start_ahead(kind, ws, seqs))
                },
                |i, a| {
                    let host = &mut i.store.data_mut().host;
                    host.status = Some(core_status(a.status));
                    let open = matches!(a.outcome, StartOutcome::Started(_));
                    host.ahead.started([a.n0, a.n1, a.n2, a.n3], open);
                    a.outcome
                },
            )
            .inspect(|o| self.count(o))
    }

    /// Records a start's outcome in the partition's metrics, if it has any.
    #[inline]
    fn count(&self, outcome: &StartOutcome) {
        match outcome {
            StartOutcome::Started(_) => self.shared.started(1, None),
            StartOutcome::NotNow(r) => self.shared.started(0, Some(*r)),
        }
    }

    /// `start` and one `next` per sequence in `seqs`, in one guest call: for up to four
    /// sequences `start-next-quad` (no list crosses the boundary), else `start-next`. The
    /// numbers are `seqs`' in order, none unless it started.
    pub fn start_next(
        &self, kind: u16, ws: u64, seqs: &[u16],
    ) -> Result<(StartOutcome, Vec<u64>), HostError> {
        by_quad_or_lists(
            seqs,
            |quad| self.start_next_quad(kind, ws, quad),
            || {
                self.shared
                    .call(|i| sequencer_call!(i, call_start_next(kind, ws, seqs)))
                    .inspect(|(o, _)| self.count(o))
            },
        )
    }

    /// `flush`, then `start_next`, in one guest call: completes the transaction in progress
    /// and begins the next with its numbers (one crossing per event). An error `NoTransaction`
    /// or `CleanedUp` comes from the flush (nothing was done); any other error comes from the
    /// start: the flush is done and no transaction is open. Up to four sequences go through
    /// `flush-start-next-quad`, more through `flush-start-next` (as in `start_next`).
    pub fn flush_start_next(
        &self, kind: u16, ws: u64, seqs: &[u16],
    ) -> Result<(StartOutcome, Vec<u64>), HostError> {
        by_quad_or_lists(
            seqs,
            |quad| self.flush_start_next_quad(kind, ws, quad),
            || {
                self.shared
                    .call(|i| sequencer_call!(i, call_flush_start_next(kind, ws, seqs)))
                    .inspect(|(o, _)| self.count(o))
            },
        )
    }

    /// [`flush_start_next`](Self::flush_start_next) for up to four sequences, with no list
    /// crossing the boundary (the fast path of one event per call).
    pub fn flush_start_next_quad(
        &self, kind: u16, ws: u64, seqs: SeqQuad,
    ) -> Result<QuadNumbers, HostError> {
        self.shared
            .call(|i| sequencer_call!(i, call_flush_start_next_quad(kind, ws, seqs)))
            .inspect(|n| self.count(&n.outcome))
    }

    /// [`start_next`](Self::start_next) for up to four sequences, with no list crossing the
    /// boundary.
    pub fn start_next_quad(
        &self, kind: u16, ws: u64, seqs: SeqQuad,
    ) -> Result<QuadNumbers, HostError> {
        self.shared
            .call(|i| sequencer_call!(i, call_start_next_quad(kind, ws, seqs)))
            .inspect(|n| self.count(&n.outcome))
    }

    /// Ends the open event but not the transaction: the next `start` numbers another event of
    /// it; `flush` completes them all (they are in the PLog), `actualize` drops them all.
    pub fn stage(&self) -> Result<(), HostError> {
        self.shared.call(|i| sequencer_call!(i, call_stage()))
    }

    /// Numbers and stages one event per entry of `ws` in one guest call (until one is "not
    /// now"): append them to the PLog, then [`flush`](Self::flush) or
    /// [`flush_start_batch`](Self::flush_start_batch).
    pub fn start_batch(
        &self, kind: u16, ws: &[u64], seqs: SeqQuad,
    ) -> Result<BatchNumbers, HostError> {
        self.shared
            .call(|i| sequencer_call!(i, call_start_batch(kind, ws, seqs)))
            .inspect(|b| self.shared.started(u64::from(b.started), b.not_now))
    }

    /// `flush`, then [`start_batch`](Self::start_batch), in one guest call (one crossing per
    /// batch). An error `NoTransaction` or `CleanedUp` comes from the flush: nothing was done.
    pub fn flush_start_batch(
        &self, kind: u16, ws: &[u64], seqs: SeqQuad,
    ) -> Result<BatchNumbers, HostError> {
        self.shared
            .call(|i| sequencer_call!(i, call_flush_start_batch(kind, ws, seqs)))
            .inspect(|b| self.shared.started(u64::from(b.started), b.not_now))
    }

    /// The next number of sequence `seq` in the transaction: the one the guest gave ahead at
    /// [`start`](Self::start) if it has one for `seq` (no call), else from the guest, with the
    /// numbers handed out ahead reported in the same call (`take-next`).
    pub fn next(&self, seq: u16) -> Result<u64, HostError> {
        let mut slot = self.shared.lock();
        let ahead = slot
            .instance
            .as_mut()
            .and_then(|i| i.store.data_mut().host.ahead.next(seq));
        let result = match ahead {
            Some(n) => Ok(n),
            None => self.shared.call_locked(&mut slot, |i| {
                // After a deferred flush there is no transaction: the guest says so.
                if let Err(refused) = settle(i)? {
                    return Ok(Err(refused));
                }
                let taken = i.store.data_mut().host.ahead.report_with_next(seq);
                sequencer_call!(i, call_take_next(SeqQuad::of_taken(taken), seq))
            }),
        };
        self.shared.let_go(slot);
        result
    }

    /// Completes the transaction: its event is in the PLog.
    ///
    /// The flush of a transaction [`start`](Self::start) opened, with no other call since,
    /// makes no call: it cannot be refused, and it leaves the sequencer ready (the status
    /// says so at once). It is reported to the guest, with the numbers handed out ahead, by
    /// the next call on this partition, or by the task driver after a moment without one
    /// (`SETTLE_AFTER`), when the flusher gets its values. Otherwise it is its own call
    /// (`flush-status`, after what is to report), whose status comes back in its result.
    pub fn flush(&self) -> Result<(), HostError> {
        let mut slot = self.shared.lock();
        let deferred = !slot.closed
            && slot
                .instance
                .as_mut()
                .is_some_and(|i| i.store.data_mut().host.ahead.defer_flush());
        let result = if deferred {
            self.shared
                .set_status(Status02::from(sequencer::ahead::FLUSHED));
            self.shared.arm_settle();
            Ok(())
        } else {
            self.shared.call_reporting(&mut slot, |i| {
                let r = sequencer_call!(i, call_flush_status())?;
                Ok(r.map(|status| i.store.data_mut().host.status = Some(core_status(status))))
            })
        };
        self.shared.let_go(slot);
        result
    }

    /// Drops the transaction and recovers from storage and the PLog, reading storage at once,
    /// beside the flusher's write in flight, if any (`actualize-beside-write`; the task driver
    /// performs reads beside a write, and every store of this crate stores a write's values
    /// before its offset).
    pub fn actualize(&self) -> Result<(), HostError> {
        self.shared
            .call(|i| sequencer_call!(i, call_actualize_beside_write()))
    }

    /// Resolves once the sequencer is ready to number events (it has actualized from the
    /// PLog), or with [`HostError::Closed`] if it is cleaned up first. It waits for the task
    /// driver's steps (woken at each), never polls; any executor can drive it. After a trap the
    /// new instance actualizes, and this waits for it too.
    pub fn ready(&self) -> impl Future<Output = Result<(), HostError>> + Send + 'static {
        let this = self.clone();
        async move {
            loop {
                // Subscribe first, then look, so no change is missed.
                let changed = this.shared.subscribe();
                match this.sequence_status() {
                    SequenceStatus::Ready | SequenceStatus::Eventing => return Ok(()),
                    SequenceStatus::Finished => return Err(HostError::Closed(this.partition())),
                    SequenceStatus::None | SequenceStatus::Recover => {}
                }
                let _ = changed.await;
            }
        }
    }

    /// Blocks the calling thread until the sequencer is ready (see [`ready`](Self::ready)), for
    /// at most `within` on the host's clock: `Ok(true)` when ready, `Ok(false)` if `within`
    /// passed first.
    pub fn wait_ready(&self, within: Duration) -> Result<bool, HostError> {
        let deadline = self
            .shared
            .clock
            .sleep_until(self.shared.clock.now().saturating_add(within));
        match futures::executor::block_on(futures::future::select(self.ready().boxed(), deadline)) {
            futures::future::Either::Left((ready, _)) => ready.map(|()| true),
            futures::future::Either::Right(_) => Ok(false),
        }
    }

    /// `StartEvent` (docs/DESIGN.md §5.1; the sequencer must have been opened with
    /// `sequencer::facade::system_params`): the event's PLog and WLog offsets. While the
    /// sequencer recovers (or too many values wait), waits on the host's clock up to `wait` for
    /// that to change; `None` if it does not.
    pub fn start_event(&self, wait: Duration, ws: u64) -> Result<Option<EventOffsets>, HostError> {
        // As `start`: the record ids the last event's first four `next`s would hand out now
        // come back ahead (`start-event-ahead`).
        self.until_started(wait, || {
            let outcome = self.shared.call_start(
                |i, taken| {
                    let seqs = question(i);
                    i.plugin
                        .sequencer_plugin_events()
                        .call_take_flush_start_event_ahead(&mut i.store, i.handle, taken, ws, seqs)
                },
                |i| {
                    let seqs = question(i);
                    i.plugin.sequencer_plugin_events().call_start_event_ahead(
                        &mut i.store,
                        i.handle,
                        ws,
                        seqs,
                    )
                },
                |i, a| {
                    let open = matches!(a.start, EventStart::Started(_));
                    let numbers = [a.n0, a.n1, a.n2, a.n3];
                    let host = &mut i.store.data_mut().host;
                    host.ahead.started(numbers, open);
                    // `event-ahead` carries no status, and the guest reports only changes from
                    // what it last reported: after a `finish_event` answered here (the host
                    // showed it ready itself), a start that opens the next event changes
                    // nothing the guest sees, so the event's status is taken from the outcome.
                    if open {
                        host.status = Some(sequencer::Status::InTransaction);
                    }
                    a.start
                },
            )?;
            Ok(match outcome {
                EventStart::Started(offsets) => {
                    self.shared.started(1, None);
                    Some(offsets)
                }
                EventStart::NotNow(r) => {
                    self.shared.started(0, Some(r));
                    None
                }
            })
        })
    }

    /// [`start`](Self::start), waiting out "not now" (the sequencer actualizing, or too many
    /// values waiting to be flushed) for up to `wait` on the host's clock: the event's PLog
    /// offset, or `None` if the sequencer still says "not now" once `wait` has passed. It
    /// waits for the task driver's steps (woken at each), never polls.
    pub fn start_within(
        &self, wait: Duration, kind: u16, ws: u64,
    ) -> Result<Option<u64>, HostError> {
        self.until_started(wait, || {
            Ok(match self.start(kind, ws)? {
                StartOutcome::Started(offset) => Some(offset),
                StartOutcome::NotNow(_) => None,
            })
        })
    }

    /// Calls `attempt` until it starts (`Some`), woken by the driver's steps, for up to `wait`
    /// on the host's clock; `None` if it has not started by then.
    fn until_started<T>(
        &self, wait: Duration, mut attempt: impl FnMut() -> Result<Option<T>, HostError>,
    ) -> Result<Option<T>, HostError> {
        let deadline = self.shared.clock.now().saturating_add(wait);
        let mut changed: Option<oneshot::Receiver<()>> = None;
        loop {
            if let Some(started) = attempt()? {
                return Ok(Some(started));
            }
            if self.shared.clock.now() >= deadline {
                return Ok(None);
            }
            match changed.take() {
                // Subscribe first, then try once more, so no change is missed.
                None => changed = Some(self.shared.subscribe()),
                Some(rx) => {
                    let timeout = self.shared.clock.sleep_until(deadline);
                    futures::executor::block_on(futures::future::select(rx, timeout));
                }
            }
        }
    }

    /// `NextRecID` (docs/DESIGN.md §5.1): the next O/W document or record id: `next` of the
    /// facade's sequence, handed out ahead like any `next`.
    pub fn next_rec_id(&self) -> Result<u64, HostError> {
        self.next(sequencer::facade::SEQ_REC_ID)
    }

    /// `NextCRecID` (docs/DESIGN.md §5.1): the next C document or record id (as
    /// [`next_rec_id`](Self::next_rec_id)).
    pub fn next_c_rec_id(&self) -> Result<u64, HostError> {
        self.next(sequencer::facade::SEQ_CREC_ID)
    }

    /// `FinishEvent` (docs/DESIGN.md §5.1): the event is in the PLog.
    pub fn finish_event(&self) -> Result<(), HostError> {
        self.flush()
    }

    /// `CancelEvent` (docs/DESIGN.md §5.1): the event failed; the same ids are handed out again.
    pub fn cancel_event(&self) -> Result<(), HostError> {
        self.actualize()
    }

    /// The facade's `Status` (docs/DESIGN.md §5.3), readable from any thread at any time without
    /// waiting for a call in progress.
    pub fn sequence_status(&self) -> SequenceStatus {
        match Status02::from_u8(self.shared.status.load(Ordering::SeqCst)) {
            Status02::None => SequenceStatus::None,
            Status02::Recover => SequenceStatus::Recover,
            Status02::Ready => SequenceStatus::Ready,
            Status02::Eventing => SequenceStatus::Eventing,
            Status02::Finished => SequenceStatus::Finished,
        }
    }

    /// Stops the sequencer at once: storage reads in progress are abandoned, later calls are
    /// refused. Does not wait for anything.
    pub fn cleanup(&self) {
        let mut slot = self.shared.lock();
        if let Some(mut i) = slot.instance.take() {
            let _ = sequencer_call!(&mut i, call_cleanup());
        }
        slot.closed = true;
        self.shared.set_status(Status02::Finished);
        self.shared.let_go(slot);
        // Callers waiting for a status (`ready`, `start_event`) learn of the cleanup now.
        self.shared.after_task_step();
        let _ = self.shared.events.unbounded_send(DriverMsg::Cleanup {
            partition: self.shared.partition,
        });
    }

    /// What the sequencer is doing (cleaned up once closed).
    pub fn status(&self) -> Status {
        self.shared
            .call(|i| sequencer_call!(i, call_status()).map(Ok))
            .unwrap_or(Status::CleanedUp)
    }

    /// Numbers the sequencer holds in memory.
    pub fn held_numbers(&self) -> Result<HeldNumbers, HostError> {
        self.shared
            .call(|i| sequencer_call!(i, call_held_numbers()).map(Ok))
    }

    /// How many storage operations the driver is performing for this partition.
    pub fn storage_ops_in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// How many calls into the guest this partition has made since it opened: the callers'
    /// and the task driver's (each storage outcome delivered, each wake-up pumped); creating
    /// an instance is not counted, and a refusal counts once (its `last-error` is a second
    /// call). What a benchmark divides by its operations to count crossings.
    pub fn guest_calls(&self) -> u64 {
        self.shared.lock().calls
    }

    /// How many times this partition's guest trapped and was replaced.
    pub fn traps(&self) -> u64 {
        self.shared.traps.load(Ordering::SeqCst)
    }

    /// Fault injection for tests: the next guest call runs with only `fuel` (when the runtime
    /// meters fuel), so a small value makes it trap.
    pub fn set_next_call_fuel(&self, fuel: u64) {
        self.shared.next_call_fuel.store(fuel, Ordering::SeqCst);
    }

    /// Appends an event with its sequence values and a payload at exactly `offset` to this
    /// partition's PLog (the command processor's side).
    pub fn append_event(
        &self, offset: PLogOffset, values: &[sequencer::SeqValue], payload: &[u8],
    ) -> Result<(), crate::store::storage::AppendError> {
        self.shared
            .storage
            .append_event(self.shared.partition, offset, values, payload)
    }

    /// Appends an event at `offset` to this partition's PLog (the command processor's side).
    pub fn append(
        &self, offset: PLogOffset, values: &[sequencer::SeqValue],
    ) -> Result<(), crate::store::storage::AppendError> {
        self.shared
            .storage
            .append(self.shared.partition, offset, values)
    }
}

/// The sequences a start asks ahead about: those of the last transaction's `next`s.
fn question(i: &Instance) -> SeqQuad {
    SeqQuad::of_question(i.store.data().host.ahead.question())
}

/// A slice call's one rule: up to four sequences go as a `seq-quad` through `quad` (no list
/// crosses the boundary), more through `lists`; the answer is the same either way.
fn by_quad_or_lists(
    seqs: &[u16], quad: impl FnOnce(SeqQuad) -> Result<QuadNumbers, HostError>,
    lists: impl FnOnce() -> Result<(StartOutcome, Vec<u64>), HostError>,
) -> Result<(StartOutcome, Vec<u64>), HostError> {
    match SeqQuad::of(seqs) {
        Some(q) => quad(q).map(|n| n.numbers(q.count)),
        None => lists(),
    }
}
