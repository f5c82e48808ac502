//! One simulated run: a seeded scheduler interleaving a command processor, storage progress,
//! late and reordered completions, storage faults, crashes and clock jumps around one engine,
//! checking every invariant after every step.
//!
//! By concern: the faults injected step by step ([`faults`], at the rates the seed's
//! [`Options`](super::options::Options) drew), the command
//! processor's workload ([`workload`]), the model of what every number and offset must be
//! ([`model`]), misuse probes ([`probes`]), one checker per invariant family ([`checks`]), and
//! the scheduler ([`scheduler`]); this module holds the run's state and its calls into the
//! engine.
//!
//! The command processor's transaction is a list of staged events and at most one open event.
//! Its events are offered to the PLog together, in offset order, before the flush that
//! completes them; so a crash, an actualization or a dropping refusal while events are staged
//! loses events the PLog never saw, and the next life must hand out the same offsets and
//! numbers again.

use std::collections::BTreeMap;

use sequencer::{
    NotNowReason, NumberKey, PLogOffset, SeqValue, Status, Ticket, Work, WriteRequest,
};
use sequencer_host::runtime::GuestParams;

use super::calls::{
    BatchReply, Call, Delivery, Engine, EngineFault, Quad, Refusal, Reply, Started,
};
use super::config::SimConfig;
use super::engine::boot;
use super::io::{Effect, Io, NumbersAnswer};
use super::options::{FaultRates, HOUR, MS, Options, Shape, kind_seqs};
use super::rng::Rng;
use super::verdict::{GUEST_MEMORY_BOUND, Invariant, Stats, Violation};

mod checks;
mod faults;
mod model;
mod probes;
mod scheduler;
mod workload;

/// The widest kind's number of sequences.
const WIDEST: usize = 3;
/// The distinct sequences of all kinds: what one workspace's cache entry can grow to when the
/// workspace is used with both kinds (the cache may exceed its size by one workspace's numbers).
const ALL_SEQS: usize = 4;
/// A sequence no kind defines.
const UNKNOWN_SEQ: u16 = 77;
/// A kind the params do not define.
const UNKNOWN_KIND: u16 = 9;

fn initial(kind: u16, seq: u16) -> u64 {
    kind_seqs(kind)
        .iter()
        .find(|(s, _)| *s == seq)
        .map_or(1, |(_, i)| *i)
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
    begun: Work,
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
    /// The chance of every fault in this run.
    faults: FaultRates,
    io: Io,
    engine: Option<Box<dyn Engine>>,
    pending: Vec<Pending>,
    last_delivered: Option<u64>,
    wake: Option<u64>,
    /// The status the guest last reported.
    reported: Option<Status>,
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
    /// The last actualization was `actualize-beside-write`: its offset read may go beside a
    /// write in flight.
    reads_beside_writes: bool,
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
        let (
            Options {
                shape,
                params,
                faults,
            },
            rng,
        ) = Options::draw(seed);
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
            faults,
            io,
            engine: None,
            pending: Vec::new(),
            last_delivered: None,
            wake: None,
            reported: None,
            cp: Cp::Idle,
            plog_max: BTreeMap::new(),
            epoch_last: BTreeMap::new(),
            covered_max: BTreeMap::new(),
            covered_upto: 0,
            covered_checked: (0, 0),
            calm: false,
            reads_beside_writes: false,
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
        self.reads_beside_writes = false;
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
        // An offset read begun while the sequencer is not actualizing (before or after this
        // call) is a probe of storage during a long retry wait.
        let probing = self.reported != Some(Status::Actualizing)
            && !effects.contains(&Effect::Status(Status::Actualizing));
        for effect in effects {
            match effect {
                Effect::ReadNumbers { .. } => self.stats.numbers_reads += 1,
                Effect::ReadNumbersMany { .. } => self.stats.numbers_many_reads += 1,
                Effect::SetWake(at) => self.wake = at,
                Effect::Status(status) => self.reported = Some(status),
                Effect::Begin(begun) => {
                    let op = begun.ticket().0;
                    if probing && matches!(begun, Work::ReadNextOffset { .. }) {
                        self.stats.storage_probes += 1;
                    }
                    if let Work::Write(WriteRequest {
                        values,
                        next_plog_offset: next_offset,
                        ..
                    }) = &begun
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
                        let plog_next = self.io.storage.mem.plog_next();
                        if *next_offset > plog_next {
                            return Err(violation(
                                Invariant::WritesOnlyPlogNumbers,
                                format!(
                                    "write {op} carries next offset {next_offset}, beyond the PLog's end {plog_next}"
                                ),
                            ));
                        }
                    }
                    if self.pending.iter().any(|p| p.begun.ticket().0 == op) {
                        return Err(violation(
                            Invariant::HostContract,
                            format!("operation id {op} begun twice"),
                        ));
                    }
                    let writes = |p: &Pending| matches!(p.begun, Work::Write(_));
                    let reads = |p: &Pending| !writes(p);
                    match &begun {
                        Work::Write(_) if self.pending.iter().any(writes) => {
                            return Err(violation(
                                Invariant::HostContract,
                                format!("write {op} begun while another write is outstanding"),
                            ));
                        }
                        Work::ReadNextOffset { .. }
                            if !self.reads_beside_writes && self.pending.iter().any(writes) =>
                        {
                            return Err(violation(
                                Invariant::HostContract,
                                format!(
                                    "offset read {op} begun while a write is outstanding: it could overtake it"
                                ),
                            ));
                        }
                        Work::ReadNextOffset { .. } | Work::ReadPlog { .. }
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
                        let (short, long) = (
                            self.faults.short_latency_percent,
                            self.faults.long_latency_percent,
                        );
                        match self.rng.below(100) {
                            roll if roll < short => {
                                let r = &self.faults.short_latency_ns;
                                self.rng.range(*r.start(), *r.end())
                            }
                            roll if roll < short + long => {
                                self.stats.long_latencies += 1;
                                let r = &self.faults.long_latency_ns;
                                self.rng.range(*r.start(), *r.end())
                            }
                            _ => 0,
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

    fn held(&mut self) -> Checked<sequencer::HeldNumbers> {
        match self.call(Call::HeldNumbers, true)? {
            Reply::Held(h) => Ok(h),
            other => Err(unexpected("held-numbers", &other)),
        }
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
