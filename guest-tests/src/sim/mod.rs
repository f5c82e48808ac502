//! Deterministic simulation of the sequencer under faults (issue 7).
//!
//! A seeded scheduler ([`world`]) interleaves command-processor transactions (single events
//! through `start`/`next`, `start-next` and its quad form, and several events in one
//! transaction through `stage` and `start-batch`, with `read-numbers-many` failing or answering
//! short now and then; the flushing forms complete one transaction and begin the next), PLog
//! appends (all of a transaction's events before its flush; some failing, some failing after
//! they landed), storage operations that complete, fail,
//! lag, tear halfway or report late and out of order, storage outages, crashes that lose all
//! memory (possibly between a write's values and its offset), graceful shutdowns and clock
//! jumps. It drives one [`engine::Engine`]: the native core, the compiled component under
//! wasmtime, or both in lockstep compared call by call. Every [`Invariant`] is checked after
//! every step; a run ends by letting the system settle without faults and checking that
//! everything reached storage.
//!
//! A seed alone determines a run. On failure, [`run_seed`] shrinks the run to the smallest step
//! budget that still fails the same way and returns a [`Failure`] that prints the seed, the
//! command that replays it and the trace. See `docs/SIMULATION.md`.

pub mod component;
pub mod engine;
pub mod fuzz;
pub mod rng;
pub mod storage;
mod world;

use core::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

pub use engine::EngineKind;

/// How far the component's linear memory may grow during a simulation (it holds a handful
/// of numbers; growth beyond this would be a leak).
pub const GUEST_MEMORY_BOUND: usize = 4 << 20;

/// The property a run broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invariant {
    /// A number that reached the PLog is never issued again for its (workspace, sequence).
    NumberNeverReissued,
    /// Numbers per key strictly increase within a life (between crashes and actualizations).
    NumbersIncrease,
    /// `next` gives exactly the PLog's last number + 1 (or the initial value): no gaps.
    NumbersDense,
    /// `start` gives exactly the PLog's next offset.
    OffsetsDense,
    /// `start` says "not now (actualizing)" while actualization runs.
    StartRefusesDuringActualization,
    /// Storage never holds a next PLog offset ahead of its values (or beyond the PLog).
    OffsetNotAheadOfValues,
    /// A write carries only numbers the PLog holds and no offset beyond it: the numbers of
    /// staged events wait for their flush.
    WritesOnlyPlogNumbers,
    /// Held numbers stay within the params' bounds; the component's memory within its bound.
    MemoryBounds,
    /// Calls return what the contract says (typed refusals for misuse, success otherwise).
    ExpectedReply,
    /// The guest keeps the host contract: one write at a time, no read overtaking a write,
    /// unique operation ids.
    HostContract,
    /// No trap, no panic.
    NoTrapNoPanic,
    /// The native core and the component agree on every reply and every request.
    EnginesAgree,
    /// Once faults stop, everything reaches storage and the sequencer is ready.
    Liveness,
}

/// A broken invariant, with what exactly happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant.
    pub invariant: Invariant,
    /// What happened.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.invariant, self.detail)
    }
}

/// Counts of what the runs exercised, to show that every kind of interleaving happens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Seeds run.
    pub seeds: u64,
    /// Scheduler steps, settling included.
    pub steps: u64,
    /// Transactions begun.
    pub transactions: u64,
    /// Transactions flushed.
    pub flushed: u64,
    /// Numbers issued and checked.
    pub numbers: u64,
    /// Actualizations (failed events, caller requests, refused start-next).
    pub actualizations: u64,
    /// PLog appends that failed (the transaction then actualizes).
    pub appends_failed: u64,
    /// ... of which the event landed in the PLog all the same.
    pub appends_failed_but_written: u64,
    /// `start` said not-now(actualizing).
    pub not_now_actualizing: u64,
    /// `start` said not-now(too-many-unflushed).
    pub not_now_unflushed: u64,
    /// `read-numbers` calls.
    pub numbers_reads: u64,
    /// `start` refused because `read-numbers` failed.
    pub numbers_read_failures: u64,
    /// Storage reads that failed.
    pub failed_reads: u64,
    /// Storage writes that failed (before or after their first half).
    pub failed_writes: u64,
    /// Writes that landed but were reported failed.
    pub ambiguous_writes: u64,
    /// Failures delivered.
    pub failures_delivered: u64,
    /// Outcomes delivered while an earlier-finished one still waited.
    pub reordered_deliveries: u64,
    /// Operations given a long latency (100 ms to 2 s).
    pub long_latencies: u64,
    /// Storage outages.
    pub outages: u64,
    /// Crashes.
    pub crashes: u64,
    /// ... of which between the two halves of a write.
    pub torn_crashes: u64,
    /// Graceful shutdowns (cleanup) and restarts.
    pub shutdowns: u64,
    /// Clock jumps (hours to a month, or to the end of time).
    pub clock_jumps: u64,
    /// Misuse probes, each refused with its typed error and changing nothing.
    pub probes: u64,
    /// `sequence-exhausted` refusals checked.
    pub exhausted: u64,
    /// Events staged (by `stage` or a batch call).
    pub stages: u64,
    /// Batch calls that staged at least one event.
    pub batches: u64,
    /// Batches cut short by not-now(too-many-unflushed) after staging some events.
    pub partial_batches: u64,
    /// Transactions with staged events dropped by a refusal in a batch (exhausted sequence,
    /// failed numbers read).
    pub dropped_batches: u64,
    /// `read-numbers-many` calls.
    pub numbers_many_reads: u64,
    /// Quad calls (`start-next-quad`, `flush-start-next-quad`).
    pub quad_calls: u64,
    /// Flushing calls that also started (`flush-start-next`, its quad form, `flush-start-batch`).
    pub flush_starts: u64,
    /// Crashes and shutdowns while events were staged.
    pub staged_crashes: u64,
    /// The most unflushed values seen.
    pub max_unflushed_seen: u64,
    /// The component's largest linear memory, in bytes.
    pub peak_guest_memory: u64,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        macro_rules! sum {
            ($($f:ident),*) => { $(self.$f += o.$f;)* };
        }
        sum!(
            seeds,
            steps,
            transactions,
            flushed,
            numbers,
            actualizations,
            appends_failed,
            appends_failed_but_written,
            not_now_actualizing,
            not_now_unflushed,
            numbers_reads,
            numbers_read_failures,
            failed_reads,
            failed_writes,
            ambiguous_writes,
            failures_delivered,
            reordered_deliveries,
            long_latencies,
            outages,
            crashes,
            torn_crashes,
            shutdowns,
            clock_jumps,
            probes,
            exhausted,
            stages,
            batches,
            partial_batches,
            dropped_batches,
            numbers_many_reads,
            quad_calls,
            flush_starts,
            staged_crashes
        );
        self.max_unflushed_seen = self.max_unflushed_seen.max(o.max_unflushed_seen);
        self.peak_guest_memory = self.peak_guest_memory.max(o.peak_guest_memory);
    }

    /// The counters that stayed at zero: interleavings the runs never exercised.
    pub fn never_exercised(&self) -> Vec<&'static str> {
        let all = [
            ("transactions", self.transactions),
            ("flushed", self.flushed),
            ("numbers", self.numbers),
            ("actualizations", self.actualizations),
            ("appends_failed", self.appends_failed),
            (
                "appends_failed_but_written",
                self.appends_failed_but_written,
            ),
            ("not_now_actualizing", self.not_now_actualizing),
            ("not_now_unflushed", self.not_now_unflushed),
            ("numbers_read_failures", self.numbers_read_failures),
            ("failed_reads", self.failed_reads),
            ("failed_writes", self.failed_writes),
            ("ambiguous_writes", self.ambiguous_writes),
            ("reordered_deliveries", self.reordered_deliveries),
            ("long_latencies", self.long_latencies),
            ("outages", self.outages),
            ("crashes", self.crashes),
            ("torn_crashes", self.torn_crashes),
            ("shutdowns", self.shutdowns),
            ("clock_jumps", self.clock_jumps),
            ("probes", self.probes),
            ("exhausted", self.exhausted),
            ("stages", self.stages),
            ("batches", self.batches),
            ("partial_batches", self.partial_batches),
            ("dropped_batches", self.dropped_batches),
            ("numbers_many_reads", self.numbers_many_reads),
            ("quad_calls", self.quad_calls),
            ("flush_starts", self.flush_starts),
            ("staged_crashes", self.staged_crashes),
        ];
        all.iter()
            .filter(|(_, n)| *n == 0)
            .map(|(name, _)| *name)
            .collect()
    }
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The engine to drive.
    pub engine: EngineKind,
    /// Scheduler steps per seed (settling comes on top).
    pub steps: usize,
    /// Use the deliberately broken storage that writes the offset before the values.
    pub offset_first: bool,
    /// End each run by settling without faults and checking that everything reached storage.
    pub settle: bool,
}

impl SimConfig {
    /// Steps per seed unless `SIM_STEPS` says otherwise.
    pub const DEFAULT_STEPS: usize = 300;

    /// Defaults for `engine`: [`Self::DEFAULT_STEPS`] steps, correct storage, settling.
    pub fn new(engine: EngineKind) -> Self {
        Self {
            engine,
            steps: Self::DEFAULT_STEPS,
            offset_first: false,
            settle: true,
        }
    }

    /// Applies `SIM_STEPS`, `SIM_ENGINE` (`native`, `component`, `both`) and
    /// `SIM_BROKEN=offset-first` from the environment.
    pub fn from_env(mut self) -> Self {
        if let Some(steps) = env_u64("SIM_STEPS") {
            self.steps = steps as usize;
        }
        if let Some(engine) = std::env::var("SIM_ENGINE")
            .ok()
            .and_then(|e| EngineKind::parse(&e))
        {
            self.engine = engine;
        }
        if std::env::var("SIM_BROKEN").is_ok_and(|b| b == "offset-first") {
            self.offset_first = true;
        }
        self
    }

    /// The shell command that replays `seed` under this configuration.
    pub fn replay_command(&self, seed: u64) -> String {
        let engine = match self.engine {
            EngineKind::Native => "native",
            EngineKind::Component => "component",
            EngineKind::Both => "both",
        };
        let broken = if self.offset_first {
            " SIM_BROKEN=offset-first"
        } else {
            ""
        };
        format!(
            "SIM_SEED={seed} SIM_ENGINE={engine} SIM_STEPS={}{broken} cargo test -p sequencer-guest-tests --test simulation replay_sim_seed -- --nocapture",
            self.steps
        )
    }
}

/// A failed seed: what broke, where, and the shortest run that still breaks it.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The configuration it failed under.
    pub config: SimConfig,
    /// The step of the full run at which the violation was found.
    pub step: usize,
    /// What broke.
    pub violation: Violation,
    /// The smallest step budget that still fails with the same invariant.
    pub minimal_steps: usize,
    /// The minimal run, one line per step.
    pub trace: Vec<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "SIMULATION FAILED: seed {} ({:?} engine) at step {}: {}",
            self.seed, self.config.engine, self.step, self.violation
        )?;
        writeln!(f, "replay: {}", self.config.replay_command(self.seed))?;
        writeln!(
            f,
            "minimal trace (step budget {} of {}):",
            self.minimal_steps, self.config.steps
        )?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        write!(
            f,
            "SIMULATION FAILED: seed {}: {}",
            self.seed, self.violation
        )
    }
}

/// One run of `seed` with at most `budget` steps: its stats, or the violation with the step
/// it happened at and the trace (when `trace`).
fn simulate(
    seed: u64,
    cfg: &SimConfig,
    budget: usize,
    trace: bool,
) -> Result<Stats, (usize, Violation, Vec<String>)> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut world = world::World::new(seed, cfg, trace);
        let result = world.run(budget);
        let mut stats = std::mem::take(&mut world.stats);
        stats.seeds = 1;
        stats.steps = world.step as u64;
        let lines = world.trace.take().unwrap_or_default();
        result.map(|()| stats).map_err(|v| (world.step, v, lines))
    }));
    result.unwrap_or_else(|p| {
        let message = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err((
            0,
            Violation {
                invariant: Invariant::NoTrapNoPanic,
                detail: format!("the simulator panicked: {message}"),
            },
            Vec::new(),
        ))
    })
}

/// Runs one seed; on failure, shrinks it and returns the [`Failure`] to print.
pub fn run_seed(seed: u64, cfg: &SimConfig) -> Result<Stats, Box<Failure>> {
    let (step, violation, _) = match simulate(seed, cfg, cfg.steps, false) {
        Ok(stats) => return Ok(stats),
        Err(e) => e,
    };
    // The failing step's prefix fails the same way; look for a shorter budget (the settling
    // phase may expose the same violation earlier).
    let same = |budget: usize| matches!(simulate(seed, cfg, budget, false), Err((_, v, _)) if v.invariant == violation.invariant);
    let mut hi = step.clamp(1, cfg.steps);
    if !same(hi) {
        hi = cfg.steps;
    }
    let mut lo = 0;
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if same(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let (trace, minimal_violation) = match simulate(seed, cfg, hi, true) {
        Err((_, v, trace)) => (trace, v),
        Ok(_) => (Vec::new(), violation.clone()),
    };
    Err(Box::new(Failure {
        seed,
        config: cfg.clone(),
        step,
        violation: minimal_violation,
        minimal_steps: hi,
        trace,
    }))
}

/// The outcome of many seeds.
#[derive(Clone, Debug)]
pub struct Batch {
    /// Summed stats.
    pub stats: Stats,
    /// Wall time.
    pub elapsed: Duration,
}

/// Runs seeds from `first` on: `count` of them, or, with `budget`, as many as fit in it (at
/// least one). Stops at the first failure.
pub fn run_seeds(
    first: u64,
    count: Option<u64>,
    budget: Option<Duration>,
    cfg: &SimConfig,
) -> Result<Batch, Box<Failure>> {
    let started = Instant::now();
    let mut stats = Stats::default();
    let mut seed = first;
    loop {
        let done = seed - first;
        if count.is_some_and(|c| done >= c)
            || budget.is_some_and(|b| done > 0 && started.elapsed() >= b)
        {
            break;
        }
        stats.add(&run_seed(seed, cfg)?);
        seed += 1;
    }
    Ok(Batch {
        stats,
        elapsed: started.elapsed(),
    })
}

/// Reads a number from the environment (`_` separators allowed).
pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()?
        .replace('_', "")
        .trim()
        .parse()
        .ok()
}
