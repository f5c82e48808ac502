//! One partition's sequencer: a guest instance behind a lock, called by the command processor
//! and by the task driver, replaced by a fresh instance if it ever traps.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use futures::FutureExt;
use futures::channel::mpsc::UnboundedSender;
use futures::channel::oneshot;
use sequencer::PLogOffset;
use sequencer::facade::SequenceStatus as Status02;

use crate::driver::DriverMsg;
use crate::driver::clock::Clock;
use crate::driver::spin::spin_for;
use crate::runtime::bindings::{
    BatchNumbers, EventOffsets, EventStart, Explained, GuestError, GuestParams, HeldNumbers,
    Outcome, QuadNumbers, SeqQuad, SequenceStatus, StartOutcome, Status,
};
use crate::runtime::error::HostError;
use crate::runtime::link::core_status;
use crate::runtime::{Instance, RuntimeInner};
use crate::store::storage::{PartitionId, Storage};

/// Calls `$method` on the guest's sequencer in `$instance` (an `&mut Instance`):
/// `sequencer_call!(i, call_next(seq))`. Through the WIT's `instance` interface, the same calls
/// as the `sequencer` resource's methods without lending its handle (one instance holds one
/// sequencer): about 70 ns less per call under wasmtime 48. The answer is the method's: a
/// refusal comes with its full error ([`Explained`]).
macro_rules! sequencer_call {
    ($instance:expr, $method:ident($($arg:expr),*)) => {{
        let i: &mut Instance = $instance;
        i.plugin
            .sequencer_plugin_instance()
            .$method(&mut i.store $(, $arg)*)
            .and_then(|answer| answer.explained(&i.plugin, &mut i.store))
    }};
}

/// A storage outcome on its way to the guest.
pub(crate) enum Delivery {
    /// Through `deliver`.
    Outcome(Outcome),
    /// A PLog page through `deliver-plog-words`: its values in the flat layout
    /// ([`sequencer::PlogWords`]), lowered into the guest with one copy.
    PlogWords {
        /// Four words per value: offset, workspace, sequence, number.
        words: Vec<u64>,
        /// The offset after the page.
        next: u64,
        /// No event at or after `next`.
        end: bool,
    },
}

/// Something for the instance from the task driver, posted while a caller held it.
enum Mail {
    /// A storage outcome for the instance of `generation`.
    Deliver {
        generation: u64,
        op: u64,
        delivery: Delivery,
    },
    /// A wake-up that came due for the instance of `generation`.
    Pump { generation: u64 },
}

/// How long a caller spins for the instance the task driver holds before it sleeps (see
/// `Shared::lock_contended`); the driver holds it for one delivery, a few microseconds.
const HOLD_SPIN: Duration = Duration::from_micros(20);

/// Generations are unique across the process, so a partition re-opened after cleanup never
/// mistakes an old instance's outcomes for its own.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

pub(crate) struct Shared {
    pub(crate) partition: PartitionId,
    runtime: Arc<RuntimeInner>,
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    params: GuestParams,
    slot: Mutex<Slot>,
    events: UnboundedSender<DriverMsg>,
    /// Storage operations the driver is performing for this partition.
    pub(crate) in_flight: AtomicUsize,
    traps: AtomicU64,
    next_call_fuel: AtomicU64,
    /// spec 002's status, kept outside the lock so any thread reads it at any time.
    status: AtomicU8,
    /// Callers waiting for the status to change.
    waiters: Mutex<Vec<oneshot::Sender<()>>>,
    /// What the task driver had for the instance while a caller held it: the driver never
    /// waits for the lock (nor does the caller pay to wake it when it lets go); whoever holds
    /// the instance next applies the mail, in the order it was posted.
    mail: Mutex<Vec<Mail>>,
    /// True while `mail` may hold something.
    has_mail: AtomicBool,
}

struct Slot {
    instance: Option<Instance>,
    generation: u64,
    closed: bool,
    /// Guest calls made so far, by callers and by the task driver (see
    /// [`PartitionSequencer::guest_calls`]).
    calls: u64,
}

/// The command processor's handle on one partition's sequencer. Calls are serialised; the
/// task driver performs the storage work the sequencer asks for in the background.
#[derive(Clone)]
pub struct PartitionSequencer {
    pub(crate) shared: Arc<Shared>,
}

impl PartitionSequencer {
    pub(crate) fn open(
        runtime: Arc<RuntimeInner>,
        partition: PartitionId,
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        params: GuestParams,
        events: UnboundedSender<DriverMsg>,
        register: impl FnOnce(&Arc<Shared>),
    ) -> Result<Self, HostError> {
        let shared = Arc::new(Shared {
            partition,
            runtime,
            storage,
            clock,
            params,
            slot: Mutex::new(Slot {
                instance: None,
                generation: 0,
                closed: false,
                calls: 0,
            }),
            events,
            in_flight: AtomicUsize::new(0),
            traps: AtomicU64::new(0),
            next_call_fuel: AtomicU64::new(0),
            status: AtomicU8::new(Status02::None as u8),
            waiters: Mutex::new(Vec::new()),
            mail: Mutex::new(Vec::new()),
            has_mail: AtomicBool::new(false),
        });
        register(&shared);
        {
            let mut slot = shared.lock();
            let created = shared.replace_instance(&mut slot);
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
    pub fn start(&self, kind: u16, ws: u64) -> Result<StartOutcome, HostError> {
        // `start-status`: the status comes back in the result (no observer import call) and
        // is taken in as the observer's report would be.
        self.shared.call(|i| {
            let r = sequencer_call!(i, call_start_status(kind, ws))?;
            Ok(r.map(|(outcome, status)| {
                i.store.data_mut().host.status = Some(core_status(status));
                outcome
            }))
        })
    }

    /// `start` and one `next` per sequence in `seqs`, in one guest call: for up to four
    /// sequences `start-next-quad` (no list crosses the boundary), else `start-next`. The
    /// numbers are `seqs`' in order, none unless it started.
    pub fn start_next(
        &self,
        kind: u16,
        ws: u64,
        seqs: &[u16],
    ) -> Result<(StartOutcome, Vec<u64>), HostError> {
        by_quad_or_lists(
            seqs,
            |quad| self.start_next_quad(kind, ws, quad),
            || {
                self.shared
                    .call(|i| sequencer_call!(i, call_start_next(kind, ws, seqs)))
            },
        )
    }

    /// `flush`, then `start_next`, in one guest call: completes the transaction in progress
    /// and begins the next with its numbers (one crossing per event). An error `NoTransaction`
    /// or `CleanedUp` comes from the flush (nothing was done); any other error comes from the
    /// start: the flush is done and no transaction is open. Up to four sequences go through
    /// `flush-start-next-quad`, more through `flush-start-next` (as in `start_next`).
    pub fn flush_start_next(
        &self,
        kind: u16,
        ws: u64,
        seqs: &[u16],
    ) -> Result<(StartOutcome, Vec<u64>), HostError> {
        by_quad_or_lists(
            seqs,
            |quad| self.flush_start_next_quad(kind, ws, quad),
            || {
                self.shared
                    .call(|i| sequencer_call!(i, call_flush_start_next(kind, ws, seqs)))
            },
        )
    }

    /// [`flush_start_next`](Self::flush_start_next) for up to four sequences, with no list
    /// crossing the boundary (the fast path of one event per call).
    pub fn flush_start_next_quad(
        &self,
        kind: u16,
        ws: u64,
        seqs: SeqQuad,
    ) -> Result<QuadNumbers, HostError> {
        self.shared
            .call(|i| sequencer_call!(i, call_flush_start_next_quad(kind, ws, seqs)))
    }

    /// [`start_next`](Self::start_next) for up to four sequences, with no list crossing the
    /// boundary.
    pub fn start_next_quad(
        &self,
        kind: u16,
        ws: u64,
        seqs: SeqQuad,
    ) -> Result<QuadNumbers, HostError> {
        self.shared
            .call(|i| sequencer_call!(i, call_start_next_quad(kind, ws, seqs)))
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
        &self,
        kind: u16,
        ws: &[u64],
        seqs: SeqQuad,
    ) -> Result<BatchNumbers, HostError> {
        self.shared
            .call(|i| sequencer_call!(i, call_start_batch(kind, ws, seqs)))
    }

    /// `flush`, then [`start_batch`](Self::start_batch), in one guest call (one crossing per
    /// batch). An error `NoTransaction` or `CleanedUp` comes from the flush: nothing was done.
    pub fn flush_start_batch(
        &self,
        kind: u16,
        ws: &[u64],
        seqs: SeqQuad,
    ) -> Result<BatchNumbers, HostError> {
        self.shared
            .call(|i| sequencer_call!(i, call_flush_start_batch(kind, ws, seqs)))
    }

    /// The next number of sequence `seq` in the transaction.
    pub fn next(&self, seq: u16) -> Result<u64, HostError> {
        self.shared.call(|i| sequencer_call!(i, call_next(seq)))
    }

    /// Completes the transaction: its event is in the PLog.
    pub fn flush(&self) -> Result<(), HostError> {
        // `flush-status`, as in `start`.
        self.shared.call(|i| {
            let r = sequencer_call!(i, call_flush_status())?;
            Ok(r.map(|status| i.store.data_mut().host.status = Some(core_status(status))))
        })
    }

    /// Drops the transaction and recovers from storage and the PLog.
    pub fn actualize(&self) -> Result<(), HostError> {
        self.shared.call(|i| sequencer_call!(i, call_actualize()))
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

    /// `StartEvent` of spec 002 (the sequencer must have been opened with
    /// `sequencer::facade::system_params`): the event's PLog and WLog offsets. While the
    /// sequencer recovers (or too many values wait), waits on the host's clock up to `wait` for
    /// that to change; `None` if it does not.
    pub fn start_event(&self, wait: Duration, ws: u64) -> Result<Option<EventOffsets>, HostError> {
        self.until_started(wait, || {
            let outcome = self.shared.call(|i| {
                i.plugin
                    .sequencer_plugin_events()
                    .call_start_event(&mut i.store, i.handle, ws)
            })?;
            Ok(match outcome {
                EventStart::Started(offsets) => Some(offsets),
                EventStart::NotNow(_) => None,
            })
        })
    }

    /// [`start`](Self::start), waiting out "not now" (the sequencer actualizing, or too many
    /// values waiting to be flushed) for up to `wait` on the host's clock: the event's PLog
    /// offset, or `None` if the sequencer still says "not now" once `wait` has passed. It
    /// waits for the task driver's steps (woken at each), never polls.
    pub fn start_within(
        &self,
        wait: Duration,
        kind: u16,
        ws: u64,
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
        &self,
        wait: Duration,
        mut attempt: impl FnMut() -> Result<Option<T>, HostError>,
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

    /// `NextRecID` of spec 002: the next O/W document or record id.
    pub fn next_rec_id(&self) -> Result<u64, HostError> {
        self.shared.call(|i| {
            i.plugin
                .sequencer_plugin_events()
                .call_next_rec_id(&mut i.store, i.handle)
        })
    }

    /// `NextCRecID` of spec 002: the next C document or record id.
    pub fn next_c_rec_id(&self) -> Result<u64, HostError> {
        self.shared.call(|i| {
            i.plugin
                .sequencer_plugin_events()
                .call_next_c_rec_id(&mut i.store, i.handle)
        })
    }

    /// `FinishEvent` of spec 002: the event is in the PLog.
    pub fn finish_event(&self) -> Result<(), HostError> {
        self.flush()
    }

    /// `CancelEvent` of spec 002: the event failed; the same ids are handed out again.
    pub fn cancel_event(&self) -> Result<(), HostError> {
        self.actualize()
    }

    /// `Status` of spec 002, readable from any thread at any time without waiting for a call
    /// in progress.
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
        &self,
        offset: PLogOffset,
        values: &[sequencer::SeqValue],
        payload: &[u8],
    ) -> Result<(), crate::store::storage::AppendError> {
        self.shared
            .storage
            .append_event(self.shared.partition, offset, values, payload)
    }

    /// Appends an event at `offset` to this partition's PLog (the command processor's side).
    pub fn append(
        &self,
        offset: PLogOffset,
        values: &[sequencer::SeqValue],
    ) -> Result<(), crate::store::storage::AppendError> {
        self.shared
            .storage
            .append(self.shared.partition, offset, values)
    }
}

/// A slice call's one rule: up to four sequences go as a `seq-quad` through `quad` (no list
/// crosses the boundary), more through `lists`; the answer is the same either way.
fn by_quad_or_lists(
    seqs: &[u16],
    quad: impl FnOnce(SeqQuad) -> Result<QuadNumbers, HostError>,
    lists: impl FnOnce() -> Result<(StartOutcome, Vec<u64>), HostError>,
) -> Result<(StartOutcome, Vec<u64>), HostError> {
    match SeqQuad::of(seqs) {
        Some(q) => quad(q).map(|n| n.numbers(q.count)),
        None => lists(),
    }
}

impl Shared {
    /// Holds the instance; hand the guard to [`let_go`](Self::let_go) when done, so the
    /// driver's mail posted meanwhile is applied.
    fn lock(&self) -> MutexGuard<'_, Slot> {
        match self.slot.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => self.lock_contended(),
        }
    }

    /// [`lock`](Self::lock) while someone else holds the instance: usually the task driver
    /// applying one storage outcome (a guest call of a few microseconds). Waiting for it by
    /// spinning, up to [`HOLD_SPIN`], costs less than a futex sleep and the wake-up after it;
    /// past that the caller sleeps as before.
    #[cold]
    fn lock_contended(&self) -> MutexGuard<'_, Slot> {
        let spun = spin_for(HOLD_SPIN, || match self.slot.try_lock() {
            Ok(slot) => Some(slot),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        });
        spun.unwrap_or_else(|| self.slot.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Runs one guest call; a trap replaces the instance and is reported as such. What the
    /// guest asked for during the call (storage work, a wake-up, a status change) is taken in
    /// while the instance is still held, so the task driver cannot slip a change in between.
    /// The driver's mail posted meanwhile is applied before the instance is let go.
    fn call<R>(
        &self,
        f: impl FnOnce(&mut Instance) -> wasmtime::Result<Result<R, GuestError>>,
    ) -> Result<R, HostError> {
        let mut slot = self.lock();
        let result = self.call_locked(&mut slot, f);
        self.let_go(slot);
        result
    }

    /// Lets go of the instance, applying the driver's mail first (and any posted while it
    /// did, unless someone else took the instance meanwhile: they apply it).
    fn let_go(&self, mut slot: MutexGuard<'_, Slot>) {
        let applied = self.apply_mail(&mut slot);
        drop(slot);
        if applied {
            self.after_task_step();
        }
        self.apply_mail_if_free();
    }

    /// [`call`](Self::call) on the instance already held.
    fn call_locked<R>(
        &self,
        slot: &mut Slot,
        f: impl FnOnce(&mut Instance) -> wasmtime::Result<Result<R, GuestError>>,
    ) -> Result<R, HostError> {
        if slot.closed {
            return Err(HostError::Closed(self.partition));
        }
        if slot.instance.is_none() {
            self.replace_instance(slot)?;
        }
        let Some(instance) = slot.instance.as_mut() else {
            return Err(HostError::Closed(self.partition));
        };
        self.refuel(instance);
        slot.calls += 1;
        match f(instance) {
            Ok(result) => {
                self.forward(slot);
                result.map_err(HostError::Sequencer)
            }
            Err(trap) => {
                let message = format!("{trap:#}");
                self.traps.fetch_add(1, Ordering::SeqCst);
                slot.instance = None;
                self.replace_instance(slot)?;
                Err(HostError::Trapped {
                    partition: self.partition,
                    message,
                })
            }
        }
    }

    fn refuel(&self, instance: &mut Instance) {
        // A plain load first: the swap (a locked instruction) only when a test injected fuel.
        let injected = match self.next_call_fuel.load(Ordering::Relaxed) {
            0 => 0,
            _ => self.next_call_fuel.swap(0, Ordering::SeqCst),
        };
        let fuel = match (injected, self.runtime.linked.limits().fuel_per_call) {
            (0, fuel) => fuel,
            (injected, Some(_)) => Some(injected),
            (_, None) => None,
        };
        if let Some(fuel) = fuel {
            let _ = instance.refuel(fuel);
        }
    }

    /// Creates a fresh instance (which starts actualizing) under a new generation.
    fn replace_instance(&self, slot: &mut Slot) -> Result<(), HostError> {
        slot.generation = GENERATIONS.fetch_add(1, Ordering::SeqCst);
        let created = self.runtime.instantiate(
            self.partition,
            self.storage.clone(),
            self.clock.clone(),
            &self.params,
        );
        match created {
            Ok(Ok(instance)) => {
                slot.instance = Some(instance);
                self.forward(slot);
                Ok(())
            }
            Ok(Err(e)) => Err(HostError::Sequencer(e)),
            Err(e) => Err(HostError::Component(format!(
                "cannot instantiate the sequencer of partition {}: {e:#}",
                self.partition
            ))),
        }
    }

    /// Takes in the status the guest reported, and hands the storage work and wake-up it asked
    /// for to the task driver.
    fn forward(&self, slot: &mut Slot) {
        let Some(instance) = slot.instance.as_mut() else {
            return;
        };
        let state = instance.store.data_mut();
        let state = &mut state.host;
        if let Some(status) = state.status.take() {
            self.set_status(Status02::from(status));
        }
        let ops = std::mem::take(&mut state.outbox);
        let wake = state.wake.take();
        if ops.is_empty() && wake.is_none() {
            return;
        }
        let _ = self.events.unbounded_send(DriverMsg::Work {
            partition: self.partition,
            generation: slot.generation,
            ops,
            wake,
        });
    }

    /// Delivers a storage outcome to the instance of `generation`, if it is still the current
    /// one: now if no caller holds the instance, else by the caller before it lets go. True if
    /// it was left to a caller (see [`post`](Self::post)).
    pub(crate) fn deliver(&self, generation: u64, op: u64, delivery: Delivery) -> bool {
        self.post(Mail::Deliver {
            generation,
            op,
            delivery,
        })
    }

    /// Lets the instance of `generation` begin the work that has come due (as
    /// [`deliver`](Self::deliver) does, now or by the caller holding it).
    pub(crate) fn pump(&self, generation: u64) -> bool {
        self.post(Mail::Pump { generation })
    }

    /// Posts `mail` and applies it unless a caller holds the instance. True if a caller holds
    /// it: that caller applies the mail within its call, and whatever work that begins reaches
    /// the driver moments later.
    fn post(&self, mail: Mail) -> bool {
        self.mail
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(mail);
        self.has_mail.store(true, Ordering::SeqCst);
        self.apply_mail_if_free()
    }

    /// Applies the mail unless a caller holds the instance: that caller applies it before it
    /// lets go, or finds it here right after. True if it was left to a caller.
    fn apply_mail_if_free(&self) -> bool {
        while self.has_mail.load(Ordering::SeqCst) {
            let mut slot = match self.slot.try_lock() {
                Ok(slot) => slot,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => return true,
            };
            let applied = self.apply_mail(&mut slot);
            drop(slot);
            if applied {
                self.after_task_step();
            }
        }
        false
    }

    /// Applies the mail posted so far to the instance held, in order; true if there was any.
    /// Mail for an older instance is dropped.
    fn apply_mail(&self, slot: &mut Slot) -> bool {
        // A plain load first: the swap (a locked instruction) only when there is mail, which
        // is rare next to the calls that let go of the instance.
        if !self.has_mail.load(Ordering::SeqCst) || !self.has_mail.swap(false, Ordering::SeqCst) {
            return false;
        }
        let mail = std::mem::take(&mut *self.mail.lock().unwrap_or_else(|p| p.into_inner()));
        for m in mail {
            let _ = match m {
                Mail::Deliver {
                    generation,
                    op,
                    delivery,
                } if generation == slot.generation => self.call_locked(slot, |i| match &delivery {
                    Delivery::Outcome(outcome) => sequencer_call!(i, call_deliver(op, outcome)),
                    Delivery::PlogWords { words, next, end } => {
                        sequencer_call!(i, call_deliver_plog_words(op, words, *next, *end))
                    }
                }),
                Mail::Pump { generation } if generation == slot.generation => {
                    self.call_locked(slot, |i| sequencer_call!(i, call_pump()).map(Ok))
                }
                _ => Ok(()),
            };
        }
        true
    }

    /// After the tasks moved on (which may have changed the status): wake waiting callers.
    fn after_task_step(&self) {
        let waiters = std::mem::take(&mut *self.waiters.lock().unwrap_or_else(|p| p.into_inner()));
        for w in waiters {
            let _ = w.send(());
        }
    }

    fn set_status(&self, status: Status02) {
        // Finished is final: a late status from the tasks never revives a closed sequencer.
        let _ = self
            .status
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |old| {
                (old != Status02::Finished as u8).then_some(status as u8)
            });
    }

    /// A receiver completed at the next task step (which may change the status).
    fn subscribe(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tx);
        rx
    }
}
