//! Members killed and restarted under a run or a driver: one member (the leader), two (no
//! majority) for a while and for longer than the store waits, a follower again and again.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sequencer::SeqValue;
use sequencer_host::StoreReader as _;
use sequencer_host::store::StoredEvent;
use sequencer_host::{
    AppendError, Driver, DriverConfig, Limits, MonotonicClock, Runtime, StartOutcome, Storage,
};

use crate::common::etcd_cluster::EtcdCluster;
use crate::common::{component_path, host};
use crate::support::{
    check_passes, command_processor, params, run_args, spawn_run, spawn_run_with, wait_exit,
    wait_for_events, wait_for_log,
};

/// One partition's PLog as a member holds it.
type Plog = Vec<StoredEvent>;

/// The payload of the append tried while two members are down.
const OUTAGE: &[u8] = br#"{"during":"outage"}"#;

#[test]
fn kill_9_of_one_member_mid_run_loses_nothing_and_the_run_continues() {
    let Some(cluster) = EtcdCluster::start() else {
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
    let Some(cluster) = EtcdCluster::start() else {
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
    let Some(cluster) = EtcdCluster::start() else {
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

#[test]
fn a_run_that_loses_its_majority_says_so_waits_and_finishes_by_itself_once_it_is_back() {
    let Some(cluster) = EtcdCluster::start() else {
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
    let Some(cluster) = EtcdCluster::start() else {
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
