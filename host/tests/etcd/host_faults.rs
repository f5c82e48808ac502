//! Faults around many hosts: a host cut off from etcd while its process lives (a TCP proxy in
//! front of one member, which the test pauses), and the etcd leader killed during a takeover.
//! Each ends with `check` and an independent read of every PLog.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::etcd_cluster::EtcdCluster;
use crate::hosts::{all_owning, count, finished, plogs_hold, spawn_host, spawn_hosts, wait_owners};
use crate::support::wait_exit_or_kill;

/// A TCP proxy on a loopback port in front of `target`: while paused it forwards nothing
/// (bytes read are held until it resumes), so a host behind it is cut off from etcd; once
/// refusing, it closes every connection at once (a host's requests fail fast).
pub(crate) struct Proxy {
    /// Where it listens, on 127.0.0.1.
    pub(crate) port: u16,
    paused: Arc<AtomicBool>,
    refusing: Arc<AtomicBool>,
}

impl Proxy {
    /// Starts forwarding to `target` (`HOST:PORT`).
    pub(crate) fn start(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let paused = Arc::new(AtomicBool::new(false));
        let refusing = Arc::new(AtomicBool::new(false));
        let (held, refused) = (paused.clone(), refusing.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if refused.load(Ordering::Acquire) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                for (from, to) in [
                    (client.try_clone(), server.try_clone()),
                    (server.try_clone(), client.try_clone()),
                ] {
                    if let (Ok(from), Ok(to)) = (from, to) {
                        let (held, refused) = (held.clone(), refused.clone());
                        std::thread::spawn(move || pump(from, to, &held, &refused));
                    }
                }
            }
        });
        Self {
            port,
            paused,
            refusing,
        }
    }

    /// Stops (`true`) or resumes forwarding.
    pub(crate) fn pause(&self, paused: bool) {
        self.paused.store(paused, Ordering::Release);
    }

    /// From now on closes every connection: those open when they next carry bytes, new ones
    /// at once.
    pub(crate) fn refuse(&self) {
        self.refusing.store(true, Ordering::Release);
    }
}

/// Copies `from` to `to`, holding what it read while `paused`, until either side closes or
/// the proxy refuses.
fn pump(mut from: TcpStream, mut to: TcpStream, paused: &AtomicBool, refusing: &AtomicBool) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        while paused.load(Ordering::Acquire) && !refusing.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if refusing.load(Ordering::Acquire) || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

#[test]
fn a_host_cut_off_from_etcd_stops_numbering_before_its_partitions_are_taken_over() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = cluster.url();
    let store = cluster.store(Duration::from_secs(10));
    let member = cluster.endpoints[0]
        .trim_start_matches("http://")
        .to_string();
    let proxy = Proxy::start(member);
    let dir = cluster.dir.path();
    let (log_a, log_b) = (dir.join("a.log"), dir.join("b.log"));
    let cut_off_url = format!("etcd://127.0.0.1:{}", proxy.port);
    let a = spawn_host(&cut_off_url, "a", "4", "800", "400", &log_a, &[]);
    let b = spawn_host(&url, "b", "4", "800", "400", &log_b, &[]);
    let of_a = all_owning(&store, &["a", "b"], 4, "a");
    std::thread::sleep(Duration::from_millis(500));
    proxy.pause(true);
    let cut = Instant::now();
    // Poll both: when a says it stopped numbering, and when b owns all of a's partitions.
    let (mut stopped, mut taken) = (None, None);
    let deadline = cut + Duration::from_secs(20);
    while stopped.is_none() || taken.is_none() {
        assert!(
            Instant::now() < deadline,
            "stopped {stopped:?}, taken {taken:?}"
        );
        if stopped.is_none()
            && std::fs::read_to_string(&log_a).is_ok_and(|l| l.contains("stopped numbering"))
        {
            stopped = Some(cut.elapsed());
        }
        if taken.is_none()
            && store.owners(Duration::from_secs(2)).is_ok_and(|o| {
                of_a.iter()
                    .all(|p| o.owners.get(p).is_some_and(|x| x.host == "b"))
            })
        {
            taken = Some(cut.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "cut off: a stopped numbering after {stopped:?}, b owned a's partitions after {taken:?}"
    );
    assert!(
        stopped < taken,
        "a stopped at {stopped:?}, after b took over at {taken:?}"
    );
    proxy.pause(false);
    let summary_a = finished(a, "a", &log_a);
    let summary_b = finished(b, "b", &log_b);
    assert!(
        count(&summary_b, "takeovers") >= of_a.len() as u64,
        "{summary_b}"
    );
    assert!(!summary_a.is_empty());
    plogs_hold(&url, &store, 4, 800);
}

#[test]
fn a_host_cut_off_for_longer_than_its_store_wait_stops_with_one_error_not_a_flood_of_retries() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let store = cluster.store(Duration::from_secs(10));
    let member = cluster.endpoints[0]
        .trim_start_matches("http://")
        .to_string();
    let proxy = Proxy::start(member);
    let log = cluster.dir.path().join("a.log");
    let cut_off_url = format!("etcd://127.0.0.1:{}", proxy.port);
    // Far more events than it can number before the cut: it is still running then.
    let mut a = spawn_host(
        &cut_off_url,
        "a",
        "2",
        "1000000",
        "400",
        &log,
        &["--store-wait-s", "6"],
    );
    all_owning(&store, &["a"], 2, "a");
    // Every request fails at once (connections closed), as when the cluster is stopped.
    proxy.refuse();
    let cut = Instant::now();
    let status = wait_exit_or_kill(&mut a, Duration::from_secs(45));
    let stopped = cut.elapsed();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.is_some_and(|s| !s.success()),
        "a cut-off host did not stop with an error within 45 s: {status:?}\n{text}"
    );
    // It stops after its store wait (and the lease's TTL before it), not much later.
    assert!(
        stopped < Duration::from_secs(30),
        "stopped {stopped:?} after the cut\n{text}"
    );
    // Registering again is tried with backoff and warned about at most once per 5 s (and
    // the last failure is in the error that stops it).
    let tries = text.matches("grant a lease").count();
    assert!(
        tries <= 4,
        "{tries} lines about registering again in {stopped:?}\n{text}"
    );
}

#[test]
fn the_etcd_leader_killed_during_a_takeover_delays_it_but_the_workload_completes() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = cluster.url();
    let store = cluster.store(Duration::from_secs(20));
    let mut hosts = spawn_hosts(&cluster, &["a", "b"], "4", "600", "400");
    let of_b = all_owning(&store, &["a", "b"], 4, "b");
    std::thread::sleep(Duration::from_millis(500));
    let (mut b, _) = hosts.remove(1);
    b.kill().expect("SIGKILL b");
    let _ = b.wait();
    let killed = Instant::now();
    let leader = (0..3).find(|&m| cluster.is_leader(m)).expect("a leader");
    cluster.kill(leader);
    wait_owners(
        &store,
        Duration::from_secs(30),
        "b's partitions taken over",
        |o| {
            of_b.iter()
                .all(|p| o.owners.get(p).is_some_and(|x| x.host == "a"))
        },
    );
    eprintln!(
        "SIGKILL of a host, then of the etcd leader: the partitions taken over after {:?}",
        killed.elapsed()
    );
    let (a, log_a) = hosts.remove(0);
    let summary = finished(a, "a", &log_a);
    assert!(
        count(&summary, "takeovers") >= of_b.len() as u64,
        "{summary}"
    );
    plogs_hold(&url, &store, 4, 600);
}
