//! Faults an operator meets, on the real `sequencer-host` binary: a disk that fills up stops
//! the run with one line and a non-zero exit instead of retrying without end, a resume on a
//! disk that is still full does the same, and once there is room again `check` proves that
//! nothing acknowledged was lost and no number was issued twice.
//!
//! A data directory in use by another process, on a read-only file system, or created by two
//! runs at once is refused with a label that says so (not "corrupt").
//!
//! The full disk is a small tmpfs mounted for the test (this needs root, as CI and the
//! project's machines have; elsewhere the test says why it did not run, and fails under CI).

#![cfg(feature = "cli")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{checked_events, host, run_host, run_on, small_run, text};

/// A tmpfs of a given size, mounted on a temp dir for one test and unmounted after it.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it), or `None` (with the reason on
    /// stderr) where this process may not mount; under CI that is a failure.
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().expect("temp dir");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match mounted {
            Ok(o) if o.status.success() => Some(Self { dir }),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                    Err(e) => e.to_string(),
                };
                assert!(
                    std::env::var_os("CI").is_none(),
                    "cannot mount a tmpfs for the full-disk test: {why}"
                );
                eprintln!("skipped: cannot mount a tmpfs ({why}); run as root to test a full disk");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Gives the file system `size` (more room, as an operator who freed space would).
    fn resize(&self, size: &str) {
        self.remount(&format!("remount,size={size}"));
    }

    /// Makes the file system read-only.
    fn read_only(&self) {
        self.remount("remount,ro");
    }

    fn remount(&self, options: &str) {
        let o = Command::new("mount")
            .args(["-o", options])
            .arg(self.path())
            .output()
            .expect("run mount");
        assert!(o.status.success(), "mount -o {options}: {:?}", text(&o));
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.path()).output();
    }
}

/// A run that would write far more than the disk holds.
fn run_filling(data: &Path) -> Output {
    run_on(
        data,
        &[
            "--partitions",
            "2",
            "--events",
            "1000000",
            "--payload-bytes",
            "4000",
            "--fail-rate",
            "0",
        ],
    )
}

/// Asserts a run that stopped on a storage error: exit 1, a bounded number of log lines, the
/// last one naming the error and saying the run stopped.
fn assert_stopped(out: &Output, when: &str) {
    let (stdout, stderr) = text(out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{when}: stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.len() <= 40,
        "{when}: {} lines of log, want at most 40:\n{stderr}",
        lines.len()
    );
    let last = lines.last().copied().unwrap_or_default();
    assert!(
        last.starts_with("sequencer-host: error: ") && last.contains("No space left on device"),
        "{when}: last line {last:?}"
    );
}

#[test]
fn a_full_disk_stops_the_run_in_one_line_and_check_passes_once_there_is_room_again() {
    let Some(fs) = Tmpfs::mount("4m") else {
        return;
    };
    let data: PathBuf = fs.path().join("data");

    let out = run_filling(&data);
    assert_stopped(&out, "the disk filled up during the run");
    let (_, stderr) = text(&out);
    assert!(
        stderr
            .lines()
            .last()
            .unwrap_or_default()
            .contains("stopping"),
        "{stderr}"
    );

    // Resumed while the disk is still full: it stops the same way, without a loop.
    assert_stopped(&run_filling(&data), "resumed while the disk was still full");

    // Room again: every event acknowledged before is there, dense, no number twice.
    fs.resize("64m");
    let events = checked_events(
        &["check", "--data", data.to_str().expect("utf-8")],
        "after the disk had room again",
    );
    assert!(
        events > 0,
        "the runs appended events before the disk filled"
    );
}

/// Asserts a refusal: exit 1 and one line on stderr holding `says`, and not calling it
/// corrupt.
fn assert_refused_as(out: &Output, says: &str) {
    let (stdout, stderr) = text(out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
    assert!(stderr.contains(says), "{says:?} not in {stderr:?}");
    assert!(!stderr.contains("corrupt"), "not corrupt: {stderr}");
}

#[test]
fn a_data_directory_in_use_by_another_process_is_named_so_not_corrupt() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    assert!(small_run(&data, 20).status.success());
    // This process holds the database open, as a live run would.
    let held =
        sequencer_host::store::redb::RedbStorage::open(&data.join("store.redb")).expect("open");
    let data_arg = data.to_str().expect("utf-8");
    assert_refused_as(
        &run_on(&data, &["--partitions", "4", "--events", "10"]),
        "in use by another process",
    );
    // check reads a store in use through a private copy (tests/read_only.rs has more).
    let out = run_host(&["check", "--data", data_arg]);
    assert!(out.status.success(), "in use: {:?}", text(&out));
    drop(held);
    let out = run_host(&["check", "--data", data_arg]);
    assert!(out.status.success(), "free again: {:?}", text(&out));
}

#[test]
fn a_data_directory_on_a_read_only_file_system_is_named_so_not_corrupt() {
    let Some(fs) = Tmpfs::mount("16m") else {
        return;
    };
    let data = fs.path().join("data");
    assert!(small_run(&data, 20).status.success());
    fs.read_only();
    assert_refused_as(
        &run_on(&data, &["--partitions", "4", "--events", "10"]),
        "read-only file system",
    );
    // check and inspect write nothing, so they read it where it is.
    let data_arg = data.to_str().expect("utf-8");
    let events = checked_events(&["check", "--data", data_arg], "on a read-only file system");
    assert_eq!(events, 4 * 20, "every event of the run");
    let out = run_host(&["inspect", "--data", data_arg]);
    assert!(out.status.success(), "inspect: {:?}", text(&out));
}

#[test]
fn two_runs_started_at_once_on_a_new_directory_leave_one_run_and_one_clear_refusal() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let component = common::component_path();
    let start = || {
        host()
            .args([
                "run",
                "--data",
                data.to_str().expect("utf-8"),
                "--component",
            ])
            .arg(&component)
            .args(["--partitions", "4", "--events", "200"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start sequencer-host")
    };
    let (a, b) = (start(), start());
    let outs = [a, b].map(|c| c.wait_with_output().expect("wait"));
    assert!(
        outs.iter().any(|o| o.status.success()),
        "one of them ran: {:?}",
        outs.iter().map(text).collect::<Vec<_>>()
    );
    for out in outs.iter().filter(|o| !o.status.success()) {
        let (_, stderr) = text(out);
        assert!(
            stderr.contains("in use by another process")
                || stderr.contains("created by another process at the same moment"),
            "a clear refusal: {stderr}"
        );
        assert_refused_as(out, "data directory");
    }
    let events = checked_events(
        &["check", "--data", data.to_str().expect("utf-8")],
        "after both",
    );
    assert!(
        events >= 800,
        "the run that ran appended its 4 x 200 events: {events}"
    );
}

/// Runs `sequencer-host` as the unprivileged user `nobody` (with `setpriv`, as root), from a
/// copy of the binary in `dir` that `nobody` may execute; `None` where this process cannot
/// switch users (not root), which under CI is a failure.
fn run_as_nobody(dir: &Path, args: &[&str]) -> Option<Output> {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("sequencer-host");
    if !bin.exists() {
        std::fs::copy(common::BIN, &bin).expect("copy the binary");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&bin)
        .args(["--quiet", "--no-progress"])
        .args(args)
        .env_remove("SEQUENCER_DATA")
        .env_remove("SEQUENCER_COMPONENT")
        .output();
    match out {
        Ok(o) if !String::from_utf8_lossy(&o.stderr).contains("setpriv:") => Some(o),
        other => {
            assert!(
                std::env::var_os("CI").is_none(),
                "cannot run as another user: {other:?}"
            );
            eprintln!("skipped: cannot switch to user nobody (run as root to test permissions)");
            None
        }
    }
}

#[test]
fn a_data_directory_this_user_may_not_write_is_named_so_and_check_still_reads_it() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let data = dir.join("data");
    assert!(small_run(&data, 20).status.success());
    // The directory and its files stay root's: readable by everyone, writable by root only.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for f in std::fs::read_dir(&data).expect("list").flatten() {
        std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    let component = dir.join("sequencer.wasm");
    std::fs::copy(common::component_path(), &component).expect("copy the component");
    std::fs::set_permissions(&component, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let data_arg = data.to_str().expect("utf-8");
    let before = common::snapshot(&data);
    let Some(out) = run_as_nobody(
        dir,
        &[
            "run",
            "--data",
            data_arg,
            "--component",
            component.to_str().expect("utf-8"),
            "--partitions",
            "4",
            "--events",
            "10",
        ],
    ) else {
        return;
    };
    assert_refused_as(&out, "permission denied");
    let checked = run_as_nobody(dir, &["check", "--data", data_arg]).expect("ran before");
    assert!(
        checked.status.success(),
        "check reads what it may not write: {:?}",
        text(&checked)
    );
    assert!(common::snapshot(&data) == before, "nothing was written");
}

#[test]
fn a_redb_handle_poisoned_by_a_full_disk_keeps_refusing_and_a_new_handle_finds_every_acknowledged_event()
 {
    use sequencer::SeqValue;
    use sequencer_host::store::redb::RedbStorage;
    use sequencer_host::{EventBatch, Storage, StoreReader};
    let Some(fs) = Tmpfs::mount("2m") else {
        return;
    };
    let path = fs.path().join("store.redb");
    let store = RedbStorage::create(&path).expect("create");
    let payload = vec![b'.'; 64 << 10];
    let event = |offset: u64| EventBatch::single(offset, &[SeqValue::new(1, 1, offset)], &payload);
    let mut next = 1;
    let first_error = loop {
        match store.append_events(0, &event(next)) {
            Ok(()) => next += 1,
            Err(e) => break e.to_string(),
        }
        assert!(next < 1000, "a 2 MiB file system filled up");
    };
    assert!(next > 1, "some appends were acknowledged first");
    let failure = store.failure().expect("the handle names what poisoned it");
    assert!(
        failure.contains("No space left"),
        "{failure} ({first_error})"
    );
    // Room again: the poisoned handle still refuses, naming the first error, so a caller that
    // retried on it would loop; the run stops instead (see the tests above).
    fs.resize("64m");
    let again = store
        .append_events(0, &event(next))
        .expect_err("a poisoned handle takes no more writes");
    assert!(again.to_string().contains("No space left"), "{again}");
    drop(store);
    // A new handle: every acknowledged event is there, and it writes again.
    let store = RedbStorage::open(&path).expect("reopen");
    assert_eq!(store.plog_bounds(0).expect("bounds"), Some((1, next - 1)));
    store
        .append_events(0, &event(next))
        .expect("a new handle writes");
}
