//! What several tests do: start `sequencer-host run` on the cluster and wait for it, commit
//! events through a driver as a command processor does, build batches, read a whole PLog.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use sequencer::{Params, SeqValue};
use sequencer_host::StoreReader as _;
use sequencer_host::store::StoredEvent;
use sequencer_host::store::etcd::EtcdStorage;
use sequencer_host::{AppendError, EventBatch, PartitionSequencer, StartOutcome, Storage};

use crate::common::{component_path, host, run_host, text};

/// The workload's sequences (as `sequencer-host run` defines them).
pub fn params() -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 1_000_000)
        .with_seq(1, 3, 1)
}

pub fn run_args<'a>(
    url: &'a str, component: &'a Path, partitions: &'a str, events: &'a str,
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

pub fn check_passes(url: &str) -> String {
    let out = run_host(&["check", "--store", url]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "check failed:\n{stdout}{stderr}");
    stdout
}

pub fn spawn_run(url: &str, partitions: &str, events: &str, log: &Path) -> Child {
    let component: PathBuf = component_path();
    host()
        .args(run_args(url, &component, partitions, events))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("start sequencer-host run")
}

/// Starts `sequencer-host run` on `url` with `options` after the workload's own, its stderr
/// going to `log`.
pub fn spawn_run_with(url: &str, options: &[&str], log: &Path) -> Child {
    let component: PathBuf = component_path();
    host()
        .args(run_args(url, &component, "2", "100000"))
        .args(options)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("start sequencer-host run")
}

/// Polls until partition 0's PLog has at least `events` events (bounded).
pub fn wait_for_events(store: &EtcdStorage, events: u64, within: Duration) {
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

/// Waits (bounded) until `log` holds `text`; returns the log.
pub fn wait_for_log(log: &Path, text: &str, within: Duration) -> String {
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
pub fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    wait_exit_or_kill(child, within)
        .unwrap_or_else(|| panic!("the run did not end within {within:?}"))
}

/// Waits (bounded) for `child` to exit; kills it and returns `None` if it has not by then.
pub fn wait_exit_or_kill(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("poll the run") {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One command processor on one partition: commits `events` events; an append refused by the
/// fence means actualize and go on. Returns the offsets it committed and how often it was fenced.
pub fn command_processor(
    name: &str, seq: &PartitionSequencer, storage: &dyn Storage, ws: u64, events: usize,
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
            Err(e) => panic!("append failed: {e}"),
        }
    }
    (committed, fenced)
}

/// `n` events from `first`, event `o` holding value `o` of (ws 1, seq 1) and a payload of
/// `payload` bytes naming it.
pub fn event_batch(first: u64, n: u64, payload: usize) -> EventBatch {
    let mut b = EventBatch::new(first);
    for o in first..first + n {
        let mut p = format!("event {o} ").into_bytes();
        p.resize(payload.max(p.len()), b'.');
        b.push(&[SeqValue::new(1, 1, o)], &p);
    }
    b
}

/// Every event of partition `p`, in pages (of an etcd store, or any other `store` reads).
pub fn all_events(store: &dyn sequencer_host::StoreReader, p: u32) -> Vec<StoredEvent> {
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
