//! Faults an operator meets, on the real `sequencer-host` binary: a disk that fills up stops
//! the run with one line and a non-zero exit instead of retrying without end, a resume on a
//! disk that is still full does the same, and once there is room again `check` proves that
//! nothing acknowledged was lost and no number was issued twice.
//!
//! The full disk is a small tmpfs mounted for the test (this needs root, as CI and the
//! project's machines have; elsewhere the test says why it did not run, and fails under CI).

#![cfg(feature = "cli")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{checked_events, run_on, text};

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
        let o = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(self.path())
            .output()
            .expect("run mount");
        assert!(o.status.success(), "remount: {:?}", text(&o));
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
