//! The task driver: one event loop serving many partitions' sequencers, after `lws_sequencer`
//! (docs/DESIGN.md §7). It performs the storage work each guest begins, delivers the outcomes to
//! that guest in order of completion, and turns the wake-ups guests ask for into `pump` calls.
//!
//! Rules it keeps for every partition: at most one write in flight, applied in the order begun,
//! even across an instance that has since trapped; reads go out at once, beside a write in
//! flight (an actualization does not wait for it: docs/DESIGN.md §4.2); reads are abandoned at
//! once on cleanup or when their instance is replaced; outcomes for a replaced instance are
//! dropped.

pub(crate) mod partition;
#[cfg(test)]
mod scraped;
pub(crate) mod shared;
pub(crate) mod spin;

pub use partition::PartitionSequencer;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::task::Poll;
use std::thread::JoinHandle;
use std::time::Duration;

use futures::channel::{mpsc, oneshot};
use futures::future::{AbortHandle, Abortable, BoxFuture, FutureExt};
use futures::stream::{FuturesUnordered, StreamExt};
use hashbrown::HashMap;
use sequencer::{Instant, Params, Work, WriteRequest};

use crate::clock::Clock;
use crate::driver::shared::{Delivery, DriverMsg, SETTLE_AFTER, Shared};
use crate::driver::spin::{spin_for, spin_yielding_for};
use crate::metrics::Metrics;
use crate::runtime::Runtime;
use crate::runtime::bindings::Outcome;
use crate::runtime::error::HostError;
use crate::runtime::host_state::Op;
use crate::runtime::link::{guest_params, plog_words};
use crate::store::storage::{PartitionId, Storage};

/// Driver settings.
#[derive(Clone, Debug)]
pub struct DriverConfig {
    /// How many PLog events one read asks for.
    pub page_events: usize,
}

impl Default for DriverConfig {
    fn default() -> Self {
        Self { page_events: 4096 }
    }
}

/// The running task driver. Dropping it stops the loop; sequencers opened through it then get
/// no more storage work done.
pub struct Driver {
    events: mpsc::UnboundedSender<DriverMsg>,
    thread: Option<JoinHandle<()>>,
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    metrics: Option<Metrics>,
}

impl Driver {
    /// Starts the loop on its own thread.
    pub fn spawn(storage: Arc<dyn Storage>, clock: Arc<dyn Clock>, config: DriverConfig) -> Self {
        let (events, rx) = mpsc::unbounded();
        let mut state = LoopState {
            storage: storage.clone(),
            clock: clock.clone(),
            config,
            parts: HashMap::new(),
            inflight: FuturesUnordered::new(),
            timer: None,
            idle_waiters: Vec::new(),
            min_write_interval: storage.view_write_interval(),
            deadlines: BinaryHeap::new(),
            held_writes: 0,
            settles: 0,
            left_to_caller: false,
            opened: false,
            // Waiting by spinning for another thread's message only pays where that thread
            // runs at the same time, on another core.
            may_spin: std::thread::available_parallelism().is_ok_and(|n| n.get() > 1),
        };
        let thread = std::thread::Builder::new()
            .name("sequencer-driver".into())
            .spawn(move || futures::executor::block_on(state.run(rx)))
            .ok();
        Self {
            events,
            thread,
            storage,
            clock,
            metrics: None,
        }
    }

    /// Records into `metrics` each partition this driver opens from now on: its starts and
    /// "not now" answers, its state and actualizations, its unflushed numbers at a scrape
    /// (layer the storage with [`Metrics::storage`] for appends and flushes).
    pub fn with_metrics(mut self, metrics: &Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// The metrics this driver records into, if any.
    pub fn metrics(&self) -> Option<&Metrics> {
        self.metrics.as_ref()
    }

    /// Opens the sequencer of `partition` in a new instance of `runtime`; it starts actualizing.
    pub fn open(
        &self, runtime: &Runtime, partition: PartitionId, params: &Params,
    ) -> Result<PartitionSequencer, HostError> {
        let shared = Shared::new(
            partition,
            runtime.inner.clone(),
            self.storage.clone(),
            self.clock.clone(),
            guest_params(params),
            self.events.clone(),
            self.metrics.as_ref().map(|m| m.partition(partition)),
        );
        let seq = PartitionSequencer::open(shared, |shared| {
            let _ = self.events.unbounded_send(DriverMsg::Register {
                partition,
                shared: Arc::downgrade(shared),
                max_unflushed: params.max_unflushed_values,
            });
        })?;
        Ok(seq)
    }

    /// Group commit: a partition's write is reported done no sooner than `interval` after it
    /// began (on the driver's clock), so the next write carries every value flushed meanwhile.
    /// With fast storage and a busy partition this turns a write (and a guest call to report
    /// it) per transaction into one per `interval`; nothing waits for it but storage, and a
    /// slower storage is not slowed further. A write that carried half of the partition's
    /// `max_unflushed_values` or more is reported at once: values come fast enough that
    /// holding it could make `start` say "not now". Nothing is held while someone waits in
    /// [`idle`](Self::idle) (or [`shutdown`](Self::shutdown)). The default is the storage's
    /// [`view_write_interval`](Storage::view_write_interval) (zero for every backend but
    /// etcd: each write reported as soon as storage completes it).
    pub fn with_min_write_interval(self, interval: Duration) -> Self {
        let _ = self
            .events
            .unbounded_send(DriverMsg::MinWriteInterval(interval));
        self
    }

    /// Returns once the loop has handled every message sent before this call.
    pub fn sync(&self) {
        let (tx, rx) = oneshot::channel();
        if self.events.unbounded_send(DriverMsg::Sync(tx)).is_ok() {
            let _ = futures::executor::block_on(rx);
        }
    }

    /// Returns once the loop has no storage operation in flight and no message waiting. A
    /// flush deferred by `PartitionSequencer::flush` is reported to its guest first, so the
    /// write of its values is one of the operations waited for. (Waits for ever while a test
    /// holds an operation at a gate.)
    pub fn idle(&self) {
        let (tx, rx) = oneshot::channel();
        if self.events.unbounded_send(DriverMsg::WhenIdle(tx)).is_ok() {
            let _ = futures::executor::block_on(rx);
        }
    }
}

impl Driver {
    /// Shuts down gracefully: waits until no storage operation is in flight (so a flusher
    /// write in progress lands; see [`idle`](Self::idle)), then cleans up every sequencer of
    /// `seqs`. Numbers not yet written to the view are not lost: their events are in the PLog,
    /// and the next actualization replays them. Dropping the driver then stops its thread.
    pub fn shutdown(&self, seqs: &[PartitionSequencer]) {
        self.idle();
        for s in seqs {
            s.cleanup();
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.events.close_channel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the loop knows of one partition.
struct Part {
    shared: Weak<Shared>,
    generation: u64,
    closed: bool,
    write_busy: bool,
    /// When the write in flight began.
    write_began: Instant,
    /// How many values the write in flight carries.
    write_values: usize,
    /// The partition's `max_unflushed_values`: a write of half as many is never held.
    max_unflushed: usize,
    /// A completed write held back until this instant (`Driver::with_min_write_interval`).
    held_write: Option<(Instant, Done)>,
    queued: VecDeque<(u64, Op)>,
    wake: Option<Instant>,
    /// When to settle a deferred flush (`DriverMsg::Settle`).
    settle: Option<Instant>,
    reads: Vec<(u64, AbortHandle)>,
}

impl Part {
    fn new(shared: Weak<Shared>) -> Self {
        Self {
            shared,
            generation: 0,
            closed: false,
            write_busy: false,
            write_began: Instant::default(),
            write_values: 0,
            max_unflushed: usize::MAX,
            held_write: None,
            queued: VecDeque::new(),
            wake: None,
            settle: None,
            reads: Vec::new(),
        }
    }

    /// True if this partition still has a wake-up, a settle or a held write due at `at`.
    fn wants(&self, at: Instant) -> bool {
        (!self.closed && (self.wake == Some(at) || self.settle == Some(at)))
            || self.held_write.as_ref().is_some_and(|(due, _)| *due == at)
    }

    fn abort_reads(&mut self) {
        for (_, handle) in self.reads.drain(..) {
            handle.abort();
        }
    }
}

/// A storage operation that finished (or was abandoned: `outcome` is `None`).
struct Done {
    partition: PartitionId,
    generation: u64,
    op: u64,
    is_write: bool,
    outcome: Option<Delivery>,
}

struct LoopState {
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    config: DriverConfig,
    parts: HashMap<PartitionId, Part>,
    inflight: FuturesUnordered<BoxFuture<'static, Done>>,
    timer: Option<(Instant, BoxFuture<'static, ()>)>,
    idle_waiters: Vec<oneshot::Sender<()>>,
    min_write_interval: Duration,
    /// Wake-ups and held writes by deadline; an entry a partition no longer wants is dropped
    /// when it comes to the top.
    deadlines: BinaryHeap<Reverse<(Instant, PartitionId)>>,
    /// How many partitions hold a completed write back.
    held_writes: usize,
    /// How many partitions have a deferred flush to settle.
    settles: usize,
    /// An outcome or wake-up of this pass was left to a caller holding its instance: the
    /// work that begins comes moments later (see [`CALLER_GRACE`]).
    left_to_caller: bool,
    /// A partition opened in this pass: the next one most likely opens moments later (see
    /// [`OPEN_GRACE`]).
    opened: bool,
    /// More than one core may run this process's threads: [`LoopState::grace`] spins only
    /// then (on one core, spinning would hold off the very thread it waits for).
    may_spin: bool,
}

/// How long the driver keeps looking for a message, without sleeping, after it left an outcome
/// to a caller holding the instance. That caller applies it before its call returns and sends
/// the work it begins (usually the next write) within microseconds; a driver already asleep
/// would cost the caller a futex wake-up for it (6 % of a caller's time, one event per call).
/// Bounded: past this the driver sleeps as before.
const CALLER_GRACE: Duration = Duration::from_micros(20);

/// How long the driver keeps looking for a message, without sleeping, after a partition
/// opened. Partitions open in bursts (a host starting, or taking over another's partitions),
/// one moments after another; a driver asleep between them costs every opener a futex
/// wake-up of the driver thread. Bounded: past this the driver sleeps as before. Meanwhile it
/// lets any other ready thread have the core: on two cores, the thread making the next opens'
/// memories (`runtime::memory`'s stock) shares it with the driver.
const OPEN_GRACE: Duration = Duration::from_micros(50);

impl LoopState {
    async fn run(&mut self, mut rx: mpsc::UnboundedReceiver<DriverMsg>) {
        futures::future::poll_fn(|cx| {
            loop {
                let mut progressed = false;
                loop {
                    match rx.poll_next_unpin(cx) {
                        Poll::Ready(Some(msg)) => {
                            self.handle(msg);
                            progressed = true;
                        }
                        Poll::Ready(None) => return Poll::Ready(()),
                        Poll::Pending => break,
                    }
                }
                while let Poll::Ready(Some(done)) = self.inflight.poll_next_unpin(cx) {
                    self.finished(done);
                    progressed = true;
                }
                if self.poll_timer(cx) {
                    progressed = true;
                }
                if !progressed {
                    let opened = std::mem::take(&mut self.opened);
                    let left = std::mem::take(&mut self.left_to_caller);
                    if (opened || left) && self.may_spin {
                        progressed = self.grace(&mut rx, cx, opened);
                    }
                }
                if !progressed {
                    if self.inflight.is_empty() && self.held_writes == 0 && self.settles == 0 {
                        for w in self.idle_waiters.drain(..) {
                            let _ = w.send(());
                        }
                    }
                    return Poll::Pending;
                }
            }
        })
        .await
    }

    /// Waits without sleeping for a message on `rx`, and handles it; true if one came (or the
    /// channel closed: the next pass sees that). After an open (`opened`) it waits up to
    /// [`OPEN_GRACE`], giving the core to any other thread ready to run meanwhile (on two
    /// cores, the one making the next instance's memory: `runtime::memory`); else up to
    /// [`CALLER_GRACE`].
    fn grace(
        &mut self, rx: &mut mpsc::UnboundedReceiver<DriverMsg>, cx: &mut std::task::Context<'_>,
        opened: bool,
    ) -> bool {
        let try_rx = || match rx.poll_next_unpin(cx) {
            Poll::Ready(msg) => Some(msg),
            Poll::Pending => None,
        };
        let came = if opened {
            spin_yielding_for(OPEN_GRACE, try_rx)
        } else {
            spin_for(CALLER_GRACE, try_rx)
        };
        match came {
            Some(Some(msg)) => {
                self.handle(msg);
                true
            }
            Some(None) => true,
            None => false,
        }
    }

    fn handle(&mut self, msg: DriverMsg) {
        match msg {
            DriverMsg::Register {
                partition,
                shared,
                max_unflushed,
            } => {
                let part = self
                    .parts
                    .entry(partition)
                    .or_insert_with(|| Part::new(shared.clone()));
                part.shared = shared;
                part.max_unflushed = max_unflushed;
                part.closed = false;
                part.wake = None;
                part.abort_reads();
                self.opened = true;
                if part.settle.take().is_some() {
                    self.settles -= 1;
                }
            }
            DriverMsg::Work {
                partition,
                generation,
                ops,
                wake,
            } => self.work(partition, generation, ops, wake),
            DriverMsg::Cleanup { partition } => {
                if let Some(part) = self.parts.get_mut(&partition) {
                    part.closed = true;
                    part.wake = None;
                    part.queued.clear();
                    part.abort_reads();
                    if part.settle.take().is_some() {
                        self.settles -= 1;
                    }
                }
            }
            DriverMsg::Settle { partition } => {
                if let Some(part) = self.parts.get_mut(&partition)
                    && !part.closed
                    && part.settle.is_none()
                {
                    let at = self.clock.now().saturating_add(SETTLE_AFTER);
                    part.settle = Some(at);
                    self.settles += 1;
                    self.deadlines.push(Reverse((at, partition)));
                }
            }
            DriverMsg::Sync(tx) => {
                let _ = tx.send(());
            }
            DriverMsg::WhenIdle(tx) => {
                self.idle_waiters.push(tx);
                self.settle_all_now();
                self.report_held_writes_now();
            }
            DriverMsg::MinWriteInterval(d) => self.min_write_interval = d,
        }
    }

    /// Settles every deferred flush at once, not waiting for its moment (someone waits for
    /// the driver to be idle: the flushes' values go to the flusher first, whatever the clock
    /// says, a manual one included).
    fn settle_all_now(&mut self) {
        if self.settles == 0 {
            return;
        }
        let mut settle = Vec::new();
        for part in self.parts.values_mut() {
            if part.settle.take().is_some() {
                self.settles -= 1;
                settle.push(part.shared.clone());
            }
        }
        for shared in settle.iter().filter_map(Weak::upgrade) {
            self.left_to_caller |= shared.settle_now();
        }
    }

    /// Reports every held write at once (someone waits for the driver to be idle: the next
    /// writes begin now, and none is held while anyone waits, so the view is written out
    /// without waiting for the interval, whatever the clock says).
    fn report_held_writes_now(&mut self) {
        if self.held_writes == 0 {
            return;
        }
        let mut held = Vec::new();
        for part in self.parts.values_mut() {
            if let Some((_, done)) = part.held_write.take() {
                self.held_writes -= 1;
                held.push(done);
            }
        }
        for done in held {
            self.report(done);
        }
    }

    fn work(
        &mut self, partition: PartitionId, generation: u64, ops: Vec<Op>,
        wake: Option<Option<Instant>>,
    ) {
        let Some(part) = self.parts.get_mut(&partition) else {
            return;
        };
        if part.closed || generation < part.generation {
            return;
        }
        if generation > part.generation {
            // A new instance: what the old one was reading is of no use to anyone.
            part.generation = generation;
            part.abort_reads();
            part.wake = None;
        }
        if let Some(wake) = wake {
            part.wake = wake;
            if let Some(at) = wake {
                self.deadlines.push(Reverse((at, partition)));
            }
        }
        for work in ops {
            self.start_or_queue(partition, generation, work);
        }
    }

    fn start_or_queue(&mut self, partition: PartitionId, generation: u64, op: Op) {
        let Some(part) = self.parts.get_mut(&partition) else {
            return;
        };
        if op.waits_for_writes() && (part.write_busy || !part.queued.is_empty()) {
            part.queued.push_back((generation, op));
            return;
        }
        let work = op.into_work();
        if let Some(shared) = part.shared.upgrade() {
            shared.in_flight.fetch_add(1, Ordering::SeqCst);
        }
        let storage = &self.storage;
        let op = work.ticket().0;
        let fut: BoxFuture<'static, Done> = match work {
            Work::Write(WriteRequest {
                values,
                next_plog_offset: next_offset,
                ..
            }) => {
                part.write_busy = true;
                part.write_values = values.len();
                if !self.min_write_interval.is_zero() {
                    part.write_began = self.clock.now();
                }
                storage
                    .write(partition, values, next_offset)
                    .map(move |r| Done {
                        partition,
                        generation,
                        op,
                        is_write: true,
                        outcome: Some(Delivery::Outcome(match r {
                            Ok(()) => Outcome::Written,
                            Err(e) => Outcome::Failed(e.0),
                        })),
                    })
                    .boxed()
            }
            Work::ReadNextOffset { .. } => {
                let read = storage.read_next_offset(partition).map(|r| match r {
                    Ok(o) => Delivery::Outcome(Outcome::NextOffset(o)),
                    Err(e) => Delivery::Outcome(Outcome::Failed(e.0)),
                });
                abortable_read(part, partition, generation, op, read.boxed())
            }
            Work::ReadPlog { from, .. } => {
                let read = storage
                    .read_plog(partition, from, self.config.page_events)
                    .map(|r| match r {
                        // The flat layout: one copy into the guest, read there in place.
                        Ok(page) => Delivery::PlogWords {
                            words: plog_words(&page.values),
                            next: page.next,
                            end: page.end,
                        },
                        Err(e) => Delivery::Outcome(Outcome::Failed(e.0)),
                    });
                abortable_read(part, partition, generation, op, read.boxed())
            }
        };
        self.inflight.push(fut);
    }

    fn finished(&mut self, done: Done) {
        let Some(part) = self.parts.get_mut(&done.partition) else {
            return;
        };
        if done.is_write
            && !self.min_write_interval.is_zero()
            && !part.closed
            && part.write_values.saturating_mul(2) < part.max_unflushed
            && self.idle_waiters.is_empty()
        {
            let due = part.write_began.saturating_add(self.min_write_interval);
            if self.clock.now() < due {
                self.deadlines.push(Reverse((due, done.partition)));
                part.held_write = Some((due, done));
                self.held_writes += 1;
                return;
            }
        }
        self.report(done);
    }

    /// Reports a finished operation: frees the partition's write slot, delivers the outcome.
    fn report(&mut self, done: Done) {
        let Some(part) = self.parts.get_mut(&done.partition) else {
            return;
        };
        let shared = part.shared.upgrade();
        if let Some(s) = &shared {
            s.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
        part.reads.retain(|(op, _)| *op != done.op);
        let current = !part.closed && done.generation == part.generation;
        if done.is_write {
            part.write_busy = false;
            self.start_queued(done.partition);
        }
        if let (true, Some(shared), Some(outcome)) = (current, shared, done.outcome) {
            self.left_to_caller |= shared.deliver(done.generation, done.op, outcome);
        }
    }

    fn start_queued(&mut self, partition: PartitionId) {
        loop {
            let Some(part) = self.parts.get_mut(&partition) else {
                return;
            };
            if part.write_busy {
                return;
            }
            let Some((generation, work)) = part.queued.pop_front() else {
                return;
            };
            if generation < part.generation || part.closed {
                continue;
            }
            self.start_or_queue(partition, generation, work);
        }
    }

    /// Polls the timer for the earliest wake-up; pumps every partition that is due, and
    /// reports the held writes that are due. Costs O(log n) per deadline, not a scan of every
    /// partition (a process may serve thousands).
    fn poll_timer(&mut self, cx: &mut std::task::Context<'_>) -> bool {
        // The earliest deadline still wanted; entries superseded since they were pushed go.
        let next = loop {
            let Some(&Reverse((at, partition))) = self.deadlines.peek() else {
                self.timer = None;
                return false;
            };
            if self.parts.get(&partition).is_some_and(|p| p.wants(at)) {
                break at;
            }
            self.deadlines.pop();
        };
        if self.timer.as_ref().is_none_or(|(at, _)| *at != next) {
            self.timer = Some((next, self.clock.sleep_until(next)));
        }
        let Some((_, sleep)) = self.timer.as_mut() else {
            return false;
        };
        if sleep.poll_unpin(cx).is_pending() {
            return false;
        }
        self.timer = None;
        let now = self.clock.now();
        let mut due_parts = Vec::new();
        while let Some(&Reverse((at, partition))) = self.deadlines.peek() {
            if at > now {
                break;
            }
            self.deadlines.pop();
            due_parts.push(partition);
        }
        due_parts.sort_unstable();
        due_parts.dedup();
        let mut held = Vec::new();
        for p in &due_parts {
            if let Some(part) = self.parts.get_mut(p)
                && part.held_write.as_ref().is_some_and(|(at, _)| *at <= now)
                && let Some((_, done)) = part.held_write.take()
            {
                self.held_writes -= 1;
                held.push(done);
            }
        }
        for done in held {
            self.report(done);
        }
        let mut due: Vec<(Weak<Shared>, u64)> = Vec::new();
        let mut settle: Vec<Weak<Shared>> = Vec::new();
        for p in &due_parts {
            let Some(part) = self.parts.get_mut(p) else {
                continue;
            };
            if !part.closed && part.wake.is_some_and(|w| w <= now) {
                part.wake = None;
                due.push((part.shared.clone(), part.generation));
            }
            if part.settle.is_some_and(|at| at <= now) {
                part.settle = None;
                self.settles -= 1;
                settle.push(part.shared.clone());
            }
        }
        for shared in settle.iter().filter_map(Weak::upgrade) {
            self.left_to_caller |= shared.settle_now();
        }
        for (shared, generation) in due {
            if let Some(shared) = shared.upgrade() {
                self.left_to_caller |= shared.pump(generation);
            }
        }
        true
    }
}

fn abortable_read(
    part: &mut Part, partition: PartitionId, generation: u64, op: u64,
    read: BoxFuture<'static, Delivery>,
) -> BoxFuture<'static, Done> {
    let (handle, registration) = AbortHandle::new_pair();
    part.reads.push((op, handle));
    Abortable::new(read, registration)
        .map(move |r| Done {
            partition,
            generation,
            op,
            is_write: false,
            outcome: r.ok(),
        })
        .boxed()
}

/// The runtime's pooled instances, driven: a slot freed by a closed sequencer is reused.
#[cfg(test)]
mod pooled {
    use sequencer::Params;

    use std::sync::Arc;

    use super::{Driver, DriverConfig};
    use crate::clock::ManualClock;
    use crate::runtime::Runtime;
    use crate::runtime::bindings::StartOutcome;
    use crate::runtime::link::{
        Limits, POOL_KEEP_RESIDENT_MEMORY, POOL_KEEP_RESIDENT_TABLES, component_path,
    };
    use crate::store::memory::MemoryStorage;

    /// The compiled component (`scripts/build-component.sh` builds it).
    fn component() -> Vec<u8> {
        let path = component_path();
        std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "no component at {} ({e}); build it first: bash scripts/build-component.sh",
                path.display()
            )
        })
    }

    /// A pool of one slot: a second live instance is refused; each sequencer opened after the
    /// previous one was dropped reuses the slot and carries on from storage; a freed slot keeps
    /// no more resident than `Limits::pooled_instances` says.
    #[test]
    fn pooled_slot_is_reused_within_its_limits() {
        let limits = Limits {
            pooled_instances: Some(1),
            ..Limits::default()
        };
        let rt = Runtime::from_bytes(&component(), limits).expect("pooled runtime");
        let storage = MemoryStorage::new();
        let driver = Driver::spawn(
            Arc::new(storage.clone()),
            Arc::new(ManualClock::new()),
            DriverConfig::default(),
        );
        let params = Params::new().with_seq(1, 1, 1);
        let mut numbers = Vec::new();
        for _ in 0..3 {
            let seq = driver.open(&rt, 0, &params).expect("open");
            driver.idle();
            assert!(driver.open(&rt, 1, &params).is_err(), "the pool holds one");
            let outcome = seq.start(1, 7).expect("start");
            assert!(matches!(outcome, StartOutcome::Started(_)), "{outcome:?}");
            numbers.push(seq.next(1).expect("next"));
            seq.flush().expect("flush");
            driver.idle();
            seq.cleanup();
            drop(seq);
            driver.sync();
        }
        assert_eq!(numbers, [numbers[0], numbers[0] + 1, numbers[0] + 2]);
        let metrics = rt
            .inner
            .linked
            .engine()
            .pooling_allocator_metrics()
            .expect("pooling");
        assert_eq!(metrics.component_instances(), 0);
        assert!(metrics.unused_memory_bytes_resident() <= POOL_KEEP_RESIDENT_MEMORY);
        assert!(metrics.unused_memory_bytes_resident() > 0);
        assert!(metrics.unused_table_bytes_resident() <= 2 * POOL_KEEP_RESIDENT_TABLES);
        eprintln!(
            "freed slot: {} bytes of memory, {} of tables resident",
            metrics.unused_memory_bytes_resident(),
            metrics.unused_table_bytes_resident()
        );
    }
}
