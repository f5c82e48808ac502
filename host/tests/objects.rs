//! The PLog on object storage (local file system): the fence between two writers, the merger
//! and what it leaves after a crash, holes and corrupted objects reported with their names,
//! and the real `sequencer-host` on `--store objects`: run, resume, SIGKILL at random moments
//! (during appends and merges), `check` and `inspect`.

#![cfg(feature = "cli")]

mod common;

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use sequencer::SeqValue;
use sequencer::testkit::Rng;
use sequencer_host::store::codec::{EventError, decode_event, encode_event};
use sequencer_host::store::objects::{
    Access, MERGE_PAUSE_ENV, ObjectPlog, WRITE_FORMAT_ENV, bundle_object, event_object,
};
use sequencer_host::{AppendError, EventBatch};

use common::{checked_events, component_path, host, run_host, text};

fn batch(first: u64, n: u64, tag: u8) -> EventBatch {
    let mut b = EventBatch::new(first);
    for o in first..first + n {
        b.push(&[SeqValue::new(1, 1, o)], &[tag; 16]);
    }
    b
}

fn open(root: &Path, bundle: u64) -> ObjectPlog {
    ObjectPlog::open_local(root, bundle, Access::Write).expect("open the object PLog")
}

fn file(root: &Path, name: &str) -> std::path::PathBuf {
    root.join(name)
}

#[test]
fn two_writers_racing_for_one_name_one_wins_and_the_plog_holds_its_objects_events() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    let a = open(root, 1_000);
    let b = open(root, 1_000);
    a.append(0, &batch(1, 5, 0)).expect("first events");
    let mut next = 6;
    for round in 0..40u8 {
        let barrier = Arc::new(Barrier::new(2));
        let results: Vec<Result<(), AppendError>> = std::thread::scope(|s| {
            let hs: Vec<_> = [(&a, 1u8), (&b, 2u8)]
                .into_iter()
                .map(|(w, tag)| {
                    let barrier = barrier.clone();
                    s.spawn(move || {
                        let mine = batch(next, 3, tag.wrapping_add(round * 2));
                        barrier.wait();
                        w.append(0, &mine)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("writer")).collect()
        });
        let won: Vec<usize> = (0..2).filter(|&i| results[i].is_ok()).collect();
        // Each writer creates one object of three events, named by their first offset: of
        // two creates of one name exactly one succeeds.
        assert_eq!(won.len(), 1, "round {round}: {results:?}");
        assert!(
            file(root, &event_object(0, next)).is_file(),
            "round {round}"
        );
        assert!(
            !file(root, &event_object(0, next + 1)).exists(),
            "round {round}"
        );
        let loser = &results[1 - won[0]];
        assert!(
            matches!(loser, Err(AppendError::WrongOffset { offered, .. }) if *offered == next),
            "round {round}: {loser:?}"
        );
        let tag = (won[0] as u8 + 1).wrapping_add(round * 2);
        let events = a.read(0, next, 3).expect("read back");
        assert_eq!(events.len(), 3);
        for (o, bytes) in events {
            assert_eq!(
                bytes,
                encode_event(o, &[SeqValue::new(1, 1, o)], &[tag; 16])
            );
        }
        next += 3;
    }
    // A fresh handle finds the chain whole: no hole, no broken link, no second object.
    let c = ObjectPlog::open_local(root, 1_000, Access::ReadOnly).expect("reopen");
    assert_eq!(c.bounds(0).0, next);
}

#[test]
fn a_stale_writer_cannot_recreate_an_offset_the_merger_bundled_and_deleted() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    let a = open(root, 4);
    a.append(0, &batch(1, 2, 1)).expect("append");
    let stale = open(root, 4); // knows offsets 1..=2
    a.append(0, &batch(3, 6, 1)).expect("append");
    a.merge_now().expect("merge"); // the merger thread may have been first
    assert_eq!(a.bounds(0), (9, 8));
    assert!(
        !file(root, &event_object(0, 3)).exists(),
        "merged and deleted"
    );
    // The stale writer's create at 3 succeeds on the file system (the object is gone) but the
    // bundle holding 3 tells it the offset was taken: refused, and its object taken back.
    let refused = stale.append(0, &batch(3, 1, 9));
    assert!(
        matches!(
            refused,
            Err(AppendError::WrongOffset {
                offered: 3,
                expected: 9
            })
        ),
        "{refused:?}"
    );
    assert!(!file(root, &event_object(0, 3)).exists());
    let events = a.read(0, 1, 100).expect("read");
    assert_eq!(events.len(), 8);
    assert_eq!(
        events[2].1,
        encode_event(3, &[SeqValue::new(1, 1, 3)], &[1; 16])
    );
}

#[test]
fn reads_go_through_bundles_and_event_objects_in_order() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    let a = open(root, 4);
    a.append(0, &batch(1, 10, 3)).expect("append");
    // Two complete ranges of 4 are owed, fewer once the merger thread has begun.
    assert!(a.merge_backlog() <= 2);
    a.merge_now().expect("merge"); // the merger thread may have been first
    assert_eq!(a.bounds(0), (11, 8));
    assert_eq!(a.merge_backlog(), 0, "nothing owed once merged");
    assert!(file(root, &bundle_object(0, 1, 4)).is_file());
    assert!(file(root, &bundle_object(0, 5, 8)).is_file());
    assert!(file(root, &event_object(0, 9)).is_file());
    let all = a.read(0, 1, 100).expect("read");
    assert_eq!(
        all.iter().map(|e| e.0).collect::<Vec<_>>(),
        (1..=10).collect::<Vec<_>>()
    );
    let some = a.read(0, 3, 4).expect("read");
    assert_eq!(
        some.iter().map(|e| e.0).collect::<Vec<_>>(),
        vec![3, 4, 5, 6]
    );
    // Reopened: bundles until the first missing one, then the event objects.
    let b = open(root, 4);
    assert_eq!(b.bounds(0), (11, 8));
    b.append(0, &batch(11, 2, 3))
        .expect("append after reopening");
    assert!(b.merge_backlog() <= 1);
    b.merge_now().expect("merge");
    assert_eq!(b.merge_backlog(), 0);
    assert_eq!(b.bounds(0), (13, 12));
    assert_eq!(b.read(0, 1, 100).expect("read").len(), 12);
}

#[test]
fn leftovers_of_an_interrupted_merge_and_of_a_stale_writer_are_removed_at_open() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    // Written with bundles too large to merge (objects 1, 2, 3..=4, 5..=6: none crosses a
    // multiple of 4), so that object 2 can be kept aside, then merged into bundles of 4.
    let a = open(root, 1_000);
    for (first, n) in [(1, 1), (2, 1), (3, 2), (5, 2)] {
        a.append(0, &batch(first, n, 5)).expect("append");
    }
    let two = std::fs::read(file(root, &event_object(0, 2))).expect("object 2");
    drop(a);
    let a = open(root, 4);
    a.merge_now().expect("merge");
    assert_eq!(a.bounds(0), (7, 4));
    drop(a);
    // A merge killed after writing its bundle and before deleting object 2.
    std::fs::write(file(root, &event_object(0, 2)), &two).expect("put back");
    let reader = ObjectPlog::open_local(root, 4, Access::ReadOnly).expect("read-only open");
    assert_eq!(reader.bounds(0), (7, 4));
    assert!(
        file(root, &event_object(0, 2)).exists(),
        "a reader changes nothing"
    );
    let b = open(root, 4);
    assert_eq!(
        b.stats()
            .leftovers_removed
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert!(!file(root, &event_object(0, 2)).exists());
    drop(b);
    let other = ObjectPlog::open_local(tmp.path().join("x").as_path(), 4, Access::Write);
    assert!(other.is_err(), "a missing root is refused");
    // An object for a bundled offset that differs from the bundle's event: a stale writer
    // re-created the name after the merge deleted it and stopped before it saw the bundle (its
    // append was never acknowledged). A reader ignores it, a writer removes it; the PLog keeps
    // the bundle's event.
    let c = tempfile::tempdir().expect("temp dir");
    let w = open(c.path(), 4);
    w.append(0, &batch(1, 1, 6)).expect("append");
    w.append(0, &batch(2, 1, 6)).expect("append");
    let foreign = std::fs::read(file(c.path(), &event_object(0, 2))).expect("object");
    drop(w);
    std::fs::write(file(root, &event_object(0, 2)), foreign).expect("plant");
    let reader = ObjectPlog::open_local(root, 4, Access::ReadOnly).expect("a reader opens");
    assert_eq!(reader.bounds(0), (7, 4));
    assert!(
        file(root, &event_object(0, 2)).exists(),
        "a reader changes nothing"
    );
    let d = open(root, 4);
    assert_eq!(
        d.stats()
            .leftovers_removed
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert!(!file(root, &event_object(0, 2)).exists());
    assert_eq!(
        d.read(0, 2, 1).expect("read")[0].1,
        encode_event(2, &[SeqValue::new(1, 1, 2)], &[5; 16]),
        "the bundle's event"
    );
}

#[test]
fn a_hole_a_broken_link_and_a_corrupted_object_are_reported_with_their_names() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    // Objects 1..=2, 3..=4, 5..=6.
    let a = open(root, 100);
    for first in [1, 3, 5] {
        a.append(0, &batch(first, 2, 7)).expect("append");
    }
    drop(a);
    let three = file(root, &event_object(0, 3));
    let saved = std::fs::read(&three).expect("object 3");
    std::fs::remove_file(&three).expect("remove");
    let e = ObjectPlog::open_local(root, 100, Access::ReadOnly)
        .err()
        .expect("a hole");
    assert!(
        e.0.contains("hole at offset 3") && e.0.contains(&event_object(0, 5)),
        "{e}"
    );
    // An object of another chain at offset 3: its link to offset 2 is broken.
    let other = tempfile::tempdir().expect("temp dir");
    let w = open(other.path(), 100);
    w.append(0, &batch(1, 2, 8)).expect("append");
    w.append(0, &batch(3, 2, 8)).expect("append");
    drop(w);
    std::fs::copy(file(other.path(), &event_object(0, 3)), &three).expect("plant");
    let e = ObjectPlog::open_local(root, 100, Access::ReadOnly)
        .err()
        .expect("a broken link");
    assert!(e.0.contains("broken link at offset 3"), "{e}");
    // A flipped byte in the object's hash table (its first event's hash): corrupt.
    let mut bad = saved.clone();
    let table = 25 + usize::from(saved[24]);
    bad[table] ^= 0x40;
    std::fs::write(&three, bad).expect("corrupt");
    let e = ObjectPlog::open_local(root, 100, Access::ReadOnly)
        .err()
        .expect("corrupt");
    assert!(
        e.0.contains(&event_object(0, 3)) && e.0.contains("corrupt"),
        "{e}"
    );
    // In an event (the payload of the object's last one, offset 4): its links hold, the
    // event fails its checksum. A reader goes on (for `check` to name every such event); a
    // writer refuses before it appends anything.
    let mut bad = saved;
    let n = bad.len();
    bad[n - 1] ^= 0x40;
    std::fs::write(&three, bad).expect("corrupt");
    let r = ObjectPlog::open_local(root, 100, Access::ReadOnly).expect("links hold");
    let events = r.read(0, 1, 10).expect("read");
    assert_eq!(events.len(), 6);
    assert_eq!(
        decode_event(4, &events[3].1).err(),
        Some(EventError::Checksum(4))
    );
    assert!(decode_event(3, &events[2].1).is_ok());
    drop(r);
    let e = ObjectPlog::open_local(root, 100, Access::Write)
        .err()
        .expect("damaged");
    assert!(
        e.0.contains("partition 0: event at offset 4 fails its checksum")
            && e.0.contains(&event_object(0, 3)),
        "{e}"
    );
}

// ---- the real binary ----

fn run_objects(root: &Path, events: u64, bundle: u64) -> std::process::Output {
    run_objects_with(root, events, bundle, &[], &[])
}

/// [`run_objects`] with more arguments and environment variables.
fn run_objects_with(
    root: &Path, events: u64, bundle: u64, args: &[&str], env: &[(&str, &str)],
) -> std::process::Output {
    let component = component_path();
    let mut cmd = host();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(["run", "--store"])
        .arg(format!("objects:{}", root.display()))
        .arg("--component")
        .arg(&component)
        .args([
            "--partitions",
            "4",
            "--workspaces",
            "50",
            "--fail-rate",
            "0.05",
        ])
        .args(["--events", &events.to_string()])
        .args(["--bundle-events", &bundle.to_string()])
        .args(args)
        .output()
        .expect("start sequencer-host")
}

/// `check --store objects --data ROOT` (which also proves the store's bytes unchanged).
fn check_objects(root: &Path, after: &str) -> u64 {
    let root = root.to_str().expect("utf-8 path");
    checked_events(&["check", "--store", "objects", "--data", root], after)
}

#[test]
fn run_resume_check_and_inspect_on_an_object_store() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("objects");
    let out = run_objects(&root, 300, 64);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("dense offsets, no number issued twice"),
        "{stdout}"
    );
    assert!(stdout.contains("bundles written"), "{stdout}");
    assert_eq!(check_objects(&root, "after the first run"), 1_200);
    // The merger runs beside the workload, and the run finishes its merge before the
    // check: every complete range of 64 is a bundle, the rest (257..=300) in event objects,
    // one per append part.
    for p in 0..4 {
        assert_eq!(names(&root, "bundles", p).len(), 4, "partition {p}");
        let firsts = object_firsts(&root, p);
        assert!(
            firsts.first() == Some(&257) && firsts.len() <= 300 - 4 * 64,
            "partition {p}: {firsts:?}"
        );
    }
    let out = run_objects(&root, 200, 64);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("started from"), "{stdout}");
    assert_eq!(check_objects(&root, "after the resume"), 2_000);
    // Another partition count would move workspaces away from their numbers: refused
    // before anything is written, as on a data directory.
    let before = common::snapshot(&root);
    let out = host()
        .args(["run", "--store", "objects", "--data"])
        .arg(&root)
        .arg("--component")
        .arg(component_path())
        .args(["--partitions", "2", "--events", "10"])
        .output()
        .expect("start sequencer-host");
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("numbered with 4 partitions, not 2"),
        "{stderr}"
    );
    assert_eq!(before, common::snapshot(&root));
    let store = format!("objects:{}", root.display());
    let out = run_host(&[
        "inspect",
        "--store",
        &store,
        "--partition",
        "1",
        "--tail",
        "3",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("bundle size"), "{stdout}");
}

#[test]
fn a_store_of_the_old_format_is_read_continued_in_the_new_one_and_checked() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("objects");
    let format = || std::fs::read_to_string(root.join("FORMAT")).expect("FORMAT");
    // Written as older versions wrote a store: one object per event, format 1.
    let out = run_objects_with(&root, 150, 64, &[], &[(WRITE_FORMAT_ENV, "1")]);
    assert!(out.status.success(), "{:?}", text(&out));
    assert!(format().contains("format=1"), "{}", format());
    for p in 0..4 {
        assert_eq!(names(&root, "bundles", p).len(), 2, "partition {p}");
        assert_eq!(object_firsts(&root, p), (129..=150).collect::<Vec<_>>());
    }
    assert_eq!(check_objects(&root, "after the run in format 1"), 600);
    // Continued: the store says format 2, new appends write objects of several events, and
    // the merger bundles ranges of both kinds (129..=192: old objects, then new ones).
    let out = run_objects(&root, 150, 64);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("started from"), "{stdout}");
    assert!(format().contains("format=2"), "{}", format());
    assert_eq!(check_objects(&root, "after the run in format 2"), 1_200);
    for p in 0..4 {
        assert_eq!(names(&root, "bundles", p).len(), 4, "partition {p}");
        let firsts = object_firsts(&root, p);
        assert!(
            firsts.first() == Some(&257) && firsts.len() < 300 - 256,
            "partition {p}: {firsts:?}"
        );
    }
    let store = format!("objects:{}", root.display());
    let out = run_host(&[
        "inspect",
        "--store",
        &store,
        "--partition",
        "0",
        "--tail",
        "2",
    ]);
    assert!(out.status.success(), "{:?}", text(&out));
}

#[test]
fn check_reports_a_missing_or_corrupted_object_by_name() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("objects");
    // Bundles larger than the run, batches of 8 at most: every event stays in an event
    // object, of a few events each.
    let out = run_objects_with(&root, 100, 10_000, &["--batch-size", "8"], &[]);
    assert!(out.status.success(), "{:?}", text(&out));
    let store = format!("objects:{}", root.display());
    let firsts = object_firsts(&root, 2);
    assert!(firsts.len() >= 13, "{firsts:?}");
    let (gone, after) = (firsts[5], firsts[6]);
    let victim = root.join(event_object(2, gone));
    let saved = std::fs::read(&victim).expect("object");
    std::fs::remove_file(&victim).expect("remove");
    let out = run_host(&["check", "--store", &store]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stderr.contains(&format!("hole at offset {gone}"))
            && stderr.contains(&event_object(2, after)),
        "{stderr}"
    );
    let mut bad = saved;
    let n = bad.len();
    bad[n - 1] ^= 0xff;
    std::fs::write(&victim, bad).expect("corrupt");
    let out = run_host(&["check", "--store", &store]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        // The flipped byte is in the payload of the object's last event.
        stderr.contains("fails its checksum")
            && stderr.contains(&format!("partition 2 offset {}", after - 1)),
        "{stderr}"
    );
    // A run refuses the store too, writing nothing.
    let before = common::snapshot(&root);
    let out = run_objects(&root, 10, 10_000);
    assert!(!out.status.success());
    assert_eq!(before, common::snapshot(&root));
}

#[test]
fn sigkill_during_appends_and_merges_loses_no_event_and_issues_no_number_twice() {
    let rounds: u64 = std::env::var("SEQUENCER_OBJECTS_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let mut rng = Rng::new(0x000B_1EC7);
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("objects");
    let component = component_path();
    let mut events = 0;
    // Rounds whose kill left event objects that a bundle also holds: killed mid-merge.
    let mut mid_merge = 0;
    for round in 1..=rounds {
        let log = tmp.path().join(format!("round-{round}.log"));
        let mut child = host()
            .env(MERGE_PAUSE_ENV, "40")
            .args(["run", "--store"])
            .arg(format!("objects:{}", root.display()))
            .arg("--component")
            .arg(&component)
            .args(["--partitions", "4", "--workspaces", "200"])
            .args(["--events", "10000000", "--fail-rate", "0.05"])
            .args(["--bundle-events", "32"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start");
        let delay = Duration::from_millis(300 + rng.below(900));
        common::sigkill_after(&mut child, delay, round, Some(&log));
        if !root.join("FORMAT").exists() {
            continue;
        }
        if (0..4).any(|p| leftovers(&root, p)) {
            mid_merge += 1;
        }
        let now = check_objects(&root, &format!("after kill {round} at {delay:?}"));
        assert!(
            now >= events,
            "round {round}: the PLog shrank from {events} to {now}"
        );
        events = now;
    }
    let out = run_objects(&root, 100, 32);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "the final run failed:\n{stdout}{stderr}"
    );
    assert_eq!(check_objects(&root, "after the final run"), events + 400);
    assert!(events > 0, "no kill hit a running workload");
    assert!(mid_merge > 0, "no kill landed inside a merge");
    eprintln!("{rounds} kills, {mid_merge} inside a merge, {events} events before the last run");
}

/// The names of the objects under `dir/<p>` (none if there is no such folder).
fn names(root: &Path, dir: &str, p: u32) -> Vec<String> {
    std::fs::read_dir(root.join(dir).join(format!("{p:05}")))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The first offsets of partition `p`'s event objects, ascending.
fn object_firsts(root: &Path, p: u32) -> Vec<u64> {
    let mut v: Vec<u64> = names(root, "events", p)
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// Whether partition `p` holds an event object that a bundle also holds (what a merge
/// killed between its bundle and its deletes leaves).
fn leftovers(root: &Path, p: u32) -> bool {
    let bundled = names(root, "bundles", p)
        .iter()
        .filter_map(|n| n.split_once('-').and_then(|(_, l)| l.parse::<u64>().ok()))
        .max()
        .unwrap_or(0);
    object_firsts(root, p).iter().any(|&o| o <= bundled)
}

#[test]
fn a_second_run_on_a_live_object_store_is_refused_and_the_first_goes_on() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("objects");
    let component = component_path();
    let mut first = host()
        .args(["run", "--store"])
        .arg(format!("objects:{}", root.display()))
        .arg("--component")
        .arg(&component)
        .args(["--partitions", "4", "--events", "10000000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the first run");
    // Wait (bounded) until the first run is appending.
    let mut appending = false;
    for _ in 0..200 {
        if std::fs::read_dir(root.join("events/00000")).is_ok_and(|mut d| d.next().is_some()) {
            appending = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(appending, "the first run never appended");
    let out = run_objects(&root, 10, 64);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}");
    assert!(stderr.contains("in use by another process"), "{stderr}");
    assert!(
        first.try_wait().expect("poll").is_none(),
        "the first run goes on"
    );
    first.kill().expect("SIGKILL");
    let _ = first.wait();
    assert!(check_objects(&root, "after the refused second run") > 0);
}

#[test]
fn a_corrupted_bundle_is_reported_by_name_when_read() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    let a = open(root, 4);
    a.append(0, &batch(1, 8, 4)).expect("append");
    a.merge_now().expect("merge");
    assert_eq!(a.bounds(0), (9, 8));
    drop(a);
    let bundle = file(root, &bundle_object(0, 5, 8));
    let good = std::fs::read(&bundle).expect("bundle");
    let mut bytes = good.clone();
    bytes[24 + 12] ^= 0x10; // the second event's hash
    std::fs::write(&bundle, bytes).expect("corrupt");
    // Opening reads only each bundle's link; reading its events finds the damage.
    let b = ObjectPlog::open_local(root, 4, Access::ReadOnly).expect("open");
    assert_eq!(b.read(0, 1, 4).expect("the first bundle is sound").len(), 4);
    let e = b.read(0, 1, 100).expect_err("corrupt");
    assert!(
        e.0.contains(&bundle_object(0, 5, 8)) && e.0.contains("corrupt"),
        "{e}"
    );
    drop(b);
    // Inside the last event's payload: the bundle's links hold, that event fails its
    // checksum when it is decoded.
    let mut bytes = good;
    let n = bytes.len();
    bytes[n - 3] ^= 0x10;
    std::fs::write(&bundle, bytes).expect("corrupt");
    let b = ObjectPlog::open_local(root, 4, Access::ReadOnly).expect("open");
    let events = b.read(0, 1, 100).expect("linked");
    assert_eq!(events.len(), 8);
    assert_eq!(
        decode_event(8, &events[7].1).err(),
        Some(EventError::Checksum(8))
    );
    assert!(decode_event(7, &events[6].1).is_ok());
}

#[cfg(not(feature = "s3"))]
#[test]
fn a_build_without_s3_refuses_an_s3_store_in_one_line_naming_the_feature() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("view");
    for cmd in ["run", "check"] {
        let mut args = vec![cmd, "--store", "objects:s3://bucket/prefix"];
        let data_arg = data.to_str().expect("utf-8");
        args.extend(["--data", data_arg]);
        let component = component_path();
        if cmd == "run" {
            args.extend(["--component", component.to_str().expect("utf-8")]);
        }
        let out = run_host(&args);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {stderr}");
        assert!(stderr.contains("--features s3"), "{cmd}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{cmd}: {stderr}");
        assert!(!data.exists(), "{cmd}: nothing written");
    }
}
