//! Deterministic simulation: many seeds on the native core, the component and the
//! core in lockstep, the simulator's self-test against a deliberately broken storage, and the
//! replay of one seed from `SIM_SEED`.
//!
//! Environment: `SIM_SEED=<n>` replays one seed (test `replay_sim_seed`; the volume tests then
//! stand aside); `SIM_SEEDS=<n>` sets how many seeds the native volume test runs (default
//! 10,000) and `SIM_COMPONENT_SEEDS=<n>` the lockstep test (default 500); `SIM_SECONDS=<n>` runs
//! the native volume test for a time budget instead; `SIM_STEPS`, `SIM_ENGINE`
//! (`native`/`component`/`both`) and `SIM_BROKEN=offset-first` shape the runs.

use std::process::Command;
use std::time::Duration;

use sequencer_guest_tests::sim::{
    Batch, EngineKind, Invariant, SimConfig, env_u64, run_seed, run_seeds,
};

fn replaying() -> bool {
    std::env::var_os("SIM_SEED").is_some()
}

fn report(name: &str, cfg: &SimConfig, batch: &Batch) {
    let s = &batch.stats;
    println!(
        "{name}: {} seeds x {} steps ({:?} engine) in {:.1?}: {} steps, {} transactions, {} numbers, \
         {} crashes ({} torn), {} shutdowns, {} actualizations, {} failed appends ({} landed), \
         {} failed reads, {} failed writes ({} ambiguous), {} reordered deliveries, {} outages, \
         {} clock jumps, {} probes, {} storage probes, {} exhausted, max unflushed {}, \
         peak guest memory {} bytes",
        s.seeds,
        cfg.steps,
        cfg.engine,
        batch.elapsed,
        s.steps,
        s.transactions,
        s.numbers,
        s.crashes,
        s.torn_crashes,
        s.shutdowns,
        s.actualizations,
        s.appends_failed,
        s.appends_failed_but_written,
        s.failed_reads,
        s.failed_writes,
        s.ambiguous_writes,
        s.reordered_deliveries,
        s.outages,
        s.clock_jumps,
        s.probes,
        s.storage_probes,
        s.exhausted,
        s.max_unflushed_seen,
        s.peak_guest_memory,
    );
}

#[test]
fn native_core_keeps_every_invariant_over_many_seeds() {
    if replaying() {
        return;
    }
    let cfg = SimConfig::new(EngineKind::Native).from_env();
    let budget = env_u64("SIM_SECONDS").map(Duration::from_secs);
    let count = env_u64("SIM_SEEDS").or(if budget.is_some() { None } else { Some(10_000) });
    let batch = run_seeds(0, count, budget, &cfg).unwrap_or_else(|f| panic!("{f}"));
    report("native", &cfg, &batch);
    let missing = batch.stats.never_exercised();
    assert!(
        batch.stats.seeds < 200 || missing.is_empty(),
        "the scheduler never exercised: {missing:?}"
    );
}

#[test]
fn component_and_native_core_agree_step_by_step() {
    if replaying() {
        return;
    }
    let cfg = SimConfig::new(EngineKind::Both).from_env();
    let cfg = SimConfig {
        engine: EngineKind::Both,
        ..cfg
    };
    let count = env_u64("SIM_COMPONENT_SEEDS").unwrap_or(500);
    // Seeds of their own, so that the lockstep runs cover ground the native runs do not.
    let batch = run_seeds(1_000_000, Some(count), None, &cfg).unwrap_or_else(|f| panic!("{f}"));
    report("lockstep", &cfg, &batch);
    assert!(batch.stats.peak_guest_memory > 0, "the component ran");
    let missing = batch.stats.never_exercised();
    assert!(
        count < 200 || missing.is_empty(),
        "the scheduler never exercised: {missing:?}"
    );
}

/// Replays `SIM_SEED` (under `SIM_ENGINE`, default both engines in lockstep); does nothing
/// without it.
#[test]
fn replay_sim_seed() {
    let Some(seed) = env_u64("SIM_SEED") else {
        return;
    };
    let cfg = SimConfig::new(EngineKind::Both).from_env();
    match run_seed(seed, &cfg) {
        Ok(stats) => println!("seed {seed} passed ({:?} engine): {stats:?}", cfg.engine),
        Err(f) => panic!("{f}"),
    }
}

#[test]
fn a_storage_that_writes_the_offset_before_the_values_is_caught_and_its_seed_replays() {
    if replaying() {
        return;
    }
    let cfg = SimConfig {
        offset_first: true,
        ..SimConfig::new(EngineKind::Native)
    };
    let failure = (0..200)
        .find_map(|seed| run_seed(seed, &cfg).err())
        .expect("the broken storage is caught within 200 seeds");
    let printed = failure.to_string();
    println!("{printed}");
    assert_eq!(
        failure.violation.invariant,
        Invariant::OffsetNotAheadOfValues
    );
    assert!(printed.contains(&format!("SIM_SEED={}", failure.seed)));
    assert!(printed.contains("SIM_BROKEN=offset-first"));
    assert!(
        failure.minimal_steps <= failure.step && !failure.trace.is_empty(),
        "the trace is of the shortest failing run ({} steps, found at step {})",
        failure.minimal_steps,
        failure.step
    );
    assert!(
        failure
            .trace
            .last()
            .is_some_and(|l| l.contains("applies Offset")),
        "the minimal run ends with the offset landing first: {:?}",
        failure.trace.last()
    );

    // The same seed fails the same way again, in-process ...
    let again = run_seed(failure.seed, &cfg).expect_err("the seed replays");
    assert_eq!(again.violation, failure.violation);
    assert_eq!(again.step, failure.step);

    // ... and through the environment, as the printed command does (on the component too).
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "replay_sim_seed",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SIM_SEED", failure.seed.to_string())
        .env("SIM_BROKEN", "offset-first")
        .env("SIM_ENGINE", "both")
        .output()
        .expect("run the replay");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "the replay fails:\n{text}");
    assert!(
        text.contains(&format!("seed {}", failure.seed)) && text.contains("OffsetNotAheadOfValues"),
        "the replay reports the same violation:\n{text}"
    );

    // The correct storage passes the same seed.
    let fixed = SimConfig::new(EngineKind::Native);
    assert!(run_seed(failure.seed, &fixed).is_ok());
}

#[test]
fn a_seed_runs_identically_every_time() {
    if replaying() {
        return;
    }
    let cfg = SimConfig::new(EngineKind::Native);
    for seed in [3, 77, 4242] {
        let a = run_seed(seed, &cfg).expect("passes");
        let b = run_seed(seed, &cfg).expect("passes");
        assert_eq!(a, b, "seed {seed}");
    }
}
