//! The numbering layout of a data directory (partition count, workspace-to-partition rule,
//! sequences and initial values): recorded by the first run, a resume that would change it is
//! refused before anything is written, and `check` proves numbers across partitions, so a
//! workspace moved to another partition (its numbers issued a second time) cannot pass.

#![cfg(feature = "cli")]

mod common;

use std::path::Path;
use std::process::Output;

use common::{run_host, run_on, small_run, snapshot, text};

/// `run` on `data` with `partitions` over 50 workspaces, `events` per partition.
fn run_partitions(data: &Path, partitions: u32, events: u64) -> Output {
    let (partitions, events) = (partitions.to_string(), events.to_string());
    run_on(
        data,
        &[
            "--partitions",
            &partitions,
            "--workspaces",
            "50",
            "--events",
            &events,
        ],
    )
}

/// How many PLog events a passing `check` of `data` proved.
fn checked_events(data: &Path) -> u64 {
    common::checked_events(&["check", "--data", data.to_str().expect("utf-8")], "")
}

fn check(data: &Path) -> Output {
    run_host(&["check", "--data", data.to_str().expect("utf-8")])
}

/// Asserts a failed command with one line on stderr holding every one of `needles`.
fn assert_refused(out: &Output, needles: &[&str]) {
    let (stdout, stderr) = text(out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line on stderr:\n{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in {stderr:?}");
    }
}

/// A data directory made by a run over 4 partitions.
fn made_with_four_partitions() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let out = small_run(&data, 100);
    assert!(out.status.success(), "{:?}", text(&out));
    (tmp, data)
}

#[test]
fn the_first_run_records_the_layout_it_numbered_by() {
    let (_tmp, data) = made_with_four_partitions();
    let layout = std::fs::read_to_string(data.join("LAYOUT")).expect("LAYOUT recorded");
    assert!(layout.contains("partitions 4\n"), "{layout}");
    assert!(
        layout.contains("workspace-to-partition (workspace - 1) mod partitions\n"),
        "{layout}"
    );
    assert!(layout.contains("sequence 2 rec-id 1000000\n"), "{layout}");
}

#[test]
fn a_resume_with_another_partition_count_is_refused_and_writes_nothing() {
    let (tmp, data) = made_with_four_partitions();
    let before = snapshot(tmp.path());
    for partitions in [3, 5] {
        let out = run_partitions(&data, partitions, 10);
        assert_refused(
            &out,
            &[
                "numbered with 4 partitions",
                &format!("not {partitions}"),
                "--partitions 4",
                "--data NEW_DIR",
            ],
        );
        assert!(snapshot(tmp.path()) == before, "nothing written");
    }
    let out = run_partitions(&data, 4, 10);
    assert!(
        out.status.success(),
        "the same count resumes: {:?}",
        text(&out)
    );
}

#[test]
fn a_directory_without_a_layout_that_holds_a_partition_the_run_would_not_serve_is_refused() {
    let (_tmp, data) = made_with_four_partitions();
    std::fs::remove_file(data.join("LAYOUT")).expect("remove LAYOUT");
    let events = checked_events(&data);
    let out = run_partitions(&data, 3, 10);
    assert_refused(
        &out,
        &["holds partition 3's PLog", "more than 3 partitions"],
    );
    // The store had to be opened to see its partitions (redb's open rewrites its header), so
    // this refusal is proved by what it kept: no layout recorded, not one event more.
    assert!(!data.join("LAYOUT").exists(), "no layout recorded");
    assert_eq!(checked_events(&data), events, "no event written");
}

#[test]
fn check_finds_numbers_issued_twice_when_a_workspace_moved_to_another_partition() {
    // A directory made before layouts were recorded, resumed with more partitions: the one
    // change a run cannot see from the store. Workspaces move and their numbers start over.
    let (_tmp, data) = made_with_four_partitions();
    std::fs::remove_file(data.join("LAYOUT")).expect("remove LAYOUT");
    let out = run_partitions(&data, 5, 100);
    assert_refused(&out, &["which the recorded layout puts in partition"]);

    // With the layout the run recorded (5 partitions): the old partitions' workspaces are
    // in the wrong place.
    assert_refused(
        &check(&data),
        &["which the recorded layout puts in partition"],
    );
    // Without any layout: the same numbers stand in two partitions.
    std::fs::remove_file(data.join("LAYOUT")).expect("remove LAYOUT");
    assert_refused(
        &check(&data),
        &["has numbers in partitions", "issued twice"],
    );
}

#[test]
fn a_damaged_layout_is_refused_as_corrupt_naming_the_file_and_line() {
    let (tmp, data) = made_with_four_partitions();
    std::fs::write(data.join("LAYOUT"), "sequencer-layout 1\npartitions many\n").expect("write");
    let before = snapshot(tmp.path());
    let out = run_partitions(&data, 4, 10);
    assert_refused(&out, &["LAYOUT", "corrupt data directory", "line 2"]);
    assert!(snapshot(tmp.path()) == before, "nothing written");
}
