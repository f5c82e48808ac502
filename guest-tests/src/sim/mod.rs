//! Deterministic simulation of the sequencer under faults.
//!
//! A seeded scheduler ([`world`]) interleaves command-processor transactions (single events
//! through `start`/`next`, `start-next` and its quad form, and several events in one
//! transaction through `stage` and `start-batch`, with `read-numbers-many` failing or answering
//! short now and then; the flushing forms complete one transaction and begin the next), PLog
//! appends (all of a transaction's events before its flush; some failing, some failing after
//! they landed), storage operations that complete, fail,
//! lag, tear halfway or report late and out of order, storage outages, crashes that lose all
//! memory (possibly between a write's values and its offset), graceful shutdowns and clock
//! jumps. It drives one [`calls::Engine`]: the native core, the compiled component under
//! wasmtime, or both in lockstep compared call by call. Every [`Invariant`] is checked after
//! every step; a run ends by letting the system settle without faults and checking that
//! everything reached storage.
//!
//! A seed alone determines a run: it first draws the run's [`options::Options`] (limits and
//! the rate of every fault), then every step. On failure, [`run_seed`] shrinks the run to the
//! smallest step budget that still fails the same way and returns a [`Failure`] that prints the
//! seed, the command that replays it, the options and the trace. See `docs/SIMULATION.md`.

pub mod calls;
pub mod component;
mod config;
pub mod engine;
pub mod fuzz;
pub mod io;
pub mod options;
pub mod rng;
pub mod storage;
mod verdict;
mod world;

use core::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

pub use config::{SimConfig, env_u64};
pub use engine::EngineKind;
pub use verdict::{GUEST_MEMORY_BOUND, Invariant, Stats, Violation};

/// A failed seed: what broke, where, and the shortest run that still breaks it.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The configuration it failed under.
    pub config: SimConfig,
    /// The options the seed drew (limits and fault rates).
    pub options: options::Options,
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
        writeln!(f, "options drawn by the seed:")?;
        for line in self.options.to_string().lines() {
            writeln!(f, "  {line}")?;
        }
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
    seed: u64, cfg: &SimConfig, budget: usize, trace: bool,
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
        options: options::Options::of_seed(seed),
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
    first: u64, count: Option<u64>, budget: Option<Duration>, cfg: &SimConfig,
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
