//! Many `sequencer-host run --host-name` processes on one cluster: partitions owned through
//! leases, a host killed (the others take over), a host paused past its TTL (its stale writes
//! refused, it rejoins), two hosts started at once (one owner per partition), a host joining
//! (it gets its share by handover) and leaving on SIGTERM (it hands its share back). Each test ends
//! with `check` and an independent check of every PLog: offsets dense from 1, each key's
//! numbers strictly increasing (so none twice).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sequencer_host::store::etcd::EtcdStorage;

use crate::common::component_path;
use crate::common::etcd_cluster::EtcdCluster;
use crate::common::{host, run_host, text};
use crate::support::{all_events, check_passes, run_args, wait_exit_or_kill};

/// The lease TTL the tests' hosts run with.
const TTL_S: &str = "2";

/// Starts host `name` on `url`: `partitions` partitions of `events` events each, `rate`
/// commands/s offered per host, `extra` arguments to `run`; its stderr to `log`.
pub(crate) fn spawn_host(
    url: &str, name: &str, partitions: &str, events: &str, rate: &str, log: &Path, extra: &[&str],
) -> Child {
    let component = component_path();
    host()
        .args(run_args(url, &component, partitions, events))
        .args(["--host-name", name, "--lease-ttl-s", TTL_S, "--rate", rate])
        .args(["--batch-size", "32"])
        .args(extra)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("start sequencer-host run --host-name")
}

/// Starts one host per name on `cluster` (as [`spawn_host`]); each with its log file.
pub(crate) fn spawn_hosts(
    cluster: &EtcdCluster, names: &[&str], partitions: &str, events: &str, rate: &str,
) -> Vec<(Child, PathBuf)> {
    let url = cluster.url();
    (names.iter())
        .map(|n| {
            let log = cluster.dir.path().join(format!("{n}.log"));
            (
                spawn_host(&url, n, partitions, events, rate, &log, &[]),
                log,
            )
        })
        .collect()
}

/// Polls the owners (bounded) until `done` holds of them; returns the last read.
pub(crate) fn wait_owners(
    store: &EtcdStorage, within: Duration, what: &str,
    done: impl Fn(&sequencer_host::store::etcd::ownership::Owners) -> bool,
) -> sequencer_host::store::etcd::ownership::Owners {
    let deadline = Instant::now() + within;
    loop {
        // A read may fail while the cluster elects a leader: polled again.
        let owners = store.owners(Duration::from_secs(2));
        if let Ok(owners) = &owners
            && done(owners)
        {
            return owners.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{what} not within {within:?}: {owners:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (bounded) until all `partitions` are owned and each host of `names` owns one;
/// returns the partitions `of` owns then.
pub(crate) fn all_owning(
    store: &EtcdStorage, names: &[&str], partitions: usize, of: &str,
) -> Vec<u32> {
    let owners = wait_owners(store, Duration::from_secs(20), "every host owning", |o| {
        o.owners.len() == partitions
            && (names.iter()).all(|h| o.owners.values().any(|x| x.host == *h))
    });
    (owners.owners.iter())
        .filter(|(_, o)| o.host == of)
        .map(|(p, _)| *p)
        .collect()
}

/// Waits for a host to finish successfully; returns its summary.
pub(crate) fn finished(mut child: Child, name: &str, log: &Path) -> String {
    let status = match wait_exit_or_kill(&mut child, Duration::from_secs(90)) {
        Some(status) => status,
        None => {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "host {name} did not end within 90 s; its log's last lines:\n{}",
                tail.join("\n")
            );
        }
    };
    let mut stdout = String::new();
    if let Some(mut out) = child.stdout.take() {
        use std::io::Read;
        let _ = out.read_to_string(&mut stdout);
    }
    let log = std::fs::read_to_string(log).unwrap_or_default();
    assert!(
        status.success(),
        "host {name} failed ({status}):\n{stdout}\n{log}"
    );
    stdout
}

/// The value of a summary row.
pub(crate) fn row<'a>(summary: &'a str, name: &str) -> &'a str {
    summary
        .lines()
        .find_map(|l| l.strip_prefix(name).filter(|rest| rest.starts_with("  ")))
        .map_or("", str::trim)
}

/// The leading count of a summary row ("3 (…)" is 3).
pub(crate) fn count(summary: &str, name: &str) -> u64 {
    let v = row(summary, name);
    v.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("row {name:?} has no count: {v:?}\n{summary}"))
}

/// Partitions a host lost to its lease ("partitions lost": "0 refused by the epoch, N to the
/// lease; ...").
fn lease_losses(summary: &str) -> u64 {
    let v = row(summary, "partitions lost");
    (v.split(", ").nth(1))
        .and_then(|part| part.split(" to the lease").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no lease losses in {v:?}\n{summary}"))
}

/// `check`, then every partition's PLog read back through `store`: offsets dense from 1 to
/// exactly `events` (the hosts together appended each partition's events once), every key's
/// numbers strictly increasing.
pub(crate) fn plogs_hold(
    url: &str, store: &dyn sequencer_host::StoreReader, partitions: u32, events: u64,
) {
    check_passes(url);
    for p in 0..partitions {
        let plog = all_events(store, p);
        assert_eq!(plog.len() as u64, events, "partition {p}");
        let mut last: HashMap<(u64, u16), u64> = HashMap::new();
        for (i, e) in plog.iter().enumerate() {
            assert_eq!(
                e.offset,
                i as u64 + 1,
                "partition {p}: a gap before {}",
                e.offset
            );
            for v in &e.values {
                let before = last.insert((v.key.ws, v.key.seq), v.value);
                assert!(
                    before.is_none_or(|b| b < v.value),
                    "partition {p} offset {}: {:?} after {before:?}",
                    e.offset,
                    v
                );
            }
        }
    }
}

pub(crate) fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(ok.success(), "kill {sig}");
}

#[test]
fn sigkill_of_an_owner_among_three_hosts_the_survivors_take_over_and_the_workload_completes() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = cluster.url();
    let store = cluster.store(Duration::from_secs(10));
    let mut hosts = spawn_hosts(&cluster, &["a", "b", "c"], "6", "800", "600");
    let of_b = all_owning(&store, &["a", "b", "c"], 6, "b");
    std::thread::sleep(Duration::from_millis(700));
    let (mut b, _) = hosts.remove(1);
    b.kill().expect("SIGKILL b");
    let _ = b.wait();
    let killed = Instant::now();
    wait_owners(
        &store,
        Duration::from_secs(15),
        "b's partitions taken over",
        |o| {
            of_b.iter()
                .all(|p| o.owners.get(p).is_some_and(|x| x.host != "b"))
        },
    );
    let took = killed.elapsed();
    eprintln!("SIGKILL to every partition of the killed host owned by another: {took:?}");
    assert!(
        took < Duration::from_secs(5),
        "takeover took {took:?} with a 2 s TTL"
    );
    let mut takeovers = 0;
    for ((child, log), name) in hosts.into_iter().zip(["a", "c"]) {
        let summary = finished(child, name, &log);
        eprintln!(
            "host {name}: takeovers {}; first append after a takeover: {}",
            row(&summary, "takeovers"),
            row(&summary, "first append after a takeover")
        );
        takeovers += count(&summary, "takeovers");
    }
    assert!(
        takeovers >= of_b.len() as u64,
        "{takeovers} takeovers of {of_b:?}"
    );
    plogs_hold(&url, &store, 6, 800);
}

#[test]
fn an_owner_paused_past_its_ttl_loses_its_partitions_and_rejoins_without_a_number_twice() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = cluster.url();
    let store = cluster.store(Duration::from_secs(10));
    let mut hosts = spawn_hosts(&cluster, &["a", "b"], "4", "800", "400");
    let ((b, log_b), (a, log_a)) = (hosts.remove(1), hosts.remove(0));
    let of_a = all_owning(&store, &["a", "b"], 4, "a");
    std::thread::sleep(Duration::from_millis(500));
    signal(&a, "-STOP");
    wait_owners(
        &store,
        Duration::from_secs(15),
        "b owning a's partitions",
        |o| {
            of_a.iter()
                .all(|p| o.owners.get(p).is_some_and(|x| x.host == "b"))
        },
    );
    // Past its TTL, and past b's first appends.
    std::thread::sleep(Duration::from_millis(1000));
    signal(&a, "-CONT");
    let summary_a = finished(a, "a", &log_a);
    let summary_b = finished(b, "b", &log_b);
    let lost = row(&summary_a, "partitions lost");
    assert!(
        !lost.starts_with("0 refused by the epoch, 0 to the lease"),
        "a lost nothing: {summary_a}"
    );
    assert!(
        count(&summary_b, "takeovers") >= of_a.len() as u64,
        "{summary_b}"
    );
    let log = std::fs::read_to_string(&log_a).unwrap_or_default();
    assert!(log.contains("lost ("), "{log}");
    plogs_hold(&url, &store, 4, 800);
}

#[test]
fn two_hosts_started_at_once_on_an_empty_cluster_never_write_one_partition_together() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = cluster.url();
    let store = cluster.store(Duration::from_secs(10));
    let mut hosts = spawn_hosts(&cluster, &["a", "b"], "4", "400", "0");
    let ((b, log_b), (a, log_a)) = (hosts.remove(1), hosts.remove(0));
    let summaries = [finished(a, "a", &log_a), finished(b, "b", &log_b)];
    for s in &summaries {
        // One owner at a time per partition: no append ever lost a race for an offset.
        assert!(
            row(s, "actualizations").contains(" 0 after appends refused by the offset fence"),
            "{s}"
        );
        // And no host ever wrote a partition another had taken, unless its own lease may have
        // expired first (a machine too loaded to keep it alive): then the epoch refuses the
        // append it had in flight, which is the fence doing its work, not two owners.
        if lease_losses(s) == 0 {
            assert_eq!(count(s, "appends refused by the epoch"), 0, "{s}");
        }
    }
    let served: u64 = summaries
        .iter()
        .map(|s| count(s, "events appended here"))
        .sum();
    assert!(served >= 1600, "{served} events appended by both");
    plogs_hold(&url, &store, 4, 400);
}

#[test]
fn a_host_that_joins_gets_its_share_by_handover_and_sigterm_hands_it_back_before_the_ttl() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = cluster.url();
    let store = cluster.store(Duration::from_secs(10));
    let (a, log_a) = spawn_hosts(&cluster, &["a"], "4", "600", "200").remove(0);
    wait_owners(&store, Duration::from_secs(20), "a owning all", |o| {
        o.owners.len() == 4 && o.owners.values().all(|x| x.host == "a")
    });
    let status = run_host(&["status", "--store", &url]);
    let (out, err) = text(&status);
    assert!(status.status.success(), "{out}{err}");
    assert!(
        out.contains("1 hosts, 4 partitions owned")
            && out.contains("host a: lease")
            && out.contains("owns [0, 1, 2, 3]")
            && out.contains("partition 3: owner a epoch"),
        "{out}"
    );
    let (b, log_b) = spawn_hosts(&cluster, &["b"], "4", "600", "200").remove(0);
    wait_owners(&store, Duration::from_secs(20), "b owning its share", |o| {
        o.owners.values().filter(|x| x.host == "b").count() == 2
    });
    std::thread::sleep(Duration::from_millis(500));
    signal(&b, "-TERM");
    let termed = Instant::now();
    wait_owners(&store, Duration::from_secs(10), "a owning all again", |o| {
        o.hosts.len() == 1 && o.owners.len() == 4 && o.owners.values().all(|x| x.host == "a")
    });
    let took = termed.elapsed();
    eprintln!("SIGTERM to every partition owned by the other host: {took:?}");
    // Handed over, not expired: well within the 2 s TTL.
    assert!(took < Duration::from_millis(1900), "{took:?}");
    let summary_b = finished(b, "b", &log_b);
    assert!(count(&summary_b, "handovers") >= 2, "{summary_b}");
    let summary_a = finished(a, "a", &log_a);
    assert!(
        count(&summary_a, "handovers") >= 2,
        "a handed over to b: {summary_a}"
    );
    assert!(
        count(&summary_a, "takeovers") >= 2,
        "a took them back: {summary_a}"
    );
    plogs_hold(&url, &store, 4, 600);
}
