//! What a partition's caller and the task driver share: the instance behind its lock (with the
//! driver's mail for it, applied by whoever holds it), the status, the waiters, and the
//! messages the partition sends the driver's loop. Both the caller's handle
//! ([`PartitionSequencer`](super::PartitionSequencer)) and the loop use it; it uses neither.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError, Weak};
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use futures::channel::oneshot;
use sequencer::facade::SequenceStatus as Status02;
use sequencer::{Instant, Report};

use crate::clock::Clock;
use crate::driver::spin::spin_for;
use crate::metrics::{PartitionMetrics, PartitionProbe, PartitionState};
use crate::runtime::Explained;
use crate::runtime::bindings::{GuestError, GuestParams, NotNowReason, Outcome, SeqQuad};
use crate::runtime::error::HostError;
use crate::runtime::host_state::Op;
use crate::runtime::link::core_status;
use crate::runtime::{Instance, RuntimeInner};
use crate::store::storage::{PartitionId, Storage};

/// Whether a sequencer in `s` is recovering (not yet ready once opened, or actualizing).
fn recovering(s: Status02) -> bool {
    matches!(s, Status02::None | Status02::Recover)
}

impl PartitionProbe for Shared {
    fn state(&self) -> PartitionState {
        match Status02::from_u8(self.status.load(Ordering::Relaxed)) {
            Status02::Ready | Status02::Eventing => PartitionState::Ready,
            Status02::None | Status02::Recover => PartitionState::Actualizing,
            Status02::Finished => PartitionState::Closed,
        }
    }

    /// Asks the guest unless a caller or the driver holds the instance (a scrape never
    /// waits for a partition's call).
    fn unflushed(&self) -> Option<u64> {
        let mut slot = match self.slot.try_lock() {
            Ok(slot) if slot.instance.is_some() && !slot.closed => slot,
            _ => return None,
        };
        let held = self.call_reporting(&mut slot, |i| {
            sequencer_call!(i, call_held_numbers()).map(Ok)
        });
        self.let_go(slot);
        held.ok().map(|h| u64::from(h.unflushed))
    }
}

/// Messages to the loop.
pub(crate) enum DriverMsg {
    Register {
        partition: PartitionId,
        shared: Weak<Shared>,
        /// The partition's `max_unflushed_values` (whether a write may be held back).
        max_unflushed: usize,
    },
    Work {
        partition: PartitionId,
        generation: u64,
        ops: Vec<Op>,
        wake: Option<Option<Instant>>,
    },
    Cleanup {
        partition: PartitionId,
    },
    /// A flush the caller deferred waits in the partition's instance: settle it soon unless a
    /// call does first (see [`Shared::arm_settle`]).
    Settle {
        partition: PartitionId,
    },
    Sync(oneshot::Sender<()>),
    WhenIdle(oneshot::Sender<()>),
    MinWriteInterval(Duration),
}

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
pub(crate) use sequencer_call;

/// Reports to the guest in `i` what its caller did without a call (`sequencer::ahead`): a
/// deferred flush (`take-flush`, its status taken in) or the numbers handed out ahead (`take`).
fn report(i: &mut Instance, report: Report) -> wasmtime::Result<Result<(), GuestError>> {
    if report != Report::Nothing {
        i.store.data_mut().host.reports += 1;
    }
    match report {
        Report::Nothing => Ok(Ok(())),
        Report::Take(taken) => sequencer_call!(i, call_take(SeqQuad::of_taken(taken))),
        Report::Flush(taken) => {
            let r = sequencer_call!(i, call_take_flush(SeqQuad::of_taken(taken)))?;
            Ok(r.map(|status| i.store.data_mut().host.status = Some(core_status(status))))
        }
    }
}

/// Reports a deferred flush waiting in `i`, if any (the numbers ahead of an open transaction
/// stay).
pub(super) fn settle(i: &mut Instance) -> wasmtime::Result<Result<(), GuestError>> {
    let ahead = &mut i.store.data_mut().host.ahead;
    match ahead.flush_deferred() {
        true => {
            let r = ahead.end();
            report(i, r)
        }
        false => Ok(Ok(())),
    }
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
    /// Settle a deferred flush in whichever instance holds it.
    Settle,
}

/// How long a deferred flush waits for the caller's next call before the task driver settles
/// it (its values then go to the flusher): under load the next `start` comes much sooner.
pub(crate) const SETTLE_AFTER: Duration = Duration::from_micros(200);

/// How long a caller spins for the instance the task driver holds before it sleeps (see
/// `Shared::lock_contended`); the driver holds it for one delivery, a few microseconds.
const HOLD_SPIN: Duration = Duration::from_micros(20);

/// Generations are unique across the process, so a partition re-opened after cleanup never
/// mistakes an old instance's outcomes for its own.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

pub(crate) struct Shared {
    pub(crate) partition: PartitionId,
    runtime: Arc<RuntimeInner>,
    pub(super) storage: Arc<dyn Storage>,
    pub(super) clock: Arc<dyn Clock>,
    params: GuestParams,
    slot: Mutex<Slot>,
    pub(super) events: UnboundedSender<DriverMsg>,
    /// Storage operations the driver is performing for this partition.
    pub(crate) in_flight: AtomicUsize,
    pub(super) traps: AtomicU64,
    pub(super) next_call_fuel: AtomicU64,
    /// the facade's status (docs/DESIGN.md §5.3), kept outside the lock so any thread reads it at
    /// any time.
    pub(super) status: AtomicU8,
    /// Callers waiting for the status to change.
    waiters: Mutex<Vec<oneshot::Sender<()>>>,
    /// What the task driver had for the instance while a caller held it: the driver never
    /// waits for the lock (nor does the caller pay to wake it when it lets go); whoever holds
    /// the instance next applies the mail, in the order it was posted.
    mail: Mutex<Vec<Mail>>,
    /// True while `mail` may hold something.
    has_mail: AtomicBool,
    /// The driver was asked to settle a deferred flush and has not yet (see
    /// [`arm_settle`](Self::arm_settle)).
    settle_armed: AtomicBool,
    /// Where the partition's starts, state and actualizations are recorded, if anywhere.
    pub(crate) metrics: Option<Arc<PartitionMetrics>>,
}

pub(super) struct Slot {
    pub(super) instance: Option<Instance>,
    generation: u64,
    pub(super) closed: bool,
    /// Guest calls made so far, by callers and by the task driver (see
    /// [`PartitionSequencer::guest_calls`]).
    pub(super) calls: u64,
}

impl Shared {
    /// A partition's shared state with no instance yet, sending to the loop on `events`.
    pub(super) fn new(
        partition: PartitionId, runtime: Arc<RuntimeInner>, storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>, params: GuestParams, events: UnboundedSender<DriverMsg>,
        metrics: Option<Arc<PartitionMetrics>>,
    ) -> Self {
        Self {
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
            settle_armed: AtomicBool::new(false),
            metrics,
        }
    }

    /// Holds the instance; hand the guard to [`let_go`](Self::let_go) when done, so the
    /// driver's mail posted meanwhile is applied.
    pub(super) fn lock(&self) -> MutexGuard<'_, Slot> {
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
    ///
    /// Numbers handed out ahead without a call (see [`PartitionSequencer::next`]) and a
    /// deferred flush (see [`PartitionSequencer::flush`]) are reported to the guest first, in
    /// the same hold of the instance: the call may end or change the transaction they belong to.
    ///
    /// [`PartitionSequencer::next`]: super::PartitionSequencer::next
    /// [`PartitionSequencer::flush`]: super::PartitionSequencer::flush
    pub(super) fn call<R>(
        &self, f: impl FnOnce(&mut Instance) -> wasmtime::Result<Result<R, GuestError>>,
    ) -> Result<R, HostError> {
        let mut slot = self.lock();
        let result = self.call_reporting(&mut slot, f);
        self.let_go(slot);
        result
    }

    /// [`call`](Self::call) on the instance already held: what was done without a call is
    /// reported first.
    pub(super) fn call_reporting<R>(
        &self, slot: &mut Slot,
        f: impl FnOnce(&mut Instance) -> wasmtime::Result<Result<R, GuestError>>,
    ) -> Result<R, HostError> {
        self.call_locked(slot, |i| {
            let ahead = i.store.data_mut().host.ahead.end();
            if let Err(refused) = report(i, ahead)? {
                return Ok(Err(refused));
            }
            f(i)
        })
    }

    /// [`call`](Self::call) for a start that reports a deferred flush itself: with one waiting,
    /// `with_flush(i, taken)` makes the start's call carrying it (one crossing); otherwise
    /// what is to report goes first, as `call` does, then `plain(i)`. `answered` takes the
    /// answer in while the instance is still held.
    pub(super) fn call_start<A, R>(
        &self,
        with_flush: impl FnOnce(&mut Instance, SeqQuad) -> wasmtime::Result<Result<A, GuestError>>,
        plain: impl FnOnce(&mut Instance) -> wasmtime::Result<Result<A, GuestError>>,
        answered: impl FnOnce(&mut Instance, A) -> R,
    ) -> Result<R, HostError> {
        let mut slot = self.lock();
        let result = self.call_locked(&mut slot, |i| {
            let answer = match i.store.data_mut().host.ahead.end() {
                Report::Flush(taken) => with_flush(i, SeqQuad::of_taken(taken))?,
                other => match report(i, other)? {
                    Ok(()) => plain(i)?,
                    Err(refused) => Err(refused),
                },
            };
            Ok(answer.map(|a| answered(i, a)))
        });
        self.let_go(slot);
        result
    }

    /// Lets go of the instance, applying the driver's mail first (and any posted while it
    /// did, unless someone else took the instance meanwhile: they apply it).
    pub(super) fn let_go(&self, mut slot: MutexGuard<'_, Slot>) {
        let applied = self.apply_mail(&mut slot);
        drop(slot);
        if applied {
            self.after_task_step();
        }
        self.apply_mail_if_free();
    }

    /// [`call`](Self::call) on the instance already held, with nothing reported first.
    pub(super) fn call_locked<R>(
        &self, slot: &mut Slot,
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
        let answer = f(instance);
        if let Some(i) = slot.instance.as_mut() {
            // The reports made before the call proper are guest calls too.
            slot.calls += std::mem::take(&mut i.store.data_mut().host.reports);
        }
        match answer {
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

    /// Creates a fresh instance (which starts actualizing) under a new generation, and hands
    /// the driver the work it began.
    pub(super) fn replace_instance(&self, slot: &mut Slot) -> Result<(), HostError> {
        self.create_instance(slot)?;
        self.forward(slot);
        Ok(())
    }

    /// A partition's first instance: created, then `register` (which tells the driver about
    /// the partition), then the work it began goes to the driver. The two messages leave
    /// back to back, so a sleeping driver is woken once for both, not once before the
    /// instantiation and again after it; and a partition whose instance cannot be created is
    /// never registered.
    pub(super) fn create_first_instance(
        &self, slot: &mut Slot, register: impl FnOnce(),
    ) -> Result<(), HostError> {
        self.create_instance(slot)?;
        register();
        self.forward(slot);
        Ok(())
    }

    /// Creates a fresh instance under a new generation; the work it began stays in its host
    /// state until [`forward`](Self::forward).
    fn create_instance(&self, slot: &mut Slot) -> Result<(), HostError> {
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
                Mail::Settle => match slot.instance.as_ref() {
                    Some(i) if i.store.data().host.ahead.flush_deferred() => {
                        self.call_locked(slot, settle)
                    }
                    _ => Ok(()),
                },
                _ => Ok(()),
            };
        }
        true
    }

    /// A flush was deferred in the instance (see [`PartitionSequencer::flush`]): asks the
    /// driver, unless it was asked already, to settle it after [`SETTLE_AFTER`] if no call
    /// has by then. Under load the next `start` settles it first, and the driver is asked about
    /// once per [`SETTLE_AFTER`], not once per transaction.
    ///
    /// [`PartitionSequencer::flush`]: super::PartitionSequencer::flush
    pub(super) fn arm_settle(&self) {
        if !self.settle_armed.load(Ordering::Relaxed)
            && !self.settle_armed.swap(true, Ordering::SeqCst)
        {
            let _ = self.events.unbounded_send(DriverMsg::Settle {
                partition: self.partition,
            });
        }
    }

    /// The driver's [`SETTLE_AFTER`] passed: settles a deferred flush now, or lets the caller
    /// holding the instance do it (true, as [`pump`](Self::pump)).
    pub(crate) fn settle_now(&self) -> bool {
        self.settle_armed.store(false, Ordering::SeqCst);
        self.post(Mail::Settle)
    }

    /// After the tasks moved on (which may have changed the status): wake waiting callers.
    pub(super) fn after_task_step(&self) {
        let waiters = std::mem::take(&mut *self.waiters.lock().unwrap_or_else(|p| p.into_inner()));
        for w in waiters {
            let _ = w.send(());
        }
    }

    pub(super) fn set_status(&self, status: Status02) {
        // Finished is final: a late status from the tasks never revives a closed sequencer.
        let old = self
            .status
            .try_update(Ordering::SeqCst, Ordering::SeqCst, |old| {
                (old != Status02::Finished as u8).then_some(status as u8)
            });
        if let (Some(m), Ok(old)) = (&self.metrics, old) {
            let (was, now) = (recovering(Status02::from_u8(old)), recovering(status));
            if was != now {
                m.actualizing(now, status != Status02::Finished);
            }
        }
    }

    /// Records `n` starts, and the "not now" that stopped the next one, if any.
    #[inline]
    pub(super) fn started(&self, n: u64, not_now: Option<NotNowReason>) {
        if let Some(m) = &self.metrics {
            m.started(n, not_now.map(|r| r == NotNowReason::TooManyUnflushed));
        }
    }

    /// A receiver completed at the next task step (which may change the status).
    pub(super) fn subscribe(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tx);
        rx
    }
}
