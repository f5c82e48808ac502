//! `check` and `inspect` read a store without writing to it: a cleanly closed data directory
//! is read in place, one whose last run was killed (it needs crash recovery) through a private
//! copy, one a live run holds through the snapshots that run serves (`tests/live.rs` has
//! more), and in every case the directory's bytes are the same after as before.

#![cfg(feature = "cli")]

mod common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{checked_events, host, run_host, small_run, snapshot, text};

fn data_arg(data: &Path) -> &str {
    data.to_str().expect("utf-8 path")
}

/// Runs `check` and `inspect` on `data`, asserts both pass and that the directory's bytes did
/// not change, and returns `check`'s output.
fn check_and_inspect_unchanged(data: &Path, when: &str) -> String {
    let before = snapshot(data);
    let checked = run_host(&["check", "--data", data_arg(data)]);
    let (stdout, stderr) = text(&checked);
    assert!(checked.status.success(), "check {when}:\n{stdout}{stderr}");
    let inspected = run_host(&["inspect", "--data", data_arg(data), "--partition", "1"]);
    assert!(
        inspected.status.success(),
        "inspect {when}: {:?}",
        text(&inspected)
    );
    assert!(
        snapshot(data) == before,
        "check and inspect changed the data directory's bytes {when}"
    );
    stdout
}

/// Starts a long run on `data` in the background.
fn start_long_run(data: &Path, extra: &[&str]) -> Child {
    host()
        .args(["run", "--data", data_arg(data), "--component"])
        .arg(common::component_path())
        .args([
            "--partitions",
            "2",
            "--events",
            "10000000",
            "--fail-rate",
            "0",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sequencer-host")
}

/// Waits (bounded) until the run on `data` has appended events (a new database is already
/// about 1 MiB: twice that means events).
fn wait_for_events(data: &Path, run: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        assert!(
            run.try_wait().expect("poll the run").is_none(),
            "the run ended early"
        );
        let db = data.join("store.redb");
        if std::fs::metadata(db).is_ok_and(|m| m.len() > 2 << 20) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the run appended nothing within 60 s");
}

#[test]
fn a_cleanly_closed_store_is_read_in_place_and_left_byte_for_byte_unchanged() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    assert!(small_run(&data, 100).status.success());
    let out = check_and_inspect_unchanged(&data, "after a clean run");
    assert!(out.contains("read-only in place"), "{out}");
}

#[test]
fn a_store_killed_mid_run_is_checked_on_a_recovered_private_copy_and_left_unchanged() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let mut run = start_long_run(&data, &[]);
    wait_for_events(&data, &mut run);
    run.kill().expect("SIGKILL the run");
    run.wait().expect("reap the run");
    let out = check_and_inspect_unchanged(&data, "after a SIGKILL");
    assert!(out.contains("recovered there"), "{out}");
    // Twice: the first check repaired nothing in place, so the second needs the copy too.
    let again = check_and_inspect_unchanged(&data, "after a second check");
    assert!(again.contains("recovered there"), "{again}");
    // A run resumes the directory as it was left, and check passes after it.
    let resumed = common::run_on(&data, &["--partitions", "2", "--events", "10"]);
    assert!(resumed.status.success(), "resume: {:?}", text(&resumed));
    checked_events(&["check", "--data", data_arg(&data)], "after the resume");
}

#[test]
fn check_and_inspect_read_a_live_run_through_the_snapshots_it_serves() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    // An offered rate keeps the run committing while the checks read.
    let mut run = start_long_run(&data, &["--rate", "20000"]);
    wait_for_events(&data, &mut run);
    for round in 0..3 {
        let checked = run_host(&["check", "--data", data_arg(&data)]);
        let (stdout, stderr) = text(&checked);
        assert!(
            checked.status.success(),
            "check beside a live run, round {round}:\n{stdout}{stderr}"
        );
        assert!(stdout.contains("a run has it open"), "{stdout}");
        let inspected = run_host(&["inspect", "--data", data_arg(&data), "--partition", "0"]);
        assert!(
            inspected.status.success(),
            "inspect beside a live run: {:?}",
            text(&inspected)
        );
    }
    assert!(
        run.try_wait().expect("poll the run").is_none(),
        "the run went on while it was read"
    );
    run.kill().expect("stop the run");
    run.wait().expect("reap the run");
    checked_events(&["check", "--data", data_arg(&data)], "after the live run");
}
