//! Shared by the tests that run the real `sequencer-host` binary.

#![allow(dead_code)] // each test binary uses its own part

#[cfg(feature = "etcd")]
pub mod etcd_cluster;
#[cfg(feature = "objects")]
pub mod faulty_objects;
pub mod metrics_run;
pub mod prometheus;
#[cfg(feature = "s3")]
pub mod s3_server;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output};
use std::time::Duration;

/// The host binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_sequencer-host");

/// Where the compiled component is (`sequencer_host::runtime::link::component_path`), which
/// must exist (`scripts/build-component.sh` builds it).
pub fn component_path() -> PathBuf {
    let path = sequencer_host::runtime::link::component_path();
    assert!(
        path.is_file(),
        "no component at {} (build it first: bash scripts/build-component.sh)",
        path.display()
    );
    path
}

/// The host command with logs limited to warnings and no progress bars.
pub fn host() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("SEQUENCER_DATA")
        .env_remove("SEQUENCER_COMPONENT")
        .arg("--quiet")
        .arg("--no-progress");
    c
}

/// Runs the host with `args` and returns its output.
pub fn run_host(args: &[&str]) -> Output {
    host().args(args).output().expect("start sequencer-host")
}

/// stdout and stderr as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every file under `dir` with its bytes (empty map when `dir` does not exist).
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.insert(p.clone(), Vec::new());
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// `run` on the data directory `data` with the built component, then `options`.
pub fn run_on(data: &Path, options: &[&str]) -> Output {
    let component = component_path();
    let mut args = vec![
        "run",
        "--data",
        data.to_str().expect("utf-8 path"),
        "--component",
        component.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(options);
    run_host(&args)
}

/// A small workload run that completes: `events` per partition over 4 partitions.
pub fn small_run(data: &Path, events: u64) -> Output {
    run_on(
        data,
        &[
            "--partitions",
            "4",
            "--workspaces",
            "50",
            "--events",
            &events.to_string(),
            "--fail-rate",
            "0.05",
        ],
    )
}

/// Runs `sequencer-host` with `args` (a `check`), asserts it passed, and returns how many PLog
/// events it proved (from its last line); `after` says when, for the failure message.
/// When `args` name a data directory (`--data D`), also asserts that `check` left every byte
/// of it unchanged.
pub fn checked_events(args: &[&str], after: &str) -> u64 {
    let data = (args.iter())
        .position(|a| *a == "--data")
        .and_then(|i| args.get(i + 1))
        .map(Path::new);
    let before = data.map(snapshot);
    let out = run_host(args);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "check failed {after}:\n{stdout}{stderr}"
    );
    if let (Some(data), Some(before)) = (data, before) {
        assert!(
            snapshot(data) == before,
            "check changed the bytes of {} {after}",
            data.display()
        );
    }
    let last = stdout.lines().last().unwrap_or_default();
    last.split(", ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected check summary {last:?}"))
}

/// Waits (bounded) for the driver to settle and the sequencer to be ready.
pub fn ready(driver: &sequencer_host::Driver, seq: &sequencer_host::PartitionSequencer) {
    for _ in 0..1000 {
        driver.idle();
        if seq.status() == sequencer_host::Status::Ready {
            return;
        }
        std::thread::yield_now();
    }
    panic!("the sequencer never became ready: {:?}", seq.status());
}

/// Starts a test service with one of the project's scripts: `ensure` provides its program
/// (in the tool cache), then `script start DIR` starts it in a new temporary folder and prints
/// where it listens. Returns the folder and what the start printed (its exit status included,
/// for the caller's assertions), or `None` when the program cannot be had outside CI (the test
/// then skips, saying so); under `CI=true` a missing program is not skipped but fails.
pub fn start_service(
    what: &str, ensure: &str, script: &str,
) -> Option<(tempfile::TempDir, Output)> {
    start_service_with(what, ensure, script, &[])
}

/// [`start_service`], with `args` after `start DIR`.
pub fn start_service_with(
    what: &str, ensure: &str, script: &str, args: &[String],
) -> Option<(tempfile::TempDir, Output)> {
    let in_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    let have = Command::new("bash")
        .arg(ensure)
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have && !in_ci {
        let name = Path::new(ensure)
            .file_name()
            .map_or(ensure.into(), |n| n.to_string_lossy());
        eprintln!(
            "SKIPPED: {what} is not available (scripts/{name} could not provide it; under CI=true these tests fail instead)"
        );
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new("bash")
        .arg(script)
        .arg("start")
        .arg(dir.path())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    Some((dir, out))
}

/// The kill tests' moment: lets `child` run for `delay`, then sends it SIGKILL and reaps it.
/// The child must still be running then: one that ended by itself fails the test, with its log
/// (`log`, where it writes one). Returns its exit status.
pub fn sigkill_after(
    child: &mut Child, delay: Duration, round: impl std::fmt::Display, log: Option<&Path>,
) -> ExitStatus {
    std::thread::sleep(delay);
    if let Some(status) = child.try_wait().expect("poll the child") {
        let log = log
            .and_then(|l| std::fs::read_to_string(l).ok())
            .unwrap_or_default();
        panic!("round {round}: the run ended by itself ({status}) before the kill:\n{log}");
    }
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child")
}
