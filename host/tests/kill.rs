//! The kill test: the real host process, running the workload on the embedded store, is sent
//! SIGKILL at random moments (while compiling, creating or opening the data directory,
//! actualizing, or in the middle of appends and flushes), restarted each time, and after every
//! kill `sequencer-host check` must prove over the PLog that offsets are dense and no
//! (workspace, sequence) number appears twice.
//!
//! `SEQUENCER_KILL_ROUNDS` (default 20) sets the number of kills, `SEQUENCER_KILL_SEED` the
//! seed of the kill moments; `SEQUENCER_KILL_ROUNDS=200` is the longer mode.
//!
//! The sleeps here are the point of the test: a real process killed at a random moment.

#![cfg(feature = "cli")]

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use sequencer::testkit::Rng;

use common::{checked_events, component_path, host, small_run, text};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `check` and returns how many PLog events it proved.
fn check(data: &std::path::Path, after: &str) -> u64 {
    checked_events(
        &["check", "--data", data.to_str().expect("utf-8 path")],
        after,
    )
}

#[test]
fn sigkill_at_random_moments_never_leaves_a_gap_in_offsets_or_a_number_issued_twice() {
    let rounds = env_u64("SEQUENCER_KILL_ROUNDS", 20);
    let seed = env_u64("SEQUENCER_KILL_SEED", 0x5EED_2026);
    let mut rng = Rng::new(seed);
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let component = component_path();
    let started = Instant::now();
    let mut events = 0;
    let mut killed_running = 0;

    for round in 1..=rounds {
        let log = tmp.path().join(format!("round-{round}.log"));
        let mut child = host()
            .args(["run", "--data"])
            .arg(&data)
            .arg("--component")
            .arg(&component)
            .args(["--partitions", "4", "--workspaces", "200"])
            .args(["--events", "10000000", "--fail-rate", "0.05"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start sequencer-host run");
        // Up to 1.2 s: the early moments fall in start-up and actualization.
        let delay = Duration::from_millis(rng.below(1_200));
        let status = common::sigkill_after(&mut child, delay, round, Some(&log));
        assert!(!status.success(), "round {round}: the host was killed");
        if !data.exists() {
            // Killed before the data directory was renamed into place: nothing to check.
            continue;
        }
        let now = check(&data, &format!("after kill {round} at {delay:?}"));
        assert!(
            now >= events,
            "round {round}: the PLog shrank from {events} to {now} events"
        );
        if now > events {
            killed_running += 1;
        }
        events = now;
    }

    // A last run that finishes: it resumes, continues and checks on its own.
    let out = small_run(&data, 100);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "the final run failed:\n{stdout}{stderr}"
    );
    assert!(
        stdout.contains("dense offsets, no number issued twice"),
        "{stdout}"
    );
    let after = check(&data, "after the final run");
    assert_eq!(after, events + 400, "the final run appended 4 × 100 events");
    assert!(
        killed_running >= rounds / 4,
        "only {killed_running} of {rounds} kills hit a running workload"
    );
    eprintln!(
        "kill test: {rounds} kills ({killed_running} during appends), {after} events, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
