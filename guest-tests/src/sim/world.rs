//! One simulated run: a seeded scheduler interleaving a command processor, storage progress,
//! late and reordered completions, storage faults, crashes and clock jumps around one engine,
//! checking every invariant after every step.

use std::collections::BTreeMap;

use sequencer::{NotNowReason, NumberKey, PLogOffset, SeqValue, Status};
use sequencer_host::bindings::GuestParams;
use sequencer_host::bindings::sequencer::plugin::types::KindSequences;

use super::engine::{
    Begun, Call, Delivery, Effect, Engine, EngineFault, Io, NumbersAnswer, Refusal, Reply, Started,
    boot,
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

/// The command processor: one transaction at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Cp {
    Idle,
    /// A transaction is open at `offset` with the numbers issued so far.
    InTx {
        kind: u16,
        ws: u64,
        offset: PLogOffset,
        values: Vec<SeqValue>,
        nexts_left: u8,
    },
    /// The event was offered to the PLog: flush if `ok`, actualize if not.
    Appended {
        ok: bool,
    },
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
                Effect::SetWake(at) => self.wake = at,
                Effect::Begin(begun) => {
                    let op = begun.op();
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
        let table = [
            (Command, 300),
            (
                Perform,
                if self.performable().is_empty() {
                    0
                } else {
                    140
                },
            ),
            (
                Deliver,
                if self.deliverable().is_empty() {
                    0
                } else {
                    140
                },
            ),
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
        let weights: Vec<u64> = table.iter().map(|(_, w)| *w).collect();
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
        match self.cp.clone() {
            Cp::Idle => self.begin_transaction(),
            Cp::InTx {
                kind,
                ws,
                offset,
                values,
                nexts_left,
            } => {
                if nexts_left > 0 {
                    self.next_number(kind, ws)
                } else {
                    self.append(offset, values)
                }
            }
            Cp::Appended { ok: true } => {
                let reply = self.call(Call::Flush, false)?;
                expect_done(&reply, "flush")?;
                self.stats.flushed += 1;
                self.cp = Cp::Idle;
                Ok(())
            }
            Cp::Appended { ok: false } => {
                let reply = self.call(Call::Actualize, false)?;
                expect_done(&reply, "actualize after a failed PLog write")?;
                self.actualized();
                Ok(())
            }
        }
    }

    fn actualized(&mut self) {
        self.stats.actualizations += 1;
        self.epoch_last.clear();
        self.cp = Cp::Idle;
    }

    fn begin_transaction(&mut self) -> Checked {
        let kind = self.rng.pick(&[1, 2]);
        let ws = self.rng.below(self.shape.workspaces);
        let numbers_fail = !self.calm && self.rng.chance(3);
        if numbers_fail {
            self.io.numbers = NumbersAnswer::Fail("numbers read failed".into());
        }
        let numbers_can_fail = numbers_fail || self.io.storage.down;
        let status = self.status()?;
        let nexts = self.rng.below(5) as u8;
        let start_next = self.rng.chance(30);
        let reply = if start_next {
            let mut seqs: Vec<u16> = (0..nexts)
                .map(|_| self.rng.pick(kind_seqs(kind)).0)
                .collect();
            if !seqs.is_empty() && self.rng.chance(4) {
                let at = self.rng.index(seqs.len());
                seqs[at] = UNKNOWN_SEQ;
            }
            let reply = self.call(
                Call::StartNext {
                    kind,
                    ws,
                    seqs: seqs.clone(),
                },
                false,
            );
            self.io.numbers = NumbersAnswer::FromStorage;
            let reply = reply?;
            let Reply::StartNext(r) = reply else {
                return Err(unexpected("start-next", &reply));
            };
            return match r {
                Ok((outcome, numbers)) => {
                    let started = self.started(status, outcome, kind, ws)?;
                    if started && numbers.len() != seqs.len() {
                        return Err(violation(
                            Invariant::ExpectedReply,
                            format!("start-next returned {} numbers for {seqs:?}", numbers.len()),
                        ));
                    }
                    if started {
                        for (&seq, &n) in seqs.iter().zip(&numbers) {
                            self.check_number(kind, ws, seq, Ok(n))?;
                        }
                        if let Cp::InTx { nexts_left, .. } = &mut self.cp {
                            *nexts_left = 0;
                        }
                    }
                    Ok(())
                }
                Err(r @ (Refusal::UnknownSeqId { .. } | Refusal::SequenceExhausted { .. })) => {
                    let model = self.model_numbers(kind, ws, &seqs);
                    if status != Status::Ready || model.as_ref().err() != Some(&r) {
                        return Err(violation(
                            Invariant::ExpectedReply,
                            format!(
                                "start-next({kind}, {ws}, {seqs:?}) while {status:?} was refused with {r:?}; the model expects {model:?}"
                            ),
                        ));
                    }
                    if matches!(r, Refusal::SequenceExhausted { .. }) {
                        self.stats.exhausted += 1;
                    }
                    self.after_refused_start_next()
                }
                Err(Refusal::Storage(_)) if numbers_can_fail => {
                    self.stats.numbers_read_failures += 1;
                    Ok(())
                }
                Err(r) => Err(unexpected_refusal("start-next", &r)),
            };
        } else {
            let reply = self.call(Call::Start { kind, ws }, false);
            self.io.numbers = NumbersAnswer::FromStorage;
            reply?
        };
        let Reply::Start(r) = reply else {
            return Err(unexpected("start", &reply));
        };
        match r {
            Ok(outcome) => {
                if self.started(status, outcome, kind, ws)?
                    && let Cp::InTx { nexts_left, .. } = &mut self.cp
                {
                    *nexts_left = nexts;
                }
                Ok(())
            }
            Err(Refusal::Storage(_)) if numbers_can_fail => {
                self.stats.numbers_read_failures += 1;
                Ok(())
            }
            Err(r) => Err(unexpected_refusal("start", &r)),
        }
    }

    /// Checks `start`'s outcome against the status before it; true if a transaction began.
    fn started(&mut self, before: Status, outcome: Started, kind: u16, ws: u64) -> Checked<bool> {
        match outcome {
            Started::Offset(offset) => {
                if before == Status::Actualizing {
                    return Err(violation(
                        Invariant::StartRefusesDuringActualization,
                        format!("start began a transaction at offset {offset} while actualizing"),
                    ));
                }
                let expected = self.io.storage.plog_next();
                if offset != expected {
                    return Err(violation(
                        Invariant::OffsetsDense,
                        format!("start gave offset {offset}, the PLog's next offset is {expected}"),
                    ));
                }
                self.stats.transactions += 1;
                self.cp = Cp::InTx {
                    kind,
                    ws,
                    offset,
                    values: Vec::new(),
                    nexts_left: 0,
                };
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
                if held.unflushed <= self.shape.max_unflushed {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start said too-many-unflushed with {} unflushed (max {})",
                            held.unflushed, self.shape.max_unflushed
                        ),
                    ));
                }
                Ok(false)
            }
        }
    }

    /// A refused `start-next` actualizes: no transaction stays open behind it.
    fn after_refused_start_next(&mut self) -> Checked {
        let status = self.status()?;
        if status != Status::Actualizing {
            return Err(violation(
                Invariant::ExpectedReply,
                format!("a refused start-next left the sequencer {status:?}, not actualizing"),
            ));
        }
        self.actualized();
        Ok(())
    }

    /// What the model says `next` of each of `seqs` gives in a new transaction of `ws`: the
    /// numbers, or the first refusal.
    fn model_numbers(&self, kind: u16, ws: u64, seqs: &[u16]) -> Result<Vec<u64>, Refusal> {
        let mut local: BTreeMap<u16, u64> = BTreeMap::new();
        let mut out = Vec::with_capacity(seqs.len());
        for &seq in seqs {
            if !kind_seqs(kind).iter().any(|(s, _)| *s == seq) {
                return Err(Refusal::UnknownSeqId { kind, seq });
            }
            let last = local
                .get(&seq)
                .or_else(|| self.plog_max.get(&NumberKey { ws, seq }))
                .copied();
            let n = match last {
                Some(l) => l
                    .checked_add(1)
                    .ok_or(Refusal::SequenceExhausted { kind, seq })?,
                None => initial(kind, seq),
            };
            local.insert(seq, n);
            out.push(n);
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
        if let Cp::InTx { nexts_left, .. } = &mut self.cp {
            *nexts_left -= 1;
        }
        Ok(())
    }

    /// Checks a number `next` gave against the model and records it in the transaction.
    fn check_number(&mut self, kind: u16, ws: u64, seq: u16, got: Result<u64, Refusal>) -> Checked {
        let key = NumberKey { ws, seq };
        let Cp::InTx { values, .. } = &self.cp else {
            return Err(violation(
                Invariant::HostContract,
                "a number outside a transaction",
            ));
        };
        let last = values
            .iter()
            .rev()
            .find(|v| v.key == key)
            .map(|v| v.value)
            .or_else(|| self.plog_max.get(&key).copied());
        let expected = match last {
            Some(l) => l
                .checked_add(1)
                .ok_or(Refusal::SequenceExhausted { kind, seq }),
            None => Ok(initial(kind, seq)),
        };
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
        if let Cp::InTx { values, .. } = &mut self.cp {
            values.push(SeqValue::new(ws, seq, n));
        }
        Ok(())
    }

    /// Offers the transaction's event to the PLog, or gives the event up.
    fn append(&mut self, offset: PLogOffset, values: Vec<SeqValue>) -> Checked {
        if !self.calm && self.rng.chance(3) {
            self.note(|| "the command fails: actualize".into());
            self.cp = Cp::Appended { ok: false };
            return Ok(());
        }
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
        if !ok {
            self.stats.appends_failed += 1;
        }
        self.note(|| format!("append at {offset}: written={written} ok={ok}"));
        self.cp = Cp::Appended { ok };
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
        let (call, expected) = match self.rng.below(6) {
            0 if self.cp == Cp::Idle => (Call::Next { seq: 1 }, Refusal::NoTransaction),
            1 if self.cp == Cp::Idle => (Call::Flush, Refusal::NoTransaction),
            0 | 1 => (
                Call::Start { kind: 1, ws: 0 },
                Refusal::TransactionInProgress,
            ),
            2 if self.cp == Cp::Idle => (
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
            Reply::Start(Err(r)) | Reply::Number(Err(r)) | Reply::Done(Err(r)) => Some(r),
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
        if let Some((offset, v)) = storage.offset_ahead_of_values() {
            return Err(violation(
                Invariant::OffsetNotAheadOfValues,
                format!(
                    "storage holds next offset {} but event {offset}'s number {} of ws {} seq {} is not in the view (view has {})",
                    storage.next_offset,
                    v.value,
                    v.key.ws,
                    v.key.seq,
                    storage.view.get(&v.key).copied().unwrap_or(0)
                ),
            ));
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
        if held.cached > cache_bound
            || held.unflushed > unflushed_bound
            || held.transaction > WIDEST
        {
            return Err(violation(
                Invariant::MemoryBounds,
                format!(
                    "{held:?} exceeds cache {cache_bound}, unflushed {unflushed_bound}, transaction {WIDEST}"
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
            if let Cp::InTx { nexts_left, .. } = &mut self.cp {
                *nexts_left = 0;
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
