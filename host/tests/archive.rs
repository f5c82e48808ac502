//! Archive and trim on the embedded store (redb): the real `sequencer-host` binary copies the
//! PLog below the stored offsets into bundles, trims the store, and `run`, `check` and
//! `inspect` go on reading old offsets from the archive. SIGKILLs of `archive` at random
//! moments, a corrupted or missing bundle, an archive that does not line up, and archiving
//! during a live run (`run --archive-every`).
//!
//! `SEQUENCER_ARCHIVE_KILL_ROUNDS` (default 6) sets the number of kills: odd rounds kill at a
//! random moment, even ones as soon as a new bundle appears (between a copy and its trim).

#![cfg(feature = "cli")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{checked_events, component_path, host, run_host, run_on, snapshot, text};
use sequencer::testkit::Rng;
use sequencer_host::StoreReader;
use sequencer_host::store::layers::archive::Archive;
use sequencer_host::store::redb::DataDir;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A completed run of `events` per partition over `partitions` partitions.
fn run_events(data: &Path, partitions: u32, events: u64, extra: &[&str]) {
    let (p, e) = (partitions.to_string(), events.to_string());
    let mut options = vec![
        "--partitions",
        &p,
        "--workspaces",
        "60",
        "--events",
        &e,
        "--fail-rate",
        "0.05",
    ];
    options.extend_from_slice(extra);
    let out = run_on(data, &options);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "run failed:\n{stdout}{stderr}");
}

/// `archive` on `data` into `archive` with bundles of `bundle` events; its output.
fn archive(data: &Path, archive: &Path, bundle: u64) -> std::process::Output {
    run_host(&[
        "archive",
        "--data",
        s(data),
        "--archive",
        &format!("objects:{}", s(archive)),
        "--bundle-events",
        &bundle.to_string(),
    ])
}

fn archive_ok(data: &Path, adir: &Path, bundle: u64) -> String {
    let out = archive(data, adir, bundle);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "archive failed:\n{stdout}{stderr}");
    stdout
}

/// `check` on `data` (asserting it passed and left `data`'s bytes unchanged); the events
/// it proved.
fn check(data: &Path, after: &str) -> u64 {
    checked_events(&["check", "--data", s(data)], after)
}

/// `check` that must fail; its stderr.
fn check_fails(data: &Path) -> String {
    let out = run_host(&["check", "--data", s(data)]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "check passed:\n{stdout}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    stderr
}

/// Per partition: (the hot store's first offset, the archive's last, the stored next offset).
fn split(data: &Path, adir: &Path) -> Vec<(u64, u64, u64)> {
    let hot = DataDir::open_read_only(data).expect("read the store");
    let a = Archive::open(adir).expect("open the archive");
    let parts = hot.partitions().expect("partitions");
    parts
        .iter()
        .map(|&p| {
            let (first, _) = hot.plog_bounds(p).expect("bounds").expect("a PLog");
            // No event below the first one is left in the store.
            let oldest = hot.events(p, 1, 1).expect("read");
            assert_eq!(oldest[0].offset, first);
            (first, a.end(p), hot.stored_next_offset(p).expect("stored"))
        })
        .collect()
}

/// How many bundles the archive holds, over every partition (0 before it exists).
fn bundle_count(adir: &Path) -> usize {
    let Ok(parts) = std::fs::read_dir(adir.join("bundles")) else {
        return 0;
    };
    parts
        .flatten()
        .filter_map(|p| std::fs::read_dir(p.path()).ok())
        .flat_map(|d| d.flatten())
        .filter(|e| !e.file_name().to_string_lossy().contains('#'))
        .count()
}

/// The bundles of partition 0, in order.
fn bundles(adir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(adir.join("bundles/00000"))
        .expect("bundles of partition 0")
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.to_string_lossy().contains('#'))
        .collect();
    v.sort();
    v
}

#[test]
fn an_archived_and_trimmed_store_resumes_without_a_gap_and_checks_whole_from_the_archive() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (data, adir) = (tmp.path().join("data"), tmp.path().join("archive"));
    run_events(&data, 3, 1500, &[]);
    let stdout = archive_ok(&data, &adir, 64);
    assert!(stdout.contains("archived"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(data.join("ARCHIVE")).expect("recorded"),
        format!("sequencer-archive-location 1\nobjects:{}\n", adir.display())
    );
    for (p, (first, end, stored)) in split(&data, &adir).into_iter().enumerate() {
        assert!(end >= 64, "partition {p}: archived up to {end}");
        assert_eq!(
            first,
            end + 1,
            "partition {p}: trimmed exactly below the archive's end"
        );
        assert!(
            end < stored,
            "partition {p}: never trimmed at or past the stored offset"
        );
        assert_eq!(end % 64, 0, "whole bundles");
    }
    assert_eq!(check(&data, "after archiving"), 3 * 1500);
    let out = run_host(&["inspect", "--data", s(&data), "--partition", "1"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("with its archive"), "{stdout}");
    assert!(stdout.contains("archive: "), "{stdout}");
    assert!(stdout.contains("1..=1500"), "{stdout}");
    // Archived events are shown from the archive.
    let out = run_host(&["inspect", "--data", s(&data), "--from", "2", "--tail", "2"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("PLog from offset 2 (2 of 1500 events)"),
        "{stdout}"
    );
    assert!(stdout.contains("\"offset\":3,"), "{stdout}");

    // Resume: offsets go on densely, no number twice; a second archive goes further.
    run_events(&data, 3, 700, &[]);
    assert_eq!(check(&data, "after resuming"), 3 * 2200);
    let before = split(&data, &adir);
    archive_ok(&data, &adir, 64);
    let after = split(&data, &adir);
    assert!(
        after.iter().zip(&before).all(|(a, b)| a.1 > b.1),
        "{before:?} -> {after:?}"
    );
    // Nothing more to do: a pass again changes nothing.
    let stdout = archive_ok(&data, &adir, 64);
    assert!(stdout.contains("archived 0 events"), "{stdout}");
    assert_eq!(split(&data, &adir), after);
    assert_eq!(check(&data, "after archiving again"), 3 * 2200);
}

#[test]
fn a_corrupt_or_missing_bundle_is_named_and_a_run_on_it_is_refused_writing_nothing() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (data, adir) = (tmp.path().join("data"), tmp.path().join("archive"));
    run_events(&data, 2, 800, &[]);
    archive_ok(&data, &adir, 32);
    let names = bundles(&adir);
    assert!(names.len() >= 3, "{names:?}");

    // A flipped byte in an event of a bundle: that event fails its checksum when check reads
    // it.
    let victim = &names[1];
    let good = std::fs::read(victim).expect("read bundle");
    let mut bad = good.clone();
    let at = bad.len() - 5;
    bad[at] ^= 0x40;
    std::fs::write(victim, &bad).expect("corrupt");
    let err = check_fails(&data);
    let name = victim.file_name().and_then(|n| n.to_str()).expect("name");
    let last: u64 = name
        .rsplit('-')
        .next()
        .and_then(|l| l.parse().ok())
        .expect("last");
    assert!(
        err.contains("fails its checksum") && err.contains(&format!("offset {last}")),
        "{err}"
    );
    // In its hash table instead: the bundle is corrupt, named.
    let mut bad = good.clone();
    bad[24] ^= 0x40;
    std::fs::write(victim, &bad).expect("corrupt");
    let err = check_fails(&data);
    assert!(err.contains("is corrupt") && err.contains(name), "{err}");
    std::fs::write(victim, &good).expect("restore");

    // The last bundle missing: the archive ends before the store starts.
    let last = names.last().expect("a bundle").clone();
    let kept = std::fs::read(&last).expect("read");
    std::fs::remove_file(&last).expect("remove");
    let err = check_fails(&data);
    let name = last.file_name().and_then(|n| n.to_str()).expect("name");
    assert!(
        err.contains("does not line up") && err.contains(name),
        "{err}"
    );
    let before = snapshot(&data);
    let out = run_on(
        &data,
        &["--partitions", "2", "--workspaces", "60", "--events", "10"],
    );
    let (_, stderr) = text(&out);
    assert!(!out.status.success() && stderr.contains(name), "{stderr}");
    assert!(snapshot(&data) == before, "a refused run wrote nothing");
    std::fs::write(&last, kept).expect("restore");

    // A bundle missing in the middle: a hole, named.
    let first = std::fs::read(&names[0]).expect("read");
    std::fs::remove_file(&names[0]).expect("remove the first bundle");
    let err = check_fails(&data);
    assert!(err.contains("hole at offset 1"), "{err}");
    std::fs::write(&names[0], first).expect("restore");
    assert_eq!(check(&data, "with every bundle back"), 2 * 800);

    // The whole archive gone: refused in one line, by check and by run, nothing written.
    std::fs::rename(&adir, tmp.path().join("moved")).expect("move the archive away");
    let err = check_fails(&data);
    assert!(err.contains("is missing"), "{err}");
    let before = snapshot(&data);
    let out = run_on(
        &data,
        &["--partitions", "2", "--workspaces", "60", "--events", "10"],
    );
    let (_, stderr) = text(&out);
    assert!(
        !out.status.success() && stderr.contains("is missing"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(snapshot(&data) == before, "a refused run wrote nothing");

    // Another archive than the recorded one is refused.
    let out = archive(&data, &tmp.path().join("other"), 32);
    let (_, stderr) = text(&out);
    assert!(
        !out.status.success() && stderr.contains("recorded"),
        "{stderr}"
    );
}

#[test]
fn an_archive_directory_a_killed_creation_left_is_made_by_the_next_archive() {
    // What `archive` killed while making a new archive leaves: its directory alone, or with the
    // marker written aside (torn, here) and not yet renamed into place.
    for leftover in [None, Some("sequencer-arch")] {
        let tmp = tempfile::tempdir().expect("temp dir");
        let (data, adir) = (tmp.path().join("data"), tmp.path().join("archive"));
        run_events(&data, 2, 100, &[]);
        std::fs::create_dir(&adir).expect("the archive's directory");
        if let Some(torn) = leftover {
            std::fs::write(adir.join("FORMAT.tmp"), torn).expect("a torn marker");
        }
        archive_ok(&data, &adir, 8);
        assert!(bundle_count(&adir) > 0, "{leftover:?}: nothing archived");
        for (first, end, _) in split(&data, &adir) {
            assert_eq!(
                first,
                end + 1,
                "{leftover:?}: trimmed up to the archive's end"
            );
        }
        assert_eq!(check(&data, "after the archive"), 2 * 100);
    }
    // A directory that holds anything else and no marker is no archive: refused, untouched.
    let tmp = tempfile::tempdir().expect("temp dir");
    let (data, adir) = (tmp.path().join("data"), tmp.path().join("archive"));
    run_events(&data, 2, 100, &[]);
    std::fs::create_dir(&adir).expect("the directory");
    std::fs::write(adir.join("notes.txt"), "mine").expect("a file");
    let before = snapshot(&data);
    let out = archive(&data, &adir, 8);
    let (_, stderr) = text(&out);
    assert!(
        !out.status.success() && stderr.contains("not a sequencer archive"),
        "{stderr}"
    );
    assert!(snapshot(&data) == before, "a refused archive wrote nothing");
    let left: Vec<_> = std::fs::read_dir(&adir).expect("list").flatten().collect();
    assert_eq!(left.len(), 1, "only the file that was there");
}

#[test]
fn sigkill_of_archive_at_random_moments_leaves_a_state_that_archive_run_and_check_finish() {
    let rounds: u64 = std::env::var("SEQUENCER_ARCHIVE_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let mut rng = Rng::new(0xA2C4_1DE5);
    let tmp = tempfile::tempdir().expect("temp dir");
    let (data, adir) = (tmp.path().join("data"), tmp.path().join("archive"));
    let mut total = 0;
    let mut killed_mid_pass = 0;
    // Kills that left events in both the archive and the store (between a copy and its trim).
    let mut left_both = 0;
    // Extra rounds (at most 6) while no kill has landed between a copy and its trim yet: on a
    // loaded machine this test's polling may wake only after a whole pass.
    let mut round = 0;
    while round < rounds || (left_both == 0 && round < rounds + 6) {
        round += 1;
        // More events each round, archived in small bundles so that a pass takes a while.
        run_events(&data, 2, 1500, &[]);
        total += 2 * 1500;
        let bundles_before = bundle_count(&adir);
        let started = Instant::now();
        // The pass's own words, kept so that a pass that fails says why.
        let err_path = tmp.path().join(format!("archive-{round}.stderr"));
        let err_file = std::fs::File::create(&err_path).expect("create the pass's stderr file");
        let mut child = host()
            .args(["archive", "--data", s(&data), "--bundle-events", "8"])
            .arg("--archive")
            .arg(format!("objects:{}", s(&adir)))
            .stdout(Stdio::null())
            .stderr(err_file)
            .spawn()
            .expect("start archive");
        if round % 2 == 1 {
            std::thread::sleep(Duration::from_millis(20 + rng.below(400)));
        } else {
            // The kill lands after a copy; before its trim too, unless this polling wakes only
            // after the pass (a loaded machine).
            let deadline = started + Duration::from_secs(60);
            while bundle_count(&adir) == bundles_before
                && child.try_wait().expect("poll").is_none()
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        match child.try_wait().expect("poll") {
            None => killed_mid_pass += 1,
            // A pass that ended before its kill must have succeeded.
            Some(status) => assert!(
                status.success(),
                "round {round}: archive: {status}: {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            ),
        }
        child.kill().expect("SIGKILL archive");
        let _ = child.wait();
        let after = format!("kill {round} after {:?}", started.elapsed());
        assert_eq!(check(&data, &after), total, "{after}");
        if adir.join("FORMAT").exists() && data.join("ARCHIVE").exists() {
            left_both += u64::from(
                split(&data, &adir)
                    .iter()
                    .any(|(first, end, _)| end >= first),
            );
        }
    }
    assert!(
        left_both >= 1,
        "no kill landed between a copy and its trim in {round} rounds"
    );
    assert!(
        killed_mid_pass >= rounds / 2,
        "only {killed_mid_pass} kills landed in a pass"
    );
    // The next archive finishes what the killed ones began; the run resumes; check passes.
    archive_ok(&data, &adir, 8);
    for (first, end, _) in split(&data, &adir) {
        assert_eq!(first, end + 1);
    }
    run_events(&data, 2, 300, &[]);
    total += 600;
    assert_eq!(check(&data, "after the last archive and a run"), total);
}

#[test]
fn archive_every_during_a_live_run_trims_as_it_goes_and_a_second_process_is_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (data, adir) = (tmp.path().join("data"), tmp.path().join("archive"));
    let log = tmp.path().join("run.log");
    let mut child = host()
        .args(["run", "--data", s(&data)])
        .arg("--component")
        .arg(component_path())
        .args([
            "--partitions",
            "2",
            "--workspaces",
            "60",
            "--events",
            "60000",
        ])
        .args(["--archive", &format!("objects:{}", s(&adir))])
        .args(["--archive-every", "0.2", "--archive-bundle-events", "128"])
        .stdout(std::fs::File::create(&log).expect("log"))
        .stderr(Stdio::piped())
        .spawn()
        .expect("start run");
    // While the run holds the store, another archive process is refused.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !data.join("ARCHIVE").exists() {
        assert!(
            Instant::now() < deadline,
            "the run never recorded its archive"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = archive(&data, &adir, 128);
    let (_, stderr) = text(&out);
    if child.try_wait().expect("poll").is_none() {
        assert!(
            !out.status.success() && stderr.contains("in use by another process"),
            "{stderr}"
        );
    }
    let status = child.wait().expect("wait for the run");
    let summary = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "the run failed:\n{summary}");
    let line = summary
        .lines()
        .find(|l| l.starts_with("archive"))
        .unwrap_or_else(|| panic!("no archive line in\n{summary}"));
    let trimmed: u64 = line
        .rsplit("trimmed ")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(trimmed > 0, "{line}");
    for (first, end, stored) in split(&data, &adir) {
        assert!(
            first > 1 && first <= end + 1 && end < stored,
            "{first} {end} {stored}"
        );
    }
    assert_eq!(check(&data, "after a run that archived"), 2 * 60_000);
}

#[test]
fn sigkill_of_a_run_that_archives_as_it_goes_leaves_a_store_that_resumes_and_checks() {
    let mut rng = Rng::new(0x0A2C_41FE);
    let tmp = tempfile::tempdir().expect("temp dir");
    let (data, adir) = (tmp.path().join("data"), tmp.path().join("archive"));
    let archive_arg = format!("objects:{}", s(&adir));
    let options = [
        "--archive",
        &archive_arg,
        "--archive-every",
        "0.1",
        "--archive-bundle-events",
        "16",
    ];
    run_events(&data, 2, 500, &options);
    let at_first = split(&data, &adir);
    let mut trimmed_before_kill = false;
    for round in 1..=3 {
        let mut child = host()
            .args(["run", "--data", s(&data)])
            .arg("--component")
            .arg(component_path())
            .args([
                "--partitions",
                "2",
                "--workspaces",
                "60",
                "--events",
                "10000000",
            ])
            .args(options)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start run");
        // After the component's compilation (over a second in a debug build under load).
        let delay = Duration::from_millis(1_500 + rng.below(1_500));
        common::sigkill_after(&mut child, delay, round, None);
        check(&data, &format!("after kill {round}"));
        let now = split(&data, &adir);
        trimmed_before_kill |= now.iter().zip(&at_first).any(|(a, b)| a.0 > b.0);
    }
    assert!(
        trimmed_before_kill,
        "no pass trimmed during the killed runs"
    );
    run_events(&data, 2, 200, &options);
    check(&data, "after a run that completed");
}
