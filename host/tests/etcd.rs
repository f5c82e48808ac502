//! The etcd store against a real 3-member cluster on loopback ports (`scripts/etcd-cluster.sh`
//! installs Debian's etcd if missing, starts the cluster in a temp dir and stops exactly its
//! processes; a guard stops it even when a test panics).
//!
//! Without etcd these tests fail under CI (`CI` set) and are skipped with a message otherwise.
//! The only waits are bounded polls on real processes: cluster health, PLog progress.

#![cfg(all(feature = "etcd", feature = "cli"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{checked_events, component_path, host, run_host, text};
use sequencer::{Params, SeqValue};
use sequencer_host::StoreReader as _;
use sequencer_host::bindings::StartOutcome;
use sequencer_host::{
    AppendError, Driver, DriverConfig, EtcdConfig, EtcdStorage, EventBatch, Limits, MonotonicClock,
    PartitionSequencer, Runtime, Storage, StoredEvent,
};

/// One partition's PLog as a member holds it.
type Plog = Vec<StoredEvent>;

/// The payload of the append tried while two members are down.
const OUTAGE: &[u8] = br#"{"during":"outage"}"#;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/etcd-cluster.sh");
const ENSURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/etcd-ensure.sh");

/// A 3-member cluster in a temp dir; stopped on drop.
struct Cluster {
    dir: tempfile::TempDir,
    endpoints: Vec<String>,
}

impl Cluster {
    /// Starts a cluster, or `None` (skip) when etcd is unavailable outside CI. Puts etcd in
    /// the project's tool cache if it is not on PATH (no system install).
    fn start() -> Option<Self> {
        let (dir, out) = common::start_service("etcd", ENSURE, SCRIPT)?;
        let (stdout, stderr) = text(&out);
        let cluster = Self {
            endpoints: stdout.trim().split(',').map(str::to_string).collect(),
            dir,
        };
        assert!(
            out.status.success(),
            "the etcd cluster did not start:\n{stdout}{stderr}"
        );
        assert_eq!(cluster.endpoints.len(), 3, "{stdout}");
        Some(cluster)
    }

    fn url(&self) -> String {
        let hosts: Vec<&str> = self
            .endpoints
            .iter()
            .map(|e| e.trim_start_matches("http://"))
            .collect();
        format!("etcd://{}", hosts.join(","))
    }

    fn script(&self, args: &[&str]) {
        let out = Command::new("bash")
            .arg(SCRIPT)
            .arg(args[0])
            .arg(self.dir.path())
            .args(&args[1..])
            .output()
            .expect("run etcd-cluster.sh");
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "etcd-cluster.sh {args:?}:\n{stdout}{stderr}"
        );
    }

    fn kill(&self, member: usize) {
        self.script(&["kill", &member.to_string()]);
    }

    fn restart(&self, member: usize) {
        self.script(&["restart", &member.to_string()]);
    }

    fn wait_healthy(&self) {
        self.script(&["wait"]);
    }

    /// Whether `member` is the leader, by `etcdctl endpoint status`.
    fn is_leader(&self, member: usize) -> bool {
        Command::new("bash")
            .arg(SCRIPT)
            .arg("leader")
            .arg(self.dir.path())
            .arg(member.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// A store on the whole cluster, retrying for `retry_for`.
    fn store(&self, retry_for: Duration) -> EtcdStorage {
        let mut config = EtcdConfig::new(self.endpoints.clone());
        config.retry_for = retry_for;
        EtcdStorage::connect(config).expect("connect to etcd")
    }

    /// A store that reads only `member`'s own copy.
    fn member_store(&self, member: usize) -> EtcdStorage {
        let mut config = EtcdConfig::new(vec![self.endpoints[member].clone()]);
        config.serializable_reads = true;
        EtcdStorage::connect(config).expect("connect to an etcd member")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(SCRIPT)
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}

/// The workload's sequences (as `sequencer-host run` defines them).
fn params() -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 1_000_000)
        .with_seq(1, 3, 1)
}

fn run_args<'a>(
    url: &'a str,
    component: &'a Path,
    partitions: &'a str,
    events: &'a str,
) -> Vec<String> {
    [
        "run",
        "--store",
        url,
        "--component",
        component.to_str().expect("utf-8"),
        "--partitions",
        partitions,
        "--workspaces",
        "50",
        "--events",
        events,
        "--fail-rate",
        "0.05",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn check_passes(url: &str) -> String {
    let out = run_host(&["check", "--store", url]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "check failed:\n{stdout}{stderr}");
    stdout
}

fn spawn_run(url: &str, partitions: &str, events: &str, log: &Path) -> Child {
    let component: PathBuf = component_path();
    host()
        .args(run_args(url, &component, partitions, events))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("start sequencer-host run")
}

/// Polls until partition 0's PLog has at least `events` events (bounded).
fn wait_for_events(store: &EtcdStorage, events: u64, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let last = store
            .plog_bounds(0)
            .expect("read bounds")
            .map_or(0, |b| b.1);
        if last >= events {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {last} events after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One command processor on one partition: commits `events` events; an append refused by the
/// fence means actualize and go on. Returns the offsets it committed and how often it was fenced.
fn command_processor(
    name: &str,
    seq: &PartitionSequencer,
    storage: &dyn Storage,
    ws: u64,
    events: usize,
) -> (Vec<u64>, u64) {
    let mut committed = Vec::new();
    let mut fenced = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while committed.len() < events {
        assert!(Instant::now() < deadline, "no progress");
        let (outcome, numbers) = seq.start_next(1, ws, &[1, 2, 3]).expect("start_next");
        let StartOutcome::Started(offset) = outcome else {
            // Actualizing: the driver is replaying the PLog.
            std::thread::sleep(Duration::from_micros(200));
            continue;
        };
        let values: Vec<SeqValue> = [1u16, 2, 3]
            .iter()
            .zip(&numbers)
            .map(|(&s, &n)| SeqValue::new(ws, s, n))
            .collect();
        let payload = format!(r#"{{"host":"{name}","offset":{offset}}}"#);
        match storage.append_event(seq.partition(), offset, &values, payload.as_bytes()) {
            Ok(()) => {
                seq.flush().expect("flush");
                committed.push(offset);
            }
            Err(AppendError::WrongOffset { expected, offered }) => {
                assert!(expected > offered, "the fence names a later offset");
                fenced += 1;
                seq.actualize().expect("actualize");
            }
            Err(AppendError::Storage(e)) => panic!("append failed: {e}"),
        }
    }
    (committed, fenced)
}

#[test]
fn the_main_job_runs_on_the_cluster_and_a_restart_continues_without_reusing_numbers() {
    let Some(cluster) = Cluster::start() else {
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

#[test]
fn two_hosts_on_one_partition_never_both_commit_an_offset_and_the_loser_goes_on_without_reuse() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let runtime = Runtime::from_file(&component_path(), Limits::default()).expect("component");
    let hosts: Vec<(EtcdStorage, Driver)> = (0..2)
        .map(|_| {
            let store = cluster.store(Duration::from_secs(10));
            let driver = Driver::spawn(
                Arc::new(store.clone()),
                Arc::new(MonotonicClock::new()),
                DriverConfig::default(),
            );
            (store, driver)
        })
        .collect();
    let seqs: Vec<PartitionSequencer> = hosts
        .iter()
        .map(|(_, d)| d.open(&runtime, 0, &params()).expect("open partition 0"))
        .collect();
    let per_host = 150;
    let results: Vec<(Vec<u64>, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = seqs
            .iter()
            .zip(&hosts)
            .zip(["A", "B"])
            .map(|((seq, (store, _)), name)| {
                s.spawn(move || command_processor(name, seq, store, 7, per_host))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("host thread"))
            .collect()
    });
    for (seq, (_, driver)) in seqs.iter().zip(&hosts) {
        driver.idle();
        seq.cleanup();
    }
    let (a, b) = (&results[0], &results[1]);
    assert!(
        a.0.iter().all(|o| !b.0.contains(o)),
        "an offset committed by both hosts"
    );
    let mut all: Vec<u64> = a.0.iter().chain(&b.0).copied().collect();
    all.sort_unstable();
    let dense: Vec<u64> = (1..=2 * per_host as u64).collect();
    assert_eq!(
        all, dense,
        "together the hosts committed offsets 1..=300 once each"
    );
    assert!(
        a.1 + b.1 > 0,
        "the hosts raced: at least one append was fenced"
    );
    let checked = check_passes(&cluster.url());
    assert!(
        checked.contains("check passed: 1 partitions, 300 PLog events"),
        "{checked}"
    );
    eprintln!("fenced appends: host A {}, host B {}", a.1, b.1);
}

#[test]
fn kill_9_of_one_member_mid_run_loses_nothing_and_the_run_continues() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let log = cluster.dir.path().join("run.log");
    let observer = cluster.store(Duration::from_secs(10));
    let child = spawn_run(&url, "4", "400", &log);
    wait_for_events(&observer, 50, Duration::from_secs(60));
    let leader = (0..3).find(|&m| cluster.is_leader(m)).unwrap_or(0);
    cluster.kill(leader);
    let out = child.wait_with_output().expect("wait for the run");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        out.status.success(),
        "the run failed after member {leader} died:\n{stdout}{stderr}"
    );
    assert!(stdout.contains("ok: 1600 PLog events"), "{stdout}");
    cluster.restart(leader);
    cluster.wait_healthy();
    let checked = check_passes(&url);
    assert!(
        checked.contains("check passed: 4 partitions, 1600 PLog events"),
        "{checked}"
    );
}

#[test]
fn with_two_members_down_appends_fail_with_a_clear_error_and_continue_after_they_return() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let runtime = Runtime::from_file(&component_path(), Limits::default()).expect("component");
    let store = cluster.store(Duration::from_secs(3));
    let driver = Driver::spawn(
        Arc::new(store.clone()),
        Arc::new(MonotonicClock::new()),
        DriverConfig::default(),
    );
    let seq = driver
        .open(&runtime, 0, &params())
        .expect("open partition 0");
    let (before, _) = command_processor("A", &seq, &store, 3, 20);
    assert_eq!(before, (1..=20).collect::<Vec<_>>());

    cluster.kill(1);
    cluster.kill(2);
    let (offset, numbers) = loop {
        match seq.start_next(1, 3, &[1, 2, 3]).expect("start_next") {
            (StartOutcome::Started(o), numbers) => break (o, numbers),
            (StartOutcome::NotNow(_), _) => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    let values: Vec<SeqValue> = [1u16, 2, 3]
        .iter()
        .zip(&numbers)
        .map(|(&s, &n)| SeqValue::new(3, s, n))
        .collect();
    let started = Instant::now();
    let err = store
        .append_event(0, offset, &values, OUTAGE)
        .expect_err("no quorum: the append fails");
    let message = err.to_string();
    assert!(matches!(err, AppendError::Storage(_)), "{message}");
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(
        message.contains("append at partition 0 offset 21")
            && message.contains("majority of the cluster"),
        "a clear error: {message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "failed within the retry limit"
    );
    seq.actualize().expect("actualize after the failed append");

    cluster.restart(1);
    cluster.restart(2);
    cluster.wait_healthy();
    let (after, _) = command_processor("A", &seq, &store, 3, 20);
    // A proposal the lone member took before it lost its leader may still commit when the
    // others return: then offset 21 holds that event and the run went on at 22.
    let kept = store.events(0, 21, 1).expect("read offset 21")[0].payload == OUTAGE;
    let first = if kept { 22 } else { 21 };
    assert_eq!(
        after,
        (first..first + 20).collect::<Vec<_>>(),
        "the run went on densely"
    );
    driver.idle();
    seq.cleanup();
    let checked = check_passes(&cluster.url());
    let total = if kept { 41 } else { 40 };
    assert!(
        checked.contains(&format!("check passed: 1 partitions, {total} PLog events")),
        "{checked}"
    );
}

#[test]
fn after_repeated_kill_and_restart_of_a_follower_every_member_holds_the_same_dense_plog() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let log = cluster.dir.path().join("run.log");
    let observer = cluster.store(Duration::from_secs(10));
    let child = spawn_run(&url, "2", "1500", &log);
    let follower = (0..3).find(|&m| !cluster.is_leader(m)).unwrap_or(2);
    for round in 1..=3u64 {
        wait_for_events(&observer, round * 150, Duration::from_secs(60));
        cluster.kill(follower);
        wait_for_events(&observer, round * 150 + 75, Duration::from_secs(60));
        cluster.restart(follower);
    }
    let out = child.wait_with_output().expect("wait for the run");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("ok: 3000 PLog events"), "{stdout}");
    cluster.wait_healthy();

    // Each member's own copy (serializable reads), once it has caught up.
    let copies: Vec<Vec<Plog>> = (0..3)
        .map(|m| {
            let store = cluster.member_store(m);
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let plogs: Vec<Plog> = (0..2)
                    .map(|p| {
                        let mut events = Vec::new();
                        let mut from = 1;
                        loop {
                            let page = store.events(p, from, 1024).expect("read a member's PLog");
                            let Some(last) = page.last().map(|e| e.offset) else {
                                break;
                            };
                            events.extend(page);
                            from = last + 1;
                        }
                        events
                    })
                    .collect();
                if plogs.iter().all(|p| p.len() == 1500) || Instant::now() > deadline {
                    break plogs;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
        .collect();
    for (m, copy) in copies.iter().enumerate() {
        for (p, plog) in copy.iter().enumerate() {
            let offsets: Vec<u64> = plog.iter().map(|e| e.offset).collect();
            assert_eq!(
                offsets,
                (1..=1500).collect::<Vec<_>>(),
                "member {m} partition {p}: a dense PLog of 1500 events"
            );
        }
        assert!(
            copy == &copies[0],
            "member {m} holds the same PLog as member 0"
        );
    }
    check_passes(&url);
}

/// `n` events from `first`, event `o` holding value `o` of (ws 1, seq 1) and a payload of
/// `payload` bytes naming it.
fn event_batch(first: u64, n: u64, payload: usize) -> EventBatch {
    let mut b = EventBatch::new(first);
    for o in first..first + n {
        let mut p = format!("event {o} ").into_bytes();
        p.resize(payload.max(p.len()), b'.');
        b.push(&[SeqValue::new(1, 1, o)], &p);
    }
    b
}

/// Every event of partition `p`, in pages.
fn all_events(store: &EtcdStorage, p: u32) -> Vec<StoredEvent> {
    let mut out: Vec<StoredEvent> = Vec::new();
    loop {
        let from = out.last().map_or(1, |e| e.offset + 1);
        let page = store.events(p, from, 1000).expect("read the PLog");
        if page.is_empty() {
            return out;
        }
        out.extend(page);
    }
}

#[test]
fn a_batch_beyond_the_request_limit_is_appended_in_parts_in_order_and_reads_back_densely() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let mut config = EtcdConfig::new(cluster.endpoints.clone());
    config.max_request_bytes = 64 * 1024;
    let store = EtcdStorage::connect(config).expect("connect");
    let limits = store.append_limits();
    assert!(limits.max_bytes < 64 * 1024, "{limits:?}");

    // 3000 events of ~230 bytes: parts of at most 1024 events and the byte limit.
    let batch = event_batch(1, 3000, 200);
    let parts = batch.parts(limits).count();
    assert!(parts >= 10, "{parts} parts");
    store.append_events(0, &batch).expect("append 3000 events");
    assert_eq!(
        store.stats().append_txns.load(Ordering::Relaxed),
        parts as u64,
        "one transaction per part"
    );
    // One event on its own (stored as a plain event), then another batch.
    store
        .append_event(0, 3001, &[SeqValue::new(1, 1, 3001)], b"single")
        .expect("append one");
    store
        .append_events(0, &event_batch(3002, 5, 10))
        .expect("append 5");

    let events = all_events(&store, 0);
    let offsets: Vec<u64> = events.iter().map(|e| e.offset).collect();
    assert_eq!(offsets, (1..=3006).collect::<Vec<_>>(), "dense, in order");
    assert!(
        events
            .iter()
            .all(|e| e.values == [SeqValue::new(1, 1, e.offset)])
    );
    assert_eq!(events[1499].payload[..11], *b"event 1500 ");
    assert_eq!(events[3000].payload, b"single");
    // A read from inside a pack starts at the offset asked for.
    let page = store.events(0, 1234, 3).expect("read");
    assert_eq!(
        page.iter().map(|e| e.offset).collect::<Vec<_>>(),
        vec![1234, 1235, 1236]
    );
    assert_eq!(store.plog_bounds(0).expect("bounds"), Some((1, 3006)));

    // Stale or early batches are refused whole: inside a pack, at its start, past the end.
    for offered in [1500, 1025, 3006, 3008] {
        assert_eq!(
            store.append_events(0, &event_batch(offered, 3, 10)),
            Err(AppendError::WrongOffset {
                expected: 3007,
                offered
            }),
            "a batch at {offered}"
        );
    }
    assert_eq!(all_events(&store, 0).len(), 3006, "nothing written");
    let checked = check_passes(&cluster.url());
    assert!(
        checked.contains("1 partitions, 3006 PLog events"),
        "{checked}"
    );
}

#[test]
fn an_event_larger_than_a_request_is_refused_with_a_clear_error_and_writes_nothing() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let store = cluster.store(Duration::from_secs(5));
    let huge = event_batch(1, 1, 2 * 1024 * 1024);
    let err = store.append_events(0, &huge).expect_err("too large");
    let message = err.to_string();
    assert!(matches!(err, AppendError::Storage(_)), "{message}");
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(
        message.contains("append at partition 0 offset 1"),
        "{message}"
    );
    assert_eq!(store.plog_bounds(0).expect("bounds"), None);

    // The main job refuses such a payload before it writes anything.
    let out = run_host(&[
        "run",
        "--store",
        &cluster.url(),
        "--component",
        component_path().to_str().expect("utf-8"),
        "--payload-bytes",
        "2000000",
        "--batch-size", // small enough for memory: the store's limit is what refuses it
        "8",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("--payload-bytes 2000000") && stderr.contains("does not fit in one write"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert_eq!(store.partitions().expect("partitions"), Vec::<u32>::new());
    assert_eq!(
        store.read_layout().expect("layout"),
        None,
        "no layout either"
    );
}

#[test]
fn numbers_of_many_workspaces_read_in_one_go_are_those_read_one_by_one() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let store = cluster.store(Duration::from_secs(5));
    let values: Vec<SeqValue> = (1..=250u64)
        .flat_map(|ws| [SeqValue::new(ws, 1, ws), SeqValue::new(ws, 3, 1000 + ws)])
        .collect();
    futures::executor::block_on(store.write(2, values, 7)).expect("write the view");
    let ws: Vec<u64> = (0..=260).rev().collect();
    let many = store
        .read_numbers_many(2, &ws, &[3, 2, 1])
        .expect("read many");
    let one_by_one: Vec<u64> = ws
        .iter()
        .flat_map(|&w| store.read_numbers(2, w, &[3, 2, 1]).expect("read one"))
        .collect();
    assert_eq!(many, one_by_one);
    assert_eq!(&many[3 * 10..3 * 11], &[1250, 0, 250], "workspace 250");
}

/// The kill test on etcd: the host, appending batches, is sent SIGKILL at random moments
/// (`SEQUENCER_ETCD_KILL_ROUNDS`, default 6; the sleeps are the point: a real process killed
/// at a random moment), restarted each time; `check` proves the PLog dense and no number
/// issued twice after every kill.
#[test]
fn sigkill_of_the_host_during_batched_appends_never_leaves_a_gap_or_a_number_issued_twice() {
    let Some(cluster) = Cluster::start() else {
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
fn a_view_in_the_earlier_layout_is_read_merged_and_moved_to_one_key_per_workspace() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    // Rows as builds before one key per workspace wrote them: seq/<p>/<ws:020>/<seq:05>.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut client = rt
        .block_on(etcd_client::Client::connect(
            cluster.endpoints.clone(),
            None,
        ))
        .expect("connect");
    for (seq, n) in [(1u16, 5u64), (2, 7)] {
        let key = format!("seq/0/{:020}/{seq:05}", 1);
        rt.block_on(client.put(key, n.to_be_bytes().to_vec(), None))
            .expect("put an old row");
    }
    let store = cluster.store(Duration::from_secs(5));
    assert_eq!(store.read_numbers(0, 1, &[2, 1, 3]), Ok(vec![7, 5, 0]));
    assert_eq!(store.view(0), Ok(vec![(1, 1, 5), (1, 2, 7)]));

    futures::executor::block_on(store.write(0, vec![SeqValue::new(1, 1, 9)], 3)).expect("write");
    assert_eq!(store.read_numbers_many(0, &[1], &[1, 2]), Ok(vec![9, 7]));
    assert_eq!(store.view(0), Ok(vec![(1, 1, 9), (1, 2, 7)]));
    let keys = rt
        .block_on(client.get("seq/0/", Some(etcd_client::GetOptions::new().with_prefix())))
        .expect("list the view");
    let keys: Vec<String> = keys
        .kvs()
        .iter()
        .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
        .collect();
    assert_eq!(
        keys,
        vec![format!("seq/0/{:020}", 1)],
        "one key, the old rows gone"
    );
}

/// A number for writer `w`'s round `r` and workspace `ws` (a fixed pseudo-random spread).
fn scattered(w: u64, r: u64, ws: u64) -> u64 {
    let mut x = (w + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (r + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9)
        ^ ws;
    x ^= x >> 31;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    (x >> 33) % 10_000
}

#[test]
fn writers_raising_the_same_workspaces_at_once_leave_the_largest_numbers() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let (writers, rounds, workspaces) = (3u64, 30u64, 70u64);
    let stores: Vec<EtcdStorage> = (0..writers)
        .map(|_| cluster.store(Duration::from_secs(10)))
        .collect();
    std::thread::scope(|s| {
        for (w, store) in stores.iter().enumerate() {
            s.spawn(move || {
                for r in 0..rounds {
                    // Numbers up and down in no order; each write touches workspaces 1..=70
                    // (two view transactions).
                    let values = (1..=workspaces)
                        .map(|ws| SeqValue::new(ws, 1, scattered(w as u64, r, ws)))
                        .collect();
                    futures::executor::block_on(store.write(4, values, r)).expect("write");
                }
            });
        }
    });
    let expected: Vec<(u64, u16, u64)> = (1..=workspaces)
        .map(|ws| {
            let most = (0..writers)
                .flat_map(|w| (0..rounds).map(move |r| scattered(w, r, ws)))
                .max()
                .unwrap_or(0);
            (ws, 1, most)
        })
        .collect();
    assert_eq!(
        stores[0].view(4).expect("view"),
        expected,
        "the largest number written, never one overwritten by a smaller"
    );
    let conflicts: u64 = stores
        .iter()
        .map(|s| s.stats().view_conflicts.load(Ordering::Relaxed))
        .sum();
    eprintln!("view writes tried again after a conflict: {conflicts}");
}

/// Starts `sequencer-host run` on `url` with `options` after the workload's own, its stderr
/// going to `log`.
fn spawn_run_with(url: &str, options: &[&str], log: &Path) -> Child {
    let component: PathBuf = component_path();
    host()
        .args(run_args(url, &component, "2", "100000"))
        .args(options)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("start sequencer-host run")
}

/// Waits (bounded) until `log` holds `text`; returns the log.
fn wait_for_log(log: &Path, text: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let now = std::fs::read_to_string(log).unwrap_or_default();
        if now.contains(text) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "{text:?} not logged within {within:?}:\n{now}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (bounded) for `child` to exit.
fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("poll the run") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not end within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_run_that_loses_its_majority_says_so_waits_and_finishes_by_itself_once_it_is_back() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let tmp = tempfile::tempdir().expect("temp dir");
    let log = tmp.path().join("run.log");
    // An offered rate keeps the run going for a few seconds: 600 events per partition.
    let mut run = host()
        .args(run_args(&url, &component_path(), "2", "600"))
        .args(["--rate", "300"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("start sequencer-host run");
    wait_for_events(
        &cluster.store(Duration::from_secs(10)),
        30,
        Duration::from_secs(60),
    );
    cluster.kill(1);
    cluster.kill(2);
    let logged = wait_for_log(
        &log,
        "no majority (1 of 3 members reachable); waiting",
        Duration::from_secs(20),
    );
    assert!(
        run.try_wait().expect("poll").is_none(),
        "still waiting:\n{logged}"
    );
    cluster.restart(1);
    cluster.restart(2);
    let status = wait_exit(&mut run, Duration::from_secs(120));
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    let mut stdout = String::new();
    use std::io::Read;
    run.stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    assert!(
        status.success(),
        "the run went on by itself:\n{stdout}{stderr}"
    );
    assert!(stdout.contains("ok: 1200 PLog events"), "{stdout}");
    assert!(stderr.lines().count() <= 20, "a bounded log:\n{stderr}");
    check_passes(&url);
}

#[test]
fn a_majority_lost_for_longer_than_the_store_waits_stops_the_run_in_one_line() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let tmp = tempfile::tempdir().expect("temp dir");
    let log = tmp.path().join("run.log");
    let mut run = spawn_run_with(&url, &["--rate", "300", "--store-wait-s", "3"], &log);
    let store = cluster.store(Duration::from_secs(10));
    wait_for_events(&store, 30, Duration::from_secs(60));
    cluster.kill(1);
    cluster.kill(2);
    let status = wait_exit(&mut run, Duration::from_secs(60));
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("no majority (1 of 3 members reachable)")
            && last.contains("longer than the store waits (3 s"),
        "one line saying what, where and what to do: {last}"
    );
    assert!(stderr.lines().count() <= 20, "a bounded log:\n{stderr}");
    cluster.restart(1);
    cluster.restart(2);
    cluster.wait_healthy();
    check_passes(&url);
}

#[test]
fn a_resume_with_another_partition_count_is_refused_on_etcd_and_inspect_reads_the_store() {
    let Some(cluster) = Cluster::start() else {
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
fn a_request_the_cluster_refuses_as_too_large_is_not_retried_and_becomes_the_stores_failure() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    // The store believes the cluster takes 8 MiB requests; it takes etcd's default 1.5 MiB.
    let mut config = EtcdConfig::new(cluster.endpoints.clone());
    config.max_request_bytes = 8 << 20;
    let store = EtcdStorage::connect(config).expect("connect");
    let started = Instant::now();
    let err = store
        .append_events(0, &event_batch(1, 1, 3 << 20))
        .expect_err("the cluster refuses the request");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused at once, not retried: {:?}: {err}",
        started.elapsed()
    );
    assert!(err.to_string().contains("too large"), "{err}");
    let failure = store
        .failure()
        .expect("a failure that cannot clear by itself");
    assert!(failure.contains("--max-request-bytes"), "{failure}");
    // Every later request is refused at once, naming it; nothing was written.
    let again = store
        .append_events(0, &event_batch(1, 1, 100))
        .expect_err("refused after the failure");
    assert!(again.to_string().contains("--max-request-bytes"), "{again}");
    let fresh = cluster.store(Duration::from_secs(10));
    assert_eq!(fresh.partitions().expect("partitions"), Vec::<u32>::new());
}

#[test]
fn an_etcd_store_archives_and_trims_beside_a_live_run_compacts_and_still_resumes_and_checks() {
    let Some(cluster) = Cluster::start() else {
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
    let archive = sequencer_host::Archive::open(&adir).expect("the archive");
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
