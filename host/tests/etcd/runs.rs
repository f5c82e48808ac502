//! `sequencer-host run`, `check`, `inspect` and `archive` on the cluster: the main job and its
//! restart, the host killed during batched appends, a resume with another layout refused, and
//! the archive beside a live run.

use std::time::Duration;

use sequencer_host::StoreReader as _;

use crate::common::etcd_cluster::EtcdCluster;
use crate::common::{self, checked_events, component_path, run_host, text};
use crate::support::{check_passes, run_args, spawn_run, wait_exit, wait_for_events};

#[test]
fn the_main_job_runs_on_the_cluster_and_a_restart_continues_without_reusing_numbers() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = cluster.url();
    let component = component_path();
    let args = run_args(&url, &component, "4", "100");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let first = run_host(&args);
    let (stdout, stderr) = text(&first);
    assert!(first.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("an empty store"), "{stdout}");
    assert!(stdout.contains("etcd http://127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("ok: 400 PLog events"), "{stdout}");

    let second = run_host(&args);
    let (stdout, stderr) = text(&second);
    assert!(second.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("400 events: replayed"),
        "the restart actualized:\n{stdout}"
    );
    assert!(stdout.contains("ok: 800 PLog events"), "{stdout}");

    let checked = check_passes(&url);
    assert!(
        checked.contains("check passed: 4 partitions, 800 PLog events"),
        "{checked}"
    );
}

/// The kill test on etcd: the host, appending batches, is sent SIGKILL at random moments
/// (`SEQUENCER_ETCD_KILL_ROUNDS`, default 6; the sleeps are the point: a real process killed
/// at a random moment), restarted each time; `check` proves the PLog dense and no number
/// issued twice after every kill.
#[test]
fn sigkill_of_the_host_during_batched_appends_never_leaves_a_gap_or_a_number_issued_twice() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let rounds: u64 = std::env::var("SEQUENCER_ETCD_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let url = cluster.url();
    let mut seed = 0x9E37_79B9_u64;
    let mut events = 0;
    let mut grew = 0;
    for round in 1..=rounds {
        let log = cluster.dir.path().join(format!("kill-{round}.log"));
        let mut child = spawn_run(&url, "4", "10000000", &log);
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // 0.3 to 2.3 s: start-up, actualization, and batches in flight.
        let delay = Duration::from_millis(300 + seed % 2000);
        common::sigkill_after(&mut child, delay, round, Some(&log));
        let now = checked_events(
            &["check", "--store", &url],
            &format!("after kill {round} at {delay:?}"),
        );
        assert!(
            now >= events,
            "round {round}: the PLog shrank from {events} to {now}"
        );
        if now > events {
            grew += 1;
        }
        events = now;
    }
    assert!(
        grew >= rounds / 2,
        "only {grew} of {rounds} kills hit a running workload"
    );
    // A last run that finishes: it resumes, continues and checks on its own.
    let component = component_path();
    let args = run_args(&url, &component, "4", "100");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_host(&args);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "the final run failed:\n{stdout}{stderr}"
    );
    assert_eq!(
        checked_events(&["check", "--store", &url], "after the final run"),
        events + 400,
        "the final run appended 4 × 100 events"
    );
    eprintln!(
        "etcd kill test: {rounds} kills ({grew} during appends), {} events",
        events + 400
    );
}

#[test]
fn a_resume_with_another_partition_count_is_refused_on_etcd_and_inspect_reads_the_store() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = cluster.url();
    let component = component_path();
    let args = run_args(&url, &component, "2", "20");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let first = run_host(&args);
    assert!(first.status.success(), "{:?}", text(&first));
    let before = check_passes(&url);
    assert!(
        before.contains("check passed: 2 partitions, 40 PLog events"),
        "{before}"
    );

    let other = run_args(&url, &component, "4", "20");
    let other: Vec<&str> = other.iter().map(String::as_str).collect();
    let refused = run_host(&other);
    let (_, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("it was numbered with 2 partitions, not 4")
            && stderr.contains("resume it with --partitions 2, or use an empty etcd cluster"),
        "{stderr}"
    );
    assert_eq!(check_passes(&url), before, "nothing was written");

    let inspected = run_host(&["inspect", "--store", &url, "--partition", "1"]);
    let (stdout, stderr) = text(&inspected);
    assert!(inspected.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("numbering layout: 2 partitions") && stdout.contains("PLog tail"),
        "{stdout}"
    );
    let missing = run_host(&["inspect", "--store", &url, "--partition", "7"]);
    assert_eq!(missing.status.code(), Some(1), "{:?}", text(&missing));
}

#[test]
fn an_etcd_store_archives_and_trims_beside_a_live_run_compacts_and_still_resumes_and_checks() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = cluster.url();
    let component = component_path();
    let tmp = tempfile::tempdir().expect("temp dir");
    let adir = tmp.path().join("archive");
    let archive_arg = format!("objects:{}", adir.to_str().expect("utf-8"));
    let args = run_args(&url, &component, "2", "1500");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let first = run_host(&args);
    let (stdout, stderr) = text(&first);
    assert!(first.status.success(), "{stdout}{stderr}");

    let out = run_host(&[
        "archive",
        "--store",
        &url,
        "--archive",
        &archive_arg,
        "--bundle-events",
        "64",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("etcd history compacted up to revision"),
        "{stdout}"
    );
    let store = cluster.store(Duration::from_secs(10));
    let archive =
        sequencer_host::store::layers::archive::Archive::open(&adir).expect("the archive");
    for p in 0..2 {
        let (first, last) = store.plog_bounds(p).expect("bounds").expect("a PLog");
        let end = archive.end(p);
        assert!(
            end >= 64 && first > 1,
            "partition {p}: {first}..={last}, archived {end}"
        );
        // Packs straddling the archive's end stay whole; nothing older is left.
        assert!(first <= end + 1, "partition {p}: a gap {end}..{first}");
        assert!(end < store.stored_next_offset(p).expect("stored"));
    }
    assert!(check_passes(&url).contains("3000 PLog events"));

    // Archive every 0.3 s beside a live run, which then resumes and checks whole.
    let log = tmp.path().join("live.log");
    let mut live = spawn_run(&url, "2", "4000", &log);
    // Once the live run has appended past what was archived, every pass has work.
    wait_for_events(&store, 1500 + 700, Duration::from_secs(60));
    let out = run_host(&[
        "archive", "--store", &url, "--every", "0.3", "--rounds", "4",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "archive beside a live run: {stdout}{stderr}"
    );
    let trimmed: u64 = (stdout.lines())
        .filter_map(|l| {
            l.split("trimmed ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum();
    assert!(
        trimmed > 0,
        "the passes beside the live run trimmed nothing:\n{stdout}"
    );
    let status = wait_exit(&mut live, Duration::from_secs(120));
    let run_log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "the live run failed:\n{run_log}");
    let checked = check_passes(&url);
    assert!(checked.contains("11000 PLog events"), "{checked}");
    assert!(checked.contains("with its archive"), "{checked}");
}
