//! One simulated run: a seeded scheduler interleaving a command processor, storage progress,
//! late and reordered completions, storage faults, crashes and clock jumps around one engine,
//! checking every invariant after every step.
//!
//! The command processor's transaction is a list of staged events and at most one open event.
//! Its events are offered to the PLog together, in offset order, before the flush that
//! completes them; so a crash, an actualization or a dropping refusal while events are staged
//! loses events the PLog never saw, and the next life must hand out the same offsets and
//! numbers again.

use std::collections::BTreeMap;

use sequencer::{NotNowReason, NumberKey, PLogOffset, SeqValue, Status};
use sequencer_host::bindings::GuestParams;
use sequencer_host::bindings::sequencer::plugin::types::KindSequences;

use super::engine::{
    BatchReply, Begun, Call, Delivery, Effect, Engine, EngineFault, Io, NumbersAnswer, Quad,
    Refusal, Reply, Started, boot,
};
use super::rng::Rng;
use super::{Invariant, SimConfig, Stats, Violation};

/// The sequences of workspace kind 1: (sequence, initial value).
const KIND_1: &[(u16, u64)] = &[(1, 1), (2, 50), (3, 7)];
/// The sequences of workspace kind 2; sequence 9 starts next to the end of the numbers, so
/// transactions run into `sequence-exhausted`.
const KIND_2: &[(u16, u64)] = &[(1, 1), (9, u64::MAX - 6)];
/// The widest kind's number of sequences.
const WIDEST: usize = 3;
/// The distinct sequences of all kinds: what one workspace's cache entry can grow to when the
/// workspace is used with both kinds (the cache may exceed its size by one workspace's numbers).
const ALL_SEQS: usize = 4;
/// A sequence no kind defines.
const UNKNOWN_SEQ: u16 = 77;
/// A kind the params do not define.
const UNKNOWN_KIND: u16 = 9;

const MS: u64 = 1_000_000;
const HOUR: u64 = 3_600_000 * MS;

fn kind_seqs(kind: u16) -> &'static [(u16, u64)] {
    if kind == 1 { KIND_1 } else { KIND_2 }
}

fn initial(kind: u16, seq: u16) -> u64 {
    kind_seqs(kind)
        .iter()
        .find(|(s, _)| *s == seq)
        .map_or(1, |(_, i)| *i)
}

/// Limits chosen per seed, so that volume covers tight and roomy configurations.
#[derive(Clone, Copy, Debug)]
struct Shape {
    max_unflushed: usize,
    lru: usize,
    page_events: u64,
    workspaces: u64,
}

/// Where a storage operation stands.
#[derive(Clone, Debug)]
enum OpState {
    /// Nothing done yet.
    Waiting,
    /// A write's first half is durable, its second is not.
    Half,
    /// Done (or failed); the outcome waits to be delivered.
    Ready(Delivery),
}

/// A storage operation the engine began and has not had reported.
#[derive(Clone, Debug)]
struct Pending {
    begun: Begun,
    /// Storage does not act on it before this time (latency).
    not_before: u64,
    state: OpState,
}

/// An event of the transaction in progress: its offset and the numbers issued for it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Event {
    ws: u64,
    offset: PLogOffset,
    values: Vec<SeqValue>,
}

/// The command processor's transaction: events staged (numbered, not yet in the PLog; they
/// are appended together at the end), then possibly one open event taking numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Tx {
    staged: Vec<Event>,
    /// The open event, with its kind.
    open: Option<(u16, Event)>,
    /// `next` calls still to make in the open event.
    nexts_left: u8,
    /// The events were offered to the PLog: flush if `Some(true)`, actualize if not.
    appended: Option<bool>,
}

impl Tx {
    /// Every event, in offset order.
    fn events(&self) -> impl Iterator<Item = &Event> {
        self.staged.iter().chain(self.open.as_ref().map(|(_, e)| e))
    }
}

/// The command processor: one transaction at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Cp {
    Idle,
    Tx(Tx),
}

/// Which numbers reads a call may see fail.
#[derive(Clone, Copy, Debug)]
struct Fails {
    /// `read-numbers`.
    single: bool,
    /// `read-numbers-many`.
    many: bool,
    /// `read-numbers-many` answers short.
    short: bool,
}

/// What one scheduler step does.
#[derive(Clone, Copy, Debug)]
enum Action {
    Command,
    Perform,
    Deliver,
    Timer,
    Pump,
    Tick,
    ToDeadline,
    Jump,
    Crash,
    Shutdown,
    Outage,
    Recover,
    Actualize,
    Probe,
}

/// The state of one run.
pub(super) struct World<'c> {
    cfg: &'c SimConfig,
    rng: Rng,
    shape: Shape,
    params: GuestParams,
    io: Io,
    engine: Option<Box<dyn Engine>>,
    pending: Vec<Pending>,
    last_delivered: Option<u64>,
    wake: Option<u64>,
    cp: Cp,
    /// Per key, the largest number in the PLog.
    plog_max: BTreeMap<NumberKey, u64>,
    /// Per key, the last number issued since the last crash or actualization.
    epoch_last: BTreeMap<NumberKey, u64>,
    /// Per key, the largest number of the PLog events below `covered_upto`: what the view must
    /// hold while storage holds a next offset of at least that (kept up to date step by step
    /// instead of scanning the PLog after every step; events never change once appended).
    covered_max: BTreeMap<NumberKey, u64>,
    covered_upto: PLogOffset,
    /// `covered_upto` and the storage's change counter when the view last covered
    /// `covered_max` (nothing to check again until either moves).
    covered_checked: (PLogOffset, u64),
    /// Faults are off (the settling phase).
    calm: bool,
    /// Steps taken so far.
    pub(super) step: usize,
    /// One line per step, when tracing.
    pub(super) trace: Option<Vec<String>>,
    line: String,
    pub(super) stats: Stats,
}

type Checked<T = ()> = Result<T, Violation>;

fn violation(invariant: Invariant, detail: impl Into<String>) -> Violation {
    Violation {
        invariant,
        detail: detail.into(),
    }
}

fn fmt_ns(ns: u64) -> String {
    if ns >= u64::MAX / 2 {
        format!("end-of-time-{}ns", u64::MAX - ns)
    } else if ns >= HOUR {
        format!("{:.1}h", ns as f64 / HOUR as f64)
    } else {
        format!("{:.3}ms", ns as f64 / MS as f64)
    }
}

impl<'c> World<'c> {
    pub(super) fn new(seed: u64, cfg: &'c SimConfig, trace: bool) -> Self {
        let mut rng = Rng::new(seed);
        let shape = Shape {
            max_unflushed: rng.pick(&[1, 2, 4, 4, 8, 500]),
            lru: rng.pick(&[3, 4, 8, 8, 64]),
            page_events: rng.range(1, 6),
            workspaces: rng.pick(&[1, 3, 6, 6, 20]),
        };
        let retry = rng.range(1, 10) * MS;
        let params = GuestParams {
            kinds: [1u16, 2]
                .iter()
                .map(|&kind| KindSequences {
                    kind,
                    sequences: kind_seqs(kind).to_vec(),
                })
                .collect(),
            max_unflushed_values: shape.max_unflushed as u32,
            lru_cache_size: shape.lru as u32,
            batcher_delay_ns: rng.range(1, 3) * MS,
            retry_delay_ns: retry,
            max_retry_delay_ns: retry * rng.pick(&[1, 8]),
        };
        let io = Io {
            storage: super::storage::SimStorage {
                offset_first: cfg.offset_first,
                ..Default::default()
            },
            ..Io::default()
        };
        Self {
            cfg,
            rng,
            shape,
            params,
            io,
            engine: None,
            pending: Vec::new(),
            last_delivered: None,
            wake: None,
            cp: Cp::Idle,
            plog_max: BTreeMap::new(),
            epoch_last: BTreeMap::new(),
            covered_max: BTreeMap::new(),
            covered_upto: 0,
            covered_checked: (0, 0),
            calm: false,
            step: 0,
            trace: trace.then(Vec::new),
            line: String::new(),
            stats: Stats::default(),
        }
    }

    /// Runs `budget` scheduler steps, then (if configured) lets the system settle without
    /// faults and checks that everything reached storage.
    pub(super) fn run(&mut self, budget: usize) -> Checked {
        self.begin_line(self.head(|| format!("boot {:?}", self.shape)));
        self.boot()?;
        self.end_line();
        while self.step < budget {
            self.step += 1;
            let action = self.choose();
            self.begin_line(
                self.head(|| format!("#{} t={} {action:?}", self.step, fmt_ns(self.io.now))),
            );
            let result = self.act(action).and_then(|()| self.check());
            self.end_line();
            result?;
        }
        if self.cfg.settle {
            self.settle()?;
        }
        Ok(())
    }

    // ----- tracing -----

    fn begin_line(&mut self, head: Option<String>) {
        if let Some(head) = head {
            self.line = head;
        }
    }

    /// The head of a trace line, formatted only when tracing.
    fn head(&self, f: impl FnOnce() -> String) -> Option<String> {
        self.trace.is_some().then(f)
    }

    fn note(&mut self, f: impl FnOnce() -> String) {
        if self.trace.is_some() {
            self.line.push_str(" | ");
            self.line.push_str(&f());
        }
    }

    fn end_line(&mut self) {
        if let Some(t) = &mut self.trace {
            t.push(std::mem::take(&mut self.line));
        }
    }

    // ----- engine calls -----

    fn boot(&mut self) -> Checked {
        let booted = boot(self.cfg.engine, &self.params, &mut self.io).map_err(engine_fault)?;
        match booted {
            Ok(engine) => self.engine = Some(engine),
            Err(r) => {
                return Err(violation(
                    Invariant::ExpectedReply,
                    format!("create refused valid params: {r:?}"),
                ));
            }
        }
        let effects = std::mem::take(&mut self.io.effects);
        self.note(|| format!("create {effects:?}"));
        self.absorb(effects)
    }

    /// One call; `quiet` calls (the per-step probes) are left out of the trace.
    fn call(&mut self, call: Call, quiet: bool) -> Checked<Reply> {
        let engine = self
            .engine
            .as_mut()
            .ok_or_else(|| violation(Invariant::HostContract, "no engine is running"))?;
        let reply = engine.call(&call, &mut self.io).map_err(engine_fault)?;
        let effects = std::mem::take(&mut self.io.effects);
        if !quiet {
            self.note(|| {
                if effects.is_empty() {
                    format!("{call:?} -> {reply:?}")
                } else {
                    format!("{call:?} -> {reply:?} {effects:?}")
                }
            });
        }
        self.absorb(effects)?;
        Ok(reply)
    }

    fn status(&mut self) -> Checked<Status> {
        match self.call(Call::Status, true)? {
            Reply::Status(s) => Ok(s),
            other => Err(unexpected("status", &other)),
        }
    }

    /// Takes in what the guest asked for: storage operations to perform, the wake-up time.
    fn absorb(&mut self, effects: Vec<Effect>) -> Checked {
        for effect in effects {
            match effect {
                Effect::ReadNumbers { .. } => self.stats.numbers_reads += 1,
                Effect::ReadNumbersMany { .. } => self.stats.numbers_many_reads += 1,
                Effect::SetWake(at) => self.wake = at,
                Effect::Begin(begun) => {
                    let op = begun.op();
                    if let Begun::Write {
                        values,
                        next_offset,
                        ..
                    } = &begun
                    {
                        // Only what the PLog holds may reach the view: staged events' numbers
                        // wait for their flush.
                        if let Some(v) = values
                            .iter()
                            .find(|v| self.plog_max.get(&v.key).is_none_or(|&m| v.value > m))
                        {
                            return Err(violation(
                                Invariant::WritesOnlyPlogNumbers,
                                format!(
                                    "write {op} carries number {} of ws {} seq {}, which the PLog does not hold (largest {:?})",
                                    v.value,
                                    v.key.ws,
                                    v.key.seq,
                                    self.plog_max.get(&v.key)
                                ),
                            ));
                        }
                        let plog_next = self.io.storage.plog_next();
                        if *next_offset > plog_next {
                            return Err(violation(
                                Invariant::WritesOnlyPlogNumbers,
                                format!(
                                    "write {op} carries next offset {next_offset}, beyond the PLog's end {plog_next}"
                                ),
                            ));
                        }
                    }
                    if self.pending.iter().any(|p| p.begun.op() == op) {
                        return Err(violation(
                            Invariant::HostContract,
                            format!("operation id {op} begun twice"),
                        ));
                    }
                    let writes = |p: &Pending| matches!(p.begun, Begun::Write { .. });
                    let reads = |p: &Pending| !writes(p);
                    match &begun {
                        Begun::Write { .. } if self.pending.iter().any(writes) => {
                            return Err(violation(
                                Invariant::HostContract,
                                format!("write {op} begun while another write is outstanding"),
                            ));
                        }
                        Begun::ReadNextOffset { .. } if self.pending.iter().any(writes) => {
                            return Err(violation(
                                Invariant::HostContract,
                                format!(
                                    "offset read {op} begun while a write is outstanding: it could overtake it"
                                ),
                            ));
                        }
                        Begun::ReadNextOffset { .. } | Begun::ReadPlog { .. }
                            if self.pending.iter().any(reads) =>
                        {
                            return Err(violation(
                                Invariant::HostContract,
                                format!("read {op} begun while another read is outstanding"),
                            ));
                        }
                        _ => {}
                    }
                    let latency = if self.calm {
                        0
                    } else {
                        match self.rng.below(20) {
                            0..=13 => 0,
                            14..=18 => self.rng.range(1, 5 * MS),
                            _ => {
                                self.stats.long_latencies += 1;
                                self.rng.range(100 * MS, 2_000 * MS)
                            }
                        }
                    };
                    self.pending.push(Pending {
                        begun,
                        not_before: self.io.now.saturating_add(latency),
                        state: OpState::Waiting,
                    });
                }
            }
        }
        Ok(())
    }

    // ----- the scheduler -----

    fn performable(&self) -> Vec<usize> {
        (0..self.pending.len())
            .filter(|&i| {
                let p = &self.pending[i];
                !matches!(p.state, OpState::Ready(_)) && p.not_before <= self.io.now
            })
            .collect()
    }

    fn deliverable(&self) -> Vec<usize> {
        (0..self.pending.len())
            .filter(|&i| matches!(self.pending[i].state, OpState::Ready(_)))
            .collect()
    }

    fn next_deadline(&self) -> Option<u64> {
        let now = self.io.now;
        let ops = self
            .pending
            .iter()
            .filter(|p| !matches!(p.state, OpState::Ready(_)))
            .map(|p| p.not_before);
        ops.chain(self.wake).filter(|&t| t > now).min()
    }

    fn choose(&mut self) -> Action {
        use Action::*;
        let down = self.io.storage.down;
        // As `performable`/`deliverable` would say, without collecting them (every step).
        let now = self.io.now;
        let (can_perform, can_deliver) = self.pending.iter().fold((false, false), |(p, d), op| {
            let ready = matches!(op.state, OpState::Ready(_));
            (p || (!ready && op.not_before <= now), d || ready)
        });
        let table = [
            (Command, 300),
            (Perform, if can_perform { 140 } else { 0 }),
            (Deliver, if can_deliver { 140 } else { 0 }),
            (
                Timer,
                if self.wake.is_some_and(|w| w <= self.io.now) {
                    120
                } else {
                    0
                },
            ),
            (Pump, 5),
            (Tick, 60),
            (
                ToDeadline,
                if self.next_deadline().is_some() {
                    50
                } else {
                    0
                },
            ),
            (Jump, 4),
            (Crash, 5),
            (Shutdown, 1),
            (Outage, if down { 0 } else { 3 }),
            (Recover, if down { 60 } else { 0 }),
            (Actualize, 5),
            (Probe, 15),
        ];
        let weights = table.map(|(_, w)| w);
        let i = self.rng.weighted(&weights).unwrap_or(0);
        table[i].0
    }

    fn act(&mut self, action: Action) -> Checked {
        match action {
            Action::Command => self.command(),
            Action::Perform => {
                let ready = self.performable();
                let i = ready[self.rng.index(ready.len())];
                self.perform(i);
                Ok(())
            }
            Action::Deliver => {
                let ready = self.deliverable();
                let i = ready[self.rng.index(ready.len())];
                if i != ready[0] {
                    self.stats.reordered_deliveries += 1;
                }
                self.deliver(i)
            }
            Action::Timer => {
                self.wake = None;
                self.call(Call::Pump, false).map(drop)
            }
            Action::Pump => self.call(Call::Pump, false).map(drop),
            Action::Tick => {
                self.io.now = self.io.now.saturating_add(self.rng.range(1_000, 3 * MS));
                Ok(())
            }
            Action::ToDeadline => {
                if let Some(t) = self.next_deadline() {
                    self.io.now = t;
                }
                Ok(())
            }
            Action::Jump => {
                self.stats.clock_jumps += 1;
                self.io.now = if self.rng.chance(5) {
                    self.io.now.max(u64::MAX - self.rng.below(1 << 40))
                } else {
                    self.io.now.saturating_add(self.rng.range(HOUR, 720 * HOUR))
                };
                self.note(|| "the clock jumps".into());
                Ok(())
            }
            Action::Crash => self.crash(false),
            Action::Shutdown => self.crash(true),
            Action::Outage => {
                self.stats.outages += 1;
                self.io.storage.down = true;
                Ok(())
            }
            Action::Recover => {
                self.io.storage.down = false;
                Ok(())
            }
            Action::Actualize => self.caller_actualize(),
            Action::Probe => self.probe(),
        }
    }

    // ----- storage -----

    /// Storage acts on operation `i`: a read is answered (or fails), a write applies its next
    /// half (or fails).
    fn perform(&mut self, i: usize) {
        let calm = self.calm;
        let down = self.io.storage.down && !calm;
        let fail = |rng: &mut Rng, percent| !calm && (down || rng.chance(percent));
        let p = &mut self.pending[i];
        let (next_state, note) = match (&p.begun, &p.state) {
            (Begun::ReadNextOffset { op }, _) => {
                if fail(&mut self.rng, 8) {
                    self.stats.failed_reads += 1;
                    (
                        OpState::Ready(Delivery::Failed("read failed".into())),
                        format!("op {op} fails"),
                    )
                } else {
                    let o = self.io.storage.next_offset;
                    (
                        OpState::Ready(Delivery::NextOffset(o)),
                        format!("op {op} reads offset {o}"),
                    )
                }
            }
            (Begun::ReadPlog { op, from }, _) => {
                if fail(&mut self.rng, 8) {
                    self.stats.failed_reads += 1;
                    (
                        OpState::Ready(Delivery::Failed("read failed".into())),
                        format!("op {op} fails"),
                    )
                } else {
                    let max = self.rng.range(1, self.shape.page_events) as usize;
                    let (values, next, end) = self.io.storage.read_plog(*from, max);
                    let note = format!("op {op} reads PLog [{from}, {next}) end={end}");
                    (
                        OpState::Ready(Delivery::PlogPage { values, next, end }),
                        note,
                    )
                }
            }
            (
                Begun::Write {
                    op,
                    values,
                    next_offset,
                },
                OpState::Waiting,
            ) => {
                if fail(&mut self.rng, 6) {
                    self.stats.failed_writes += 1;
                    (
                        OpState::Ready(Delivery::Failed("write failed".into())),
                        format!("write {op} fails"),
                    )
                } else {
                    let half = self.io.storage.first_half();
                    self.io.storage.apply(half, values, *next_offset);
                    (OpState::Half, format!("write {op} applies {half:?}"))
                }
            }
            (
                Begun::Write {
                    op,
                    values,
                    next_offset,
                },
                _,
            ) => {
                if fail(&mut self.rng, 4) {
                    self.stats.failed_writes += 1;
                    (
                        OpState::Ready(Delivery::Failed("write failed halfway".into())),
                        format!("write {op} fails halfway"),
                    )
                } else {
                    let half = match self.io.storage.first_half() {
                        super::storage::WriteHalf::Values => super::storage::WriteHalf::Offset,
                        super::storage::WriteHalf::Offset => super::storage::WriteHalf::Values,
                    };
                    self.io.storage.apply(half, values, *next_offset);
                    (
                        OpState::Ready(Delivery::Written),
                        format!("write {op} applies {half:?}: durable"),
                    )
                }
            }
        };
        p.state = next_state;
        self.note(|| note);
    }

    /// Reports operation `i`'s outcome to the engine, which must accept it.
    fn deliver(&mut self, i: usize) -> Checked {
        let p = self.pending.remove(i);
        let op = p.begun.op();
        let OpState::Ready(mut outcome) = p.state else {
            return Err(violation(
                Invariant::HostContract,
                "delivering an unfinished operation",
            ));
        };
        if outcome == Delivery::Written && !self.calm && self.rng.chance(3) {
            // The write landed but its acknowledgement was lost: storage reports a failure.
            self.stats.ambiguous_writes += 1;
            outcome = Delivery::Failed("timed out (the write landed)".into());
        }
        if matches!(outcome, Delivery::Failed(_)) {
            self.stats.failures_delivered += 1;
        }
        self.last_delivered = Some(op);
        let reply = self.call(Call::Deliver { op, outcome }, false)?;
        expect_done(&reply, "deliver of an outstanding operation")
    }

    // ----- crashes -----

    /// Everything in memory is lost; storage keeps whatever already reached it, including half
    /// of a write. With `graceful`, the sequencer is cleaned up first.
    fn crash(&mut self, graceful: bool) -> Checked {
        if graceful {
            self.stats.shutdowns += 1;
            self.call(Call::Cleanup, false)?;
            let reply = self.call(Call::Start { kind: 1, ws: 0 }, false)?;
            if reply != Reply::Start(Err(Refusal::CleanedUp)) {
                return Err(unexpected("start after cleanup", &reply));
            }
            if let Some(op) = self.pending.first().map(|p| p.begun.op()) {
                let reply = self.call(
                    Call::Deliver {
                        op,
                        outcome: Delivery::Failed("late".into()),
                    },
                    false,
                )?;
                if reply != Reply::Done(Err(Refusal::CleanedUp)) {
                    return Err(unexpected("deliver after cleanup", &reply));
                }
            }
        } else {
            self.stats.crashes += 1;
            if self
                .pending
                .iter()
                .any(|p| matches!(p.state, OpState::Half))
            {
                self.stats.torn_crashes += 1;
                self.note(|| "crash between the two halves of a write".into());
            }
        }
        if self.tx().is_some_and(|tx| !tx.staged.is_empty()) {
            self.stats.staged_crashes += 1;
            self.note(|| "events staged, not flushed, are lost".into());
        }
        self.engine = None;
        self.pending.clear();
        // Operation ids start again from 0 in the new life.
        self.last_delivered = None;
        self.wake = None;
        self.cp = Cp::Idle;
        self.epoch_last.clear();
        self.boot()
    }

    // ----- the command processor -----

    fn command(&mut self) -> Checked {
        let Cp::Tx(tx) = &self.cp else {
            return self.begin(false);
        };
        let open = tx.open.as_ref().map(|(kind, e)| (*kind, e.ws));
        match (tx.appended, open) {
            (Some(true), _) => {
                if self.calm || self.rng.chance(50) {
                    let reply = self.call(Call::Flush, false)?;
                    expect_done(&reply, "flush")?;
                    self.stats.flushed += 1;
                    self.cp = Cp::Idle;
                    Ok(())
                } else {
                    self.begin(true)
                }
            }
            (Some(false), _) => {
                let reply = self.call(Call::Actualize, false)?;
                expect_done(&reply, "actualize after a failed PLog write")?;
                self.actualized();
                Ok(())
            }
            (None, Some((kind, ws))) if tx.nexts_left > 0 => self.next_number(kind, ws),
            (None, Some(_)) if !self.calm && self.rng.chance(35) => self.stage(),
            // Events are staged and none is open: number more, or offer them to the PLog.
            (None, None) if !self.calm && self.rng.chance(55) => self.begin(false),
            (None, _) => self.append(),
        }
    }

    fn actualized(&mut self) {
        self.stats.actualizations += 1;
        self.epoch_last.clear();
        self.cp = Cp::Idle;
    }

    /// The transaction in progress, if any.
    fn tx(&self) -> Option<&Tx> {
        match &self.cp {
            Cp::Tx(tx) => Some(tx),
            Cp::Idle => None,
        }
    }

    fn tx_mut(&mut self) -> Option<&mut Tx> {
        match &mut self.cp {
            Cp::Tx(tx) => Some(tx),
            Cp::Idle => None,
        }
    }

    /// The offset the next event of the transaction must get: the PLog's next, after the
    /// events already staged (none of which is in the PLog yet).
    fn expected_offset(&self) -> PLogOffset {
        let staged = self.tx().map_or(0, |tx| tx.staged.len() as u64);
        self.io.storage.plog_next() + staged
    }

    /// Distinct keys among the staged events' numbers: what the sequencer holds staged.
    fn staged_keys(&self) -> usize {
        let Some(tx) = self.tx().filter(|tx| !tx.staged.is_empty()) else {
            return 0;
        };
        let mut keys: Vec<NumberKey> = tx
            .staged
            .iter()
            .flat_map(|e| e.values.iter().map(|v| v.key))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys.len()
    }

    /// The last number issued for `key`: in the transaction's events, or in the PLog.
    fn last_issued(&self, key: NumberKey) -> Option<u64> {
        let in_tx = self.tx().and_then(|tx| {
            tx.events()
                .flat_map(|e| e.values.iter())
                .filter(|v| v.key == key)
                .map(|v| v.value)
                .max()
        });
        in_tx.max(self.plog_max.get(&key).copied())
    }

    /// What `next` of `seq` gives next in `ws`, by the model.
    fn expected_next(&self, kind: u16, ws: u64, seq: u16) -> Result<u64, Refusal> {
        match self.last_issued(NumberKey { ws, seq }) {
            Some(l) => l
                .checked_add(1)
                .ok_or(Refusal::SequenceExhausted { kind, seq }),
            None => Ok(initial(kind, seq)),
        }
    }

    /// Sequences for a call naming some: up to four of `kind`, now and then an unknown one.
    fn pick_seqs(&mut self, kind: u16, max: u64) -> Vec<u16> {
        let n = self.rng.below(max + 1);
        let mut seqs: Vec<u16> = (0..n).map(|_| self.rng.pick(kind_seqs(kind)).0).collect();
        if !seqs.is_empty() && self.rng.chance(4) {
            let at = self.rng.index(seqs.len());
            seqs[at] = UNKNOWN_SEQ;
        }
        seqs
    }

    /// A quad naming `seqs`, now and then with a count above four (refused).
    fn pick_quad(&mut self, seqs: &[u16]) -> Quad {
        let mut q = Quad::of(seqs);
        if self.rng.chance(2) {
            q.count = self.rng.pick(&[5, 6, 255]);
        }
        q
    }

    /// Begins an event or a batch of events: a new transaction, more events of one whose
    /// events are staged, or (`flush`) the next after completing the appended transaction in
    /// the same call.
    fn begin(&mut self, flush: bool) -> Checked {
        let kind = self.rng.pick(&[1, 2]);
        let ws = self.rng.below(self.shape.workspaces);
        let answer = if self.calm {
            NumbersAnswer::FromStorage
        } else {
            match self.rng.below(100) {
                0..=2 => NumbersAnswer::Fail("numbers read failed".into()),
                3..=5 => NumbersAnswer::FailMany("numbers read (many) failed".into()),
                6..=7 => NumbersAnswer::ShortMany,
                _ => NumbersAnswer::FromStorage,
            }
        };
        let numbers_fail = matches!(answer, NumbersAnswer::Fail(_));
        let many_fails = numbers_fail || matches!(answer, NumbersAnswer::FailMany(_));
        let many_short = answer == NumbersAnswer::ShortMany;
        let down = self.io.storage.down;
        self.io.numbers = answer;
        let before = self.status()?;
        // Which call: the flushing ones number the next event (or batch) after the flush.
        let style = self
            .rng
            .weighted(if flush {
                &[0, 30, 30, 40]
            } else {
                &[40, 20, 15, 25]
            })
            .unwrap_or(0);
        let call = match style {
            0 => Call::Start { kind, ws },
            1 => {
                let seqs = self.pick_seqs(kind, 4);
                if flush {
                    Call::FlushStartNext { kind, ws, seqs }
                } else {
                    Call::StartNext { kind, ws, seqs }
                }
            }
            2 => {
                let seqs = self.pick_seqs(kind, 4);
                let seqs = self.pick_quad(&seqs);
                self.stats.quad_calls += 1;
                if flush {
                    Call::FlushStartNextQuad { kind, ws, seqs }
                } else {
                    Call::StartNextQuad { kind, ws, seqs }
                }
            }
            _ => {
                let events = self.rng.pick(&[0, 1, 2, 2, 3, 4, 6]);
                let list: Vec<u64> = (0..events)
                    .map(|_| self.rng.below(self.shape.workspaces))
                    .collect();
                let seqs = self.pick_seqs(kind, 4);
                let seqs = self.pick_quad(&seqs);
                if flush {
                    Call::FlushStartBatch {
                        kind,
                        ws: list,
                        seqs,
                    }
                } else {
                    Call::StartBatch {
                        kind,
                        ws: list,
                        seqs,
                    }
                }
            }
        };
        // What the sequencer holds, for the calls that may be refused having changed nothing.
        let held_before = match &call {
            Call::StartNextQuad { seqs, .. } | Call::FlushStartNextQuad { seqs, .. } => {
                seqs.named().is_none()
            }
            Call::StartBatch { .. } | Call::FlushStartBatch { .. } => true,
            _ => false,
        };
        let held_before = if held_before {
            self.held()?
        } else {
            sequencer::HeldNumbers::default()
        };
        let reply = self.call(call.clone(), false);
        self.io.numbers = NumbersAnswer::FromStorage;
        let reply = reply?;
        let fail = Fails {
            single: numbers_fail || down,
            many: many_fails || down,
            short: many_short && !down,
        };

        let quad = match &call {
            Call::StartNextQuad { seqs, .. }
            | Call::FlushStartNextQuad { seqs, .. }
            | Call::StartBatch { seqs, .. }
            | Call::FlushStartBatch { seqs, .. } => Some(*seqs),
            _ => None,
        };
        let invalid = quad.is_some_and(|q| q.named().is_none());
        let refused_with = |r: &Reply| match r {
            Reply::StartNext(Err(e)) | Reply::Quad(Err(e)) | Reply::Batch(Err(e)) => {
                Some(e.clone())
            }
            _ => None,
        };
        let refusal = refused_with(&reply);
        if invalid || refusal == Some(Refusal::InvalidParams) {
            if !invalid || refusal != Some(Refusal::InvalidParams) {
                return Err(violation(
                    Invariant::ExpectedReply,
                    format!(
                        "{call:?} returned {reply:?}: a quad count above 4, and only that, is invalid-params"
                    ),
                ));
            }
            // Refused before anything, the flush included.
            return self.unchanged(before, held_before);
        }
        // The start part of a flushing call runs after the flush, which nothing refuses here.
        let before = if flush {
            if matches!(refusal, Some(Refusal::NoTransaction | Refusal::CleanedUp)) {
                return Err(unexpected("a flushing call in a transaction", &reply));
            }
            self.stats.flushed += 1;
            self.stats.flush_starts += 1;
            self.cp = Cp::Idle;
            Status::Ready
        } else {
            before
        };

        match (call, reply) {
            (Call::Start { kind, ws }, Reply::Start(r)) => match r {
                Ok(outcome) => {
                    let nexts = self.rng.below(5) as u8;
                    if self.started(before, outcome, kind, ws)?
                        && let Some(tx) = self.tx_mut()
                    {
                        tx.nexts_left = nexts;
                    }
                    Ok(())
                }
                Err(Refusal::Storage(_)) if fail.single => {
                    self.stats.numbers_read_failures += 1;
                    Ok(())
                }
                Err(r) => Err(unexpected_refusal("start", &r)),
            },
            (
                Call::StartNext { kind, ws, seqs } | Call::FlushStartNext { kind, ws, seqs },
                Reply::StartNext(r),
            ) => self.started_next(before, kind, ws, &seqs, r, fail),
            (
                Call::StartNextQuad { kind, ws, seqs }
                | Call::FlushStartNextQuad { kind, ws, seqs },
                Reply::Quad(r),
            ) => {
                let named = seqs.named().unwrap_or_default();
                let r = match r {
                    Ok((outcome, places)) => {
                        let count = named.len();
                        let started = matches!(outcome, Started::Offset(_));
                        let asked = if started { count } else { 0 };
                        if places[asked..].iter().any(|&n| n != 0) {
                            return Err(violation(
                                Invariant::ExpectedReply,
                                format!(
                                    "{outcome:?} with numbers {places:?} for {named:?}: places not asked for hold 0"
                                ),
                            ));
                        }
                        Ok((outcome, places[..asked].to_vec()))
                    }
                    Err(e) => Err(e),
                };
                self.started_next(before, kind, ws, named, r, fail)
            }
            (
                Call::StartBatch { kind, ws, seqs } | Call::FlushStartBatch { kind, ws, seqs },
                Reply::Batch(r),
            ) => {
                let held = if flush { None } else { Some(held_before) };
                self.started_batch(
                    before,
                    held,
                    kind,
                    &ws,
                    seqs.named().unwrap_or_default(),
                    r,
                    fail,
                )
            }
            (call, reply) => Err(unexpected(&format!("{call:?}"), &reply)),
        }
    }

    /// Checks the reply of `start-next` (or its quad or flushing forms) of `seqs` in `ws`.
    fn started_next(
        &mut self,
        before: Status,
        kind: u16,
        ws: u64,
        seqs: &[u16],
        r: Result<(Started, Vec<u64>), Refusal>,
        fail: Fails,
    ) -> Checked {
        match r {
            Ok((outcome, numbers)) => {
                let started = self.started(before, outcome, kind, ws)?;
                let expected = if started { seqs.len() } else { 0 };
                if numbers.len() != expected {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-next returned {} numbers for {seqs:?} ({outcome:?})",
                            numbers.len()
                        ),
                    ));
                }
                for (&seq, &n) in seqs.iter().zip(&numbers) {
                    self.check_number(kind, ws, seq, Ok(n))?;
                }
                Ok(())
            }
            Err(r @ (Refusal::UnknownSeqId { .. } | Refusal::SequenceExhausted { .. })) => {
                let model = self.model_numbers(kind, &[ws], seqs);
                if before == Status::Actualizing || model.as_ref().err() != Some(&r) {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-next({kind}, {ws}, {seqs:?}) while {before:?} was refused with {r:?}; the model expects {model:?}"
                        ),
                    ));
                }
                if matches!(r, Refusal::SequenceExhausted { .. }) {
                    self.stats.exhausted += 1;
                }
                self.after_dropping_refusal("start-next")
            }
            Err(Refusal::Storage(_)) if fail.single => {
                self.stats.numbers_read_failures += 1;
                Ok(())
            }
            Err(r) => Err(unexpected_refusal("start-next", &r)),
        }
    }

    /// Checks the reply of `start-batch` (or `flush-start-batch`, then `held` is `None`: the
    /// flush changed what the sequencer holds) of `seqs` for each of `ws`.
    #[allow(clippy::too_many_arguments)]
    fn started_batch(
        &mut self,
        before: Status,
        held: Option<sequencer::HeldNumbers>,
        kind: u16,
        ws: &[u64],
        seqs: &[u16],
        r: Result<BatchReply, Refusal>,
        fail: Fails,
    ) -> Checked {
        let up_front = seqs
            .iter()
            .find(|&&s| !kind_seqs(kind).iter().any(|(k, _)| *k == s))
            .map(|&seq| Refusal::UnknownSeqId { kind, seq });
        let batch = match r {
            Ok(batch) => batch,
            Err(r) if up_front.is_some() => {
                if Some(&r) != up_front.as_ref() {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-batch({kind}, {ws:?}, {seqs:?}) was refused with {r:?}, not {up_front:?}"
                        ),
                    ));
                }
                // Refused before anything (after the flush, for the flushing form).
                return match held {
                    Some(held) => self.unchanged(before, held),
                    None => Ok(()),
                };
            }
            Err(r @ Refusal::SequenceExhausted { .. }) => {
                let model = self.model_numbers(kind, ws, seqs);
                if before == Status::Actualizing || model.as_ref().err() != Some(&r) {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-batch({kind}, {ws:?}, {seqs:?}) while {before:?} was refused with {r:?}; the model expects {model:?}"
                        ),
                    ));
                }
                self.stats.exhausted += 1;
                if self.tx().is_some_and(|tx| !tx.staged.is_empty()) {
                    self.stats.dropped_batches += 1;
                }
                return self.after_dropping_refusal("start-batch");
            }
            Err(r @ (Refusal::Storage(_) | Refusal::MalformedNumbers(_)))
                if (matches!(r, Refusal::Storage(_)) && (fail.many || fail.single))
                    || (matches!(r, Refusal::MalformedNumbers(_)) && fail.short) =>
            {
                self.stats.numbers_read_failures += 1;
                // A read before the first event changes nothing; one for a later event (a
                // workspace preloaded, then evicted) drops the transaction.
                let status = self.status()?;
                if status == Status::Actualizing && before != Status::Actualizing {
                    if !matches!(r, Refusal::Storage(_)) {
                        return Err(unexpected_refusal("start-batch (then dropped)", &r));
                    }
                    self.stats.dropped_batches += 1;
                    self.actualized();
                } else if let Some(held) = held
                    && matches!(r, Refusal::MalformedNumbers(_))
                {
                    self.unchanged(before, held)?;
                }
                return Ok(());
            }
            Err(r) => return Err(unexpected_refusal("start-batch", &r)),
        };
        if let Some(r) = up_front {
            return Err(violation(
                Invariant::ExpectedReply,
                format!(
                    "start-batch({kind}, {ws:?}, {seqs:?}) should be refused with {r:?}, got {batch:?}"
                ),
            ));
        }
        let started = batch.started as usize;
        let complete = batch.not_now.is_none();
        if started > ws.len()
            || complete != (started == ws.len())
            || batch.numbers.len() != started * seqs.len()
        {
            return Err(violation(
                Invariant::ExpectedReply,
                format!("start-batch({kind}, {ws:?}, {seqs:?}) returned {batch:?}"),
            ));
        }
        if started > 0 {
            if before == Status::Actualizing {
                return Err(violation(
                    Invariant::StartRefusesDuringActualization,
                    format!("start-batch started {started} events while actualizing"),
                ));
            }
            let expected = self.expected_offset();
            if batch.first_offset != expected {
                return Err(violation(
                    Invariant::OffsetsDense,
                    format!(
                        "start-batch gave first offset {}, the PLog's next offset after the staged events is {expected}",
                        batch.first_offset
                    ),
                ));
            }
        }
        match batch.not_now {
            None => {}
            Some(NotNowReason::Actualizing) => {
                self.stats.not_now_actualizing += 1;
                if before != Status::Actualizing || started > 0 {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-batch said not-now(actualizing) after {started} events while {before:?}"
                        ),
                    ));
                }
            }
            Some(NotNowReason::TooManyUnflushed) => {
                self.stats.not_now_unflushed += 1;
                if before == Status::Actualizing {
                    return Err(violation(
                        Invariant::StartRefusesDuringActualization,
                        "start-batch said not-now(too-many-unflushed) instead of not-now(actualizing)",
                    ));
                }
                if started > 0 {
                    self.stats.partial_batches += 1;
                }
                let held = self.held()?;
                // No event is open: the transaction's numbers are the staged ones.
                if held.unflushed + held.transaction <= self.shape.max_unflushed {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-batch said too-many-unflushed with {} unflushed and {} staged (max {})",
                            held.unflushed, held.transaction, self.shape.max_unflushed
                        ),
                    ));
                }
            }
        }
        if started == 0 {
            return Ok(());
        }
        self.stats.transactions += u64::from(self.tx().is_none());
        self.stats.batches += 1;
        self.stats.stages += started as u64;
        let per = seqs.len();
        for (i, &w) in ws.iter().enumerate().take(started) {
            let numbers = &batch.numbers[i * per..(i + 1) * per];
            let event = Event {
                ws: w,
                offset: batch.first_offset + i as u64,
                values: Vec::new(),
            };
            match &mut self.cp {
                Cp::Tx(tx) => tx.staged.push(event),
                Cp::Idle => {
                    self.cp = Cp::Tx(Tx {
                        staged: vec![event],
                        open: None,
                        nexts_left: 0,
                        appended: None,
                    })
                }
            }
            for (&seq, &n) in seqs.iter().zip(numbers) {
                self.check_number(kind, w, seq, Ok(n))?;
            }
        }
        Ok(())
    }

    /// Checks `start`'s outcome against the status before it; true if an event began.
    fn started(&mut self, before: Status, outcome: Started, kind: u16, ws: u64) -> Checked<bool> {
        match outcome {
            Started::Offset(offset) => {
                if before == Status::Actualizing {
                    return Err(violation(
                        Invariant::StartRefusesDuringActualization,
                        format!("start began a transaction at offset {offset} while actualizing"),
                    ));
                }
                let expected = self.expected_offset();
                if offset != expected {
                    return Err(violation(
                        Invariant::OffsetsDense,
                        format!(
                            "start gave offset {offset}, the PLog's next offset after the staged events is {expected}"
                        ),
                    ));
                }
                let event = Event {
                    ws,
                    offset,
                    values: Vec::new(),
                };
                match &mut self.cp {
                    Cp::Tx(tx) => tx.open = Some((kind, event)),
                    Cp::Idle => {
                        self.stats.transactions += 1;
                        self.cp = Cp::Tx(Tx {
                            staged: Vec::new(),
                            open: Some((kind, event)),
                            nexts_left: 0,
                            appended: None,
                        });
                    }
                }
                Ok(true)
            }
            Started::NotNow(NotNowReason::Actualizing) => {
                self.stats.not_now_actualizing += 1;
                if before != Status::Actualizing {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!("start said not-now(actualizing) while {before:?}"),
                    ));
                }
                Ok(false)
            }
            Started::NotNow(NotNowReason::TooManyUnflushed) => {
                self.stats.not_now_unflushed += 1;
                if before == Status::Actualizing {
                    return Err(violation(
                        Invariant::StartRefusesDuringActualization,
                        "start said not-now(too-many-unflushed) instead of not-now(actualizing)",
                    ));
                }
                let held = self.held()?;
                // No event is open: the transaction's numbers are the staged ones.
                if held.unflushed + held.transaction <= self.shape.max_unflushed {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start said too-many-unflushed with {} unflushed and {} staged (max {})",
                            held.unflushed, held.transaction, self.shape.max_unflushed
                        ),
                    ));
                }
                Ok(false)
            }
        }
    }

    /// A refused `start-next` or `start-batch` whose start began actualizes: the whole
    /// transaction is dropped.
    fn after_dropping_refusal(&mut self, what: &str) -> Checked {
        let status = self.status()?;
        if status != Status::Actualizing {
            return Err(violation(
                Invariant::ExpectedReply,
                format!("a refused {what} left the sequencer {status:?}, not actualizing"),
            ));
        }
        self.actualized();
        Ok(())
    }

    /// What the model says events taking a `next` of each of `seqs`, one per workspace of
    /// `ws`, get: the numbers, or the first refusal.
    fn model_numbers(&self, kind: u16, ws: &[u64], seqs: &[u16]) -> Result<Vec<u64>, Refusal> {
        let mut local: BTreeMap<NumberKey, u64> = BTreeMap::new();
        let mut out = Vec::with_capacity(ws.len() * seqs.len());
        for &w in ws {
            for &seq in seqs {
                if !kind_seqs(kind).iter().any(|(s, _)| *s == seq) {
                    return Err(Refusal::UnknownSeqId { kind, seq });
                }
                let key = NumberKey { ws: w, seq };
                let n = match local.get(&key) {
                    Some(l) => l
                        .checked_add(1)
                        .ok_or(Refusal::SequenceExhausted { kind, seq })?,
                    None => self.expected_next(kind, w, seq)?,
                };
                local.insert(key, n);
                out.push(n);
            }
        }
        Ok(out)
    }

    fn held(&mut self) -> Checked<sequencer::HeldNumbers> {
        match self.call(Call::HeldNumbers, true)? {
            Reply::Held(h) => Ok(h),
            other => Err(unexpected("held-numbers", &other)),
        }
    }

    fn next_number(&mut self, kind: u16, ws: u64) -> Checked {
        let seq = self.rng.pick(kind_seqs(kind)).0;
        let reply = self.call(Call::Next { seq }, false)?;
        let Reply::Number(r) = reply else {
            return Err(unexpected("next", &reply));
        };
        self.check_number(kind, ws, seq, r)?;
        if let Some(tx) = self.tx_mut() {
            tx.nexts_left -= 1;
        }
        Ok(())
    }

    /// Ends the open event without completing the transaction.
    fn stage(&mut self) -> Checked {
        let reply = self.call(Call::Stage, false)?;
        expect_done(&reply, "stage of the open event")?;
        self.stats.stages += 1;
        if let Some(tx) = self.tx_mut()
            && let Some((_, event)) = tx.open.take()
        {
            tx.staged.push(event);
            tx.nexts_left = 0;
        }
        Ok(())
    }

    /// Checks a number issued for the event being numbered (the open one, or the last staged
    /// one while a batch is checked) against the model, and records it in that event.
    fn check_number(&mut self, kind: u16, ws: u64, seq: u16, got: Result<u64, Refusal>) -> Checked {
        let key = NumberKey { ws, seq };
        if self.tx().is_none() {
            return Err(violation(
                Invariant::HostContract,
                "a number outside a transaction",
            ));
        }
        let expected = self.expected_next(kind, ws, seq);
        let n = match (got, &expected) {
            (Ok(n), _) => n,
            (Err(r), Err(e)) if r == *e => {
                self.stats.exhausted += 1;
                return Ok(());
            }
            (Err(r), _) => return Err(unexpected_refusal("next", &r)),
        };
        if let Some(&in_plog) = self.plog_max.get(&key)
            && n <= in_plog
        {
            let offset = self
                .io
                .storage
                .plog
                .iter()
                .find(|(_, e)| e.iter().any(|v| v.key == key && v.value == n))
                .map(|(o, _)| *o);
            return Err(violation(
                Invariant::NumberNeverReissued,
                format!(
                    "next gave {n} for ws {ws} seq {seq}; the PLog holds it{} (largest {in_plog})",
                    offset
                        .map(|o| format!(" at offset {o}"))
                        .unwrap_or_default()
                ),
            ));
        }
        if let Some(&last) = self.epoch_last.get(&key)
            && n <= last
        {
            return Err(violation(
                Invariant::NumbersIncrease,
                format!("next gave {n} for ws {ws} seq {seq} after {last} in the same life"),
            ));
        }
        if Ok(n) != expected {
            return Err(violation(
                Invariant::NumbersDense,
                format!("next gave {n} for ws {ws} seq {seq}, the model expects {expected:?}"),
            ));
        }
        self.epoch_last.insert(key, n);
        self.stats.numbers += 1;
        if let Some(tx) = self.tx_mut() {
            let event = match &mut tx.open {
                Some((_, e)) => Some(e),
                None => tx.staged.last_mut(),
            };
            if let Some(e) = event {
                e.values.push(SeqValue::new(ws, seq, n));
            }
        }
        Ok(())
    }

    /// Offers the transaction's events to the PLog in offset order (the staged ones, then the
    /// open one), or gives them up. An append that fails stops the rest: the PLog accepts only
    /// its next offset.
    fn append(&mut self) -> Checked {
        let Some(tx) = self.tx() else {
            return Err(violation(
                Invariant::HostContract,
                "appending outside a transaction",
            ));
        };
        let events: Vec<Event> = tx.events().cloned().collect();
        if !self.calm && self.rng.chance(3) {
            self.note(|| "the command fails: actualize".into());
            if let Some(tx) = self.tx_mut() {
                tx.appended = Some(false);
            }
            return Ok(());
        }
        let mut all_ok = true;
        for Event { offset, values, .. } in events {
            let roll = self.rng.below(100);
            let (written, ok) = if self.calm {
                (true, true)
            } else if self.io.storage.down || roll < 4 {
                (false, false)
            } else if roll < 7 {
                self.stats.appends_failed_but_written += 1;
                (true, false)
            } else {
                (true, true)
            };
            if written {
                let next = self.io.storage.plog_next();
                if offset != next {
                    return Err(violation(
                        Invariant::OffsetsDense,
                        format!("appending at offset {offset}, the PLog's next is {next}"),
                    ));
                }
                for v in &values {
                    let max = self.plog_max.entry(v.key).or_default();
                    *max = (*max).max(v.value);
                }
                self.io.storage.plog.insert(offset, values);
            }
            self.note(|| format!("append at {offset}: written={written} ok={ok}"));
            if !ok {
                self.stats.appends_failed += 1;
                all_ok = false;
                break;
            }
        }
        if let Some(tx) = self.tx_mut() {
            tx.appended = Some(all_ok);
        }
        Ok(())
    }

    fn caller_actualize(&mut self) -> Checked {
        let status = self.status()?;
        let reply = self.call(Call::Actualize, false)?;
        if status == Status::Actualizing {
            if reply != Reply::Done(Err(Refusal::AlreadyActualizing)) {
                return Err(unexpected("actualize while actualizing", &reply));
            }
            return Ok(());
        }
        expect_done(&reply, "actualize")?;
        self.actualized();
        Ok(())
    }

    // ----- misuse probes -----

    /// A call the sequencer must refuse with a typed error, changing nothing.
    fn probe(&mut self) -> Checked {
        let status = self.status()?;
        let held = self.held()?;
        let outstanding: Vec<(u64, Begun)> = self
            .pending
            .iter()
            .map(|p| (p.begun.op(), p.begun.clone()))
            .collect();
        let idle = self.cp == Cp::Idle;
        let open = self.tx().is_some_and(|tx| tx.open.is_some());
        let (call, expected) = match self.rng.below(8) {
            0 if !open => (Call::Next { seq: 1 }, Refusal::NoTransaction),
            1 if idle => (Call::Flush, Refusal::NoTransaction),
            0 | 1 if open => (
                Call::Start { kind: 1, ws: 0 },
                Refusal::TransactionInProgress,
            ),
            // Events are staged, none is open.
            0 | 1 => (Call::Stage, Refusal::NoTransaction),
            2 if !open => (
                Call::Start {
                    kind: UNKNOWN_KIND,
                    ws: 0,
                },
                Refusal::UnknownWsKind(UNKNOWN_KIND),
            ),
            3 if !outstanding.is_empty() => {
                let (op, begun) = outstanding[self.rng.index(outstanding.len())].clone();
                match begun {
                    Begun::ReadPlog { from, .. } if self.rng.chance(50) => {
                        let page = Delivery::PlogPage {
                            values: vec![(from + 5, SeqValue::new(0, 1, 1))],
                            next: from + 1,
                            end: true,
                        };
                        let call = Call::Deliver { op, outcome: page };
                        let reply = self.call(call, false)?;
                        self.stats.probes += 1;
                        if !matches!(reply, Reply::Done(Err(Refusal::MalformedPlogPage(_)))) {
                            return Err(unexpected("a malformed PLog page", &reply));
                        }
                        return self.unchanged(status, held);
                    }
                    Begun::Write { .. } => (
                        Call::Deliver {
                            op,
                            outcome: Delivery::NextOffset(1),
                        },
                        Refusal::WrongOutcome(op),
                    ),
                    _ => (
                        Call::Deliver {
                            op,
                            outcome: Delivery::Written,
                        },
                        Refusal::WrongOutcome(op),
                    ),
                }
            }
            6 | 7 => {
                let kind = self.rng.pick(&[1, 2]);
                let ws = vec![0, self.rng.below(self.shape.workspaces)];
                let too_many = Quad {
                    count: self.rng.pick(&[5, 6, 255]),
                    seqs: [1; 4],
                };
                match self.rng.below(6) {
                    0 => (
                        Call::StartBatch {
                            kind: UNKNOWN_KIND,
                            ws,
                            seqs: Quad::of(&[1]),
                        },
                        Refusal::UnknownWsKind(UNKNOWN_KIND),
                    ),
                    1 => (
                        Call::StartBatch {
                            kind,
                            ws,
                            seqs: Quad::of(&[1, UNKNOWN_SEQ]),
                        },
                        Refusal::UnknownSeqId {
                            kind,
                            seq: UNKNOWN_SEQ,
                        },
                    ),
                    2 => {
                        let call = match self.rng.below(4) {
                            0 => Call::StartNextQuad {
                                kind,
                                ws: 0,
                                seqs: too_many,
                            },
                            1 => Call::FlushStartNextQuad {
                                kind,
                                ws: 0,
                                seqs: too_many,
                            },
                            2 => Call::StartBatch {
                                kind,
                                ws,
                                seqs: too_many,
                            },
                            _ => Call::FlushStartBatch {
                                kind,
                                ws,
                                seqs: too_many,
                            },
                        };
                        (call, Refusal::InvalidParams)
                    }
                    3 if idle => {
                        let seqs = Quad::of(&[1]);
                        let call = match self.rng.below(3) {
                            0 => Call::FlushStartNext {
                                kind,
                                ws: 0,
                                seqs: vec![1],
                            },
                            1 => Call::FlushStartNextQuad { kind, ws: 0, seqs },
                            _ => Call::FlushStartBatch { kind, ws, seqs },
                        };
                        (call, Refusal::NoTransaction)
                    }
                    4 if open => (
                        Call::StartBatch {
                            kind,
                            ws,
                            seqs: Quad::of(&[1]),
                        },
                        Refusal::TransactionInProgress,
                    ),
                    _ if open => (
                        Call::StartNextQuad {
                            kind,
                            ws: 0,
                            seqs: Quad::of(&[1]),
                        },
                        Refusal::TransactionInProgress,
                    ),
                    _ => (Call::Stage, Refusal::NoTransaction),
                }
            }
            4 if self.last_delivered.is_some() => {
                let op = self.last_delivered.unwrap_or_default();
                (
                    Call::Deliver {
                        op,
                        outcome: Delivery::Written,
                    },
                    Refusal::UnknownOperation(op),
                )
            }
            _ => {
                let op = (1 << 40) + self.rng.below(1 << 20);
                (
                    Call::Deliver {
                        op,
                        outcome: Delivery::Failed("stray".into()),
                    },
                    Refusal::UnknownOperation(op),
                )
            }
        };
        self.stats.probes += 1;
        let reply = self.call(call.clone(), false)?;
        let refused = match &reply {
            Reply::Start(Err(r))
            | Reply::Number(Err(r))
            | Reply::Done(Err(r))
            | Reply::StartNext(Err(r))
            | Reply::Quad(Err(r))
            | Reply::Batch(Err(r)) => Some(r),
            _ => None,
        };
        if refused != Some(&expected) {
            return Err(violation(
                Invariant::ExpectedReply,
                format!("{call:?} should be refused with {expected:?}, got {reply:?}"),
            ));
        }
        self.unchanged(status, held)
    }

    fn unchanged(&mut self, status: Status, held: sequencer::HeldNumbers) -> Checked {
        let (s, h) = (self.status()?, self.held()?);
        if (s, h) != (status, held) {
            return Err(violation(
                Invariant::ExpectedReply,
                format!("a refused call changed the sequencer: {status:?} {held:?} -> {s:?} {h:?}"),
            ));
        }
        Ok(())
    }

    // ----- invariants -----

    /// The invariants that must hold after every step.
    fn check(&mut self) -> Checked {
        let storage = &self.io.storage;
        let upto = storage.next_offset.min(storage.plog_next());
        if upto < self.covered_upto {
            self.covered_max.clear();
            self.covered_upto = 0;
        }
        for event in storage.plog.range(self.covered_upto..upto).map(|(_, e)| e) {
            for v in event {
                let max = self.covered_max.entry(v.key).or_default();
                *max = (*max).max(v.value);
            }
        }
        self.covered_upto = self.covered_upto.max(upto);
        let state = (self.covered_upto, storage.applied);
        let behind = state != self.covered_checked
            && self
                .covered_max
                .iter()
                .any(|(k, &m)| storage.view.get(k).copied().unwrap_or(0) < m);
        if !behind {
            self.covered_checked = state;
        }
        if behind {
            let detail = match storage.offset_ahead_of_values() {
                Some((offset, v)) => format!(
                    "storage holds next offset {} but event {offset}'s number {} of ws {} seq {} is not in the view (view has {})",
                    storage.next_offset,
                    v.value,
                    v.key.ws,
                    v.key.seq,
                    storage.view.get(&v.key).copied().unwrap_or(0)
                ),
                None => format!(
                    "storage holds next offset {} but the view lacks numbers of the events below it",
                    storage.next_offset
                ),
            };
            return Err(violation(Invariant::OffsetNotAheadOfValues, detail));
        }
        if storage.next_offset > storage.plog_next() {
            return Err(violation(
                Invariant::OffsetNotAheadOfValues,
                format!(
                    "storage holds next offset {} beyond the PLog's end {}",
                    storage.next_offset,
                    storage.plog_next()
                ),
            ));
        }
        let status = self.status()?;
        let in_tx = self.cp != Cp::Idle;
        if in_tx != (status == Status::InTransaction) {
            return Err(violation(
                Invariant::ExpectedReply,
                format!(
                    "status {status:?} while the command processor is {:?}",
                    self.cp
                ),
            ));
        }
        let held = self.held()?;
        let cache_bound = self.shape.lru.max(ALL_SEQS);
        let unflushed_bound = self.shape.max_unflushed + WIDEST;
        // The transaction holds exactly the staged events' numbers (one per key) and the open
        // event's sequences: staged values neither leak nor linger.
        let staged = self.staged_keys();
        let open_slots = self
            .tx()
            .and_then(|tx| tx.open.as_ref())
            .map_or(0, |(kind, _)| kind_seqs(*kind).len());
        if held.transaction != staged + open_slots {
            return Err(violation(
                Invariant::MemoryBounds,
                format!(
                    "the transaction holds {} numbers; its {staged} staged keys and {open_slots} open sequences make {}",
                    held.transaction,
                    staged + open_slots
                ),
            ));
        }
        if held.cached > cache_bound
            || held.unflushed > unflushed_bound
            || held.unflushed + staged > unflushed_bound
            || open_slots > WIDEST
        {
            return Err(violation(
                Invariant::MemoryBounds,
                format!(
                    "{held:?} ({staged} staged) exceeds cache {cache_bound}, unflushed + staged {unflushed_bound}, open event {WIDEST}"
                ),
            ));
        }
        if let Some(peak) = self.engine.as_ref().and_then(|e| e.memory_peak()) {
            self.stats.peak_guest_memory = self.stats.peak_guest_memory.max(peak as u64);
            if peak > super::GUEST_MEMORY_BOUND {
                return Err(violation(
                    Invariant::MemoryBounds,
                    format!(
                        "the component's linear memory grew to {peak} bytes (bound {})",
                        super::GUEST_MEMORY_BOUND
                    ),
                ));
            }
        }
        self.stats.max_unflushed_seen = self.stats.max_unflushed_seen.max(held.unflushed as u64);
        Ok(())
    }

    /// Faults stop; the command processor finishes its transaction, storage completes every
    /// operation, timers fire. Then everything that reached the PLog must be in storage and
    /// the sequencer ready.
    fn settle(&mut self) -> Checked {
        self.calm = true;
        self.io.storage.down = false;
        let mut rounds = 0;
        loop {
            rounds += 1;
            if rounds > 10_000 {
                return Err(violation(
                    Invariant::Liveness,
                    "the system did not settle within 10,000 fault-free steps",
                ));
            }
            self.step += 1;
            self.begin_line(
                self.head(|| format!("settle #{} t={}", self.step, fmt_ns(self.io.now))),
            );
            let result = self.settle_step();
            let result = match result {
                Ok(true) => self.check().map(|()| true),
                other => other,
            };
            self.end_line();
            if !result? {
                break;
            }
        }
        let status = self.status()?;
        if status != Status::Ready {
            return Err(violation(
                Invariant::Liveness,
                format!("after settling without faults the sequencer is {status:?}, not ready"),
            ));
        }
        let storage = &self.io.storage;
        let plog_next = storage.plog_next();
        // A flush stores its own event's offset (a restart replays that event again, which is
        // harmless); a replay stores the offset after the last event it read.
        let stored_ok = if storage.plog.is_empty() {
            storage.next_offset <= 1
        } else {
            storage.next_offset + 1 >= plog_next
        };
        if !stored_ok {
            return Err(violation(
                Invariant::Liveness,
                format!(
                    "after settling storage holds next offset {}, the PLog's next is {plog_next}: a restart would replay more than the last event",
                    storage.next_offset
                ),
            ));
        }
        if storage.view != self.plog_max {
            let diff = self
                .plog_max
                .iter()
                .find(|(k, v)| storage.view.get(k) != Some(v))
                .map(|(k, v)| {
                    format!(
                        "ws {} seq {}: PLog {v}, view {:?}",
                        k.ws,
                        k.seq,
                        storage.view.get(k)
                    )
                })
                .unwrap_or_else(|| "the view holds keys the PLog does not".into());
            return Err(violation(
                Invariant::Liveness,
                format!("after settling the view differs from the PLog: {diff}"),
            ));
        }
        Ok(())
    }

    /// One fault-free step; false once nothing is left to do.
    fn settle_step(&mut self) -> Checked<bool> {
        if self.cp != Cp::Idle {
            self.note(|| "finish the transaction".into());
            if let Some(tx) = self.tx_mut() {
                tx.nexts_left = 0;
            }
            self.command()?;
            return Ok(true);
        }
        if let Some(i) =
            (0..self.pending.len()).find(|&i| !matches!(self.pending[i].state, OpState::Ready(_)))
        {
            self.io.now = self.io.now.max(self.pending[i].not_before);
            self.perform(i);
            return Ok(true);
        }
        if !self.pending.is_empty() {
            self.deliver(0)?;
            return Ok(true);
        }
        if let Some(at) = self.wake {
            self.io.now = self.io.now.max(at);
            self.wake = None;
            self.call(Call::Pump, false)?;
            return Ok(true);
        }
        Ok(false)
    }
}

fn engine_fault(e: EngineFault) -> Violation {
    let invariant = match e {
        EngineFault::Divergence { .. } => Invariant::EnginesAgree,
        EngineFault::Trap(_) | EngineFault::Panic(_) => Invariant::NoTrapNoPanic,
    };
    violation(invariant, e.to_string())
}

fn unexpected(what: &str, reply: &Reply) -> Violation {
    violation(
        Invariant::ExpectedReply,
        format!("{what} returned {reply:?}"),
    )
}

fn unexpected_refusal(what: &str, r: &Refusal) -> Violation {
    violation(
        Invariant::ExpectedReply,
        format!("{what} was refused: {r:?}"),
    )
}

fn expect_done(reply: &Reply, what: &str) -> Checked {
    match reply {
        Reply::Done(Ok(())) => Ok(()),
        other => Err(unexpected(what, other)),
    }
}
