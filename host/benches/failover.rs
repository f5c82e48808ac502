//! Failover and handover times of many hosts on one etcd cluster, seen from outside: three
//! `sequencer-host run --host-name` processes share the partitions; one is SIGKILLed (its
//! partitions fail over to the survivors when its lease expires) or SIGTERMed (it hands them
//! over), then started again under its name (the others hand it back its share). A watch on
//! the cluster's `owners/` and `plog/` keys times each partition:
//!
//! - **failover**: from the SIGKILL to the first PLog event the successor appended (the
//!   first `plog/<p>/` put after the new `owners/<p>` key; a put seen is committed, so
//!   durable);
//! - **handover** (on SIGTERM, and on a join): from the old owner's last PLog event before it
//!   deleted `owners/<p>` to the new owner's first after it created `owners/<p>`.
//!
//! The times are when the watch saw the events, in this process, on one clock. The run ends
//! with every host SIGTERMed and `sequencer-host check` on the store, which must pass.
//!
//! On the composite store with its PLog in a directory (`FAILOVER_URL=etcd://…?plog=objects:DIR`
//! and `FAILOVER_PLOG_DIR=DIR`) no PLog event passes through the cluster: a thread lists each
//! partition's `events/` folder every 2 ms instead, and a new object there is a PLog event seen
//! (a new owner's first one can be seen a poll, or an append, later than its `owners/` key),
//! unless it is a new owner's takeover mark.
//!
//! `scripts/bench-failover.sh` builds the release host, starts a fresh 3-member cluster and
//! runs this with `FAILOVER_URL=etcd://HOST:PORT,...` and `FAILOVER_HOST=<sequencer-host>`.
//! Knobs: `FAILOVER_KILLS` (20), `FAILOVER_TERMS` (10), `FAILOVER_TTL_S` (3),
//! `FAILOVER_HOSTS` (3), `FAILOVER_PARTITIONS` (6), `FAILOVER_RATE` (commands/s offered by
//! each host, 2,000), `FAILOVER_LOGS` (the directory for the hosts' logs; a temporary one).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Client, EventType, WatchOptions};
use sequencer_host::store::etcd::{EtcdConfig, EtcdStorage};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn env_str(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        eprintln!("failover: {name} is not set (scripts/bench-failover.sh sets it)");
        std::process::exit(2)
    })
}

/// What one partition's watch events say so far.
#[derive(Default)]
struct PartitionState {
    /// When the last PLog event of this partition was seen.
    last_put: Option<Instant>,
    /// Set by the bench just before it SIGKILLs this partition's owner.
    killed_at: Option<Instant>,
    /// A transfer under way: its kind, when it started (the SIGKILL, or the old owner's last
    /// PLog event), when the old owner's key went, and when the new owner's key came.
    transfer: Option<(Transfer, Instant, Instant, Option<Instant>)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Transfer {
    Failover,
    Handover,
}

/// One partition's transfer, timed: in total and in its three phases.
#[derive(Clone, Copy, Debug)]
struct Sample {
    /// From the SIGKILL (or the old owner's last PLog event) to the new owner's first.
    total: Duration,
    /// To the old owner's key deleted: its lease expired after a kill, or its release after
    /// a handover (the batch in flight finished and flushed).
    released: Duration,
    /// From then to the new owner's key created.
    claimed: Duration,
    /// From then to the new owner's first PLog event (opening and actualizing the partition).
    opened: Duration,
}

/// Every partition's state and the samples timed so far, shared with the watch thread.
#[derive(Default)]
struct Timings {
    partitions: HashMap<u32, PartitionState>,
    failovers: Vec<Sample>,
    handovers: Vec<Sample>,
    /// The watch failed: its error (the bench stops).
    failed: Option<String>,
}

impl Timings {
    fn on_owner(&mut self, p: u32, kind: EventType, at: Instant) {
        let s = self.partitions.entry(p).or_default();
        match kind {
            EventType::Delete => {
                s.transfer = match (s.killed_at, s.last_put) {
                    (Some(killed), _) => Some((Transfer::Failover, killed, at, None)),
                    (None, Some(last)) => Some((Transfer::Handover, last, at, None)),
                    (None, None) => None,
                };
            }
            EventType::Put => {
                if let Some((_, _, _, claimed)) = &mut s.transfer {
                    *claimed = Some(at);
                }
            }
        }
    }

    fn on_plog(&mut self, p: u32, at: Instant) {
        let s = self.partitions.entry(p).or_default();
        s.last_put = Some(at);
        if let Some((transfer, from, released, Some(claimed))) = s.transfer {
            s.transfer = None;
            let sample = Sample {
                total: at.duration_since(from),
                released: released.duration_since(from),
                claimed: claimed.duration_since(released),
                opened: at.duration_since(claimed),
            };
            match transfer {
                Transfer::Failover => {
                    s.killed_at = None;
                    self.failovers.push(sample);
                }
                Transfer::Handover => self.handovers.push(sample),
            }
        }
    }
}

/// Watches `owners/` and `plog/` (one range, in revision order) and times transfers.
fn watch(endpoints: Vec<String>, timings: Arc<Mutex<Timings>>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the watch");
    let result: Result<(), String> = runtime.block_on(async {
        let mut client = Client::connect(&endpoints, None)
            .await
            .map_err(|e| e.to_string())?;
        // "owners/" .. "plog0" covers owners/* and plog/* (and no other key of the store).
        let options = WatchOptions::new().with_range("plog0");
        let mut stream =
            (client.watch("owners/", Some(options)).await).map_err(|e| e.to_string())?;
        while let Some(resp) = stream.message().await.map_err(|e| e.to_string())? {
            let at = Instant::now();
            let mut t = timings.lock().expect("timings");
            for event in resp.events() {
                let Some(key) = event.kv().and_then(|kv| kv.key_str().ok()) else {
                    continue;
                };
                let mut parts = key.split('/');
                let (Some(kind), Some(p)) = (parts.next(), parts.next()) else {
                    continue;
                };
                let Ok(p) = p.parse::<u32>() else { continue };
                match kind {
                    "owners" => t.on_owner(p, event.event_type(), at),
                    "plog" if event.event_type() == EventType::Put => t.on_plog(p, at),
                    _ => {}
                }
            }
        }
        Err("the watch ended".into())
    });
    if let Err(e) = result {
        timings.lock().expect("timings").failed = Some(e);
    }
}

/// Lists each partition's event objects under `dir` (a composite store's PLog directory) every
/// 2 ms and reports a new last object as that partition's PLog event.
fn poll_plog_dir(dir: PathBuf, timings: Arc<Mutex<Timings>>) {
    // The newest event object of each partition, by name: its first offset, and the epoch of
    // the takeover mark it follows (`<first>_<epoch>`), if any.
    let mut last: HashMap<u32, (u64, u64)> = HashMap::new();
    let key = |name: &str| -> Option<(u64, u64)> {
        match name.split_once('_') {
            Some((first, epoch)) => Some((first.parse().ok()?, epoch.parse::<u64>().ok()? + 1)),
            None => Some((name.parse().ok()?, 0)),
        }
    };
    loop {
        let folders = std::fs::read_dir(dir.join("events"))
            .into_iter()
            .flatten()
            .flatten();
        for folder in folders {
            let Some(p) = folder
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let newest = (std::fs::read_dir(folder.path())
                .into_iter()
                .flatten()
                .flatten())
            .filter_map(|e| Some((key(e.file_name().to_str()?)?, e.path())))
            .max();
            if let Some((k, path)) = newest
                && last.get(&p).is_none_or(|&seen| k > seen)
            {
                last.insert(p, k);
                // A takeover mark (a new owner's, placed before it replays) is no PLog event.
                if !is_takeover_mark(&path) {
                    timings.lock().expect("timings").on_plog(p, Instant::now());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Whether the event object at `path` is a takeover mark: an object of format 2 (`SQE2`, its
/// first offset, then its count of events) holding no events.
fn is_takeover_mark(path: &std::path::Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(b"SQE2") && b.get(12..16) == Some(&[0; 4]))
}

/// The deployment: the host processes by name.
struct Hosts {
    binary: PathBuf,
    url: String,
    logs: PathBuf,
    ttl_s: u64,
    partitions: u32,
    rate: u64,
    running: BTreeMap<String, Child>,
    starts: u32,
}

impl Hosts {
    fn start(&mut self, name: &str) {
        self.starts += 1;
        let log = self.logs.join(format!("{name}-{}.log", self.starts));
        let child = Command::new(&self.binary)
            .args(["--quiet", "--no-progress", "run", "--store", &self.url])
            .args([
                "--host-name",
                name,
                "--lease-ttl-s",
                &self.ttl_s.to_string(),
            ])
            .args(["--partitions", &self.partitions.to_string()])
            .args(["--events", "1000000000", "--workspaces", "60"])
            .args(["--rate", &self.rate.to_string(), "--batch-size", "32"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("a log file"))
            .spawn()
            .expect("start sequencer-host run --host-name");
        self.running.insert(name.to_string(), child);
    }

    fn signal(&mut self, name: &str, sig: &str) -> Child {
        let child = self.running.remove(name).expect("a running host");
        let status = Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {sig} {name}");
        child
    }
}

impl Drop for Hosts {
    /// No host outlives the bench, even one that panics.
    fn drop(&mut self) {
        for child in self.running.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Polls `done` every 20 ms until it holds, for at most `within`; panics naming `what`.
fn wait_for(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every partition owned, every host owning its even share, every new owner appending.
fn balanced(store: &EtcdStorage, hosts: &Hosts, timings: &Mutex<Timings>) -> bool {
    let Ok(owners) = store.owners(Duration::from_secs(2)) else {
        return false;
    };
    let share = hosts.partitions as usize / hosts.running.len();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for o in owners.owners.values() {
        *counts.entry(o.host.as_str()).or_default() += 1;
    }
    let t = timings.lock().expect("timings");
    owners.owners.len() == hosts.partitions as usize
        && (hosts.running.keys()).all(|h| counts.get(h.as_str()).copied().unwrap_or(0) >= share)
        && (t.partitions.values()).all(|s| s.transfer.is_none() && s.killed_at.is_none())
}

fn owned_by(store: &EtcdStorage, host: &str) -> Vec<u32> {
    let owners = store
        .owners(Duration::from_secs(5))
        .expect("read the owners");
    (owners.owners.iter())
        .filter(|(_, o)| o.host == host)
        .map(|(p, _)| *p)
        .collect()
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    // Nearest rank: the smallest sample with at least q of the samples at or below it.
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn line(what: &str, samples: &[Duration]) {
    let mut s = samples.to_vec();
    s.sort();
    if s.is_empty() {
        println!("{what:<34} no samples");
        return;
    }
    let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1000.0);
    println!(
        "{what:<34} n {:>3}  p50 {:>8}  p90 {:>8}  p99 {:>8}  max {:>8}",
        s.len(),
        ms(percentile(&s, 0.5)),
        ms(percentile(&s, 0.9)),
        ms(percentile(&s, 0.99)),
        ms(s[s.len() - 1])
    );
}

/// A sample's total and phases in milliseconds, for the progress lines.
fn brief(samples: &[Sample]) -> String {
    let ms = |d: Duration| d.as_millis();
    let each: Vec<String> = (samples.iter())
        .map(|s| {
            format!(
                "{} ({}+{}+{})",
                ms(s.total),
                ms(s.released),
                ms(s.claimed),
                ms(s.opened)
            )
        })
        .collect();
    each.join(", ")
}

/// The line of the totals, then one of each phase.
fn phases(what: &str, samples: &[Sample], released: &str) {
    line(what, &samples.iter().map(|s| s.total).collect::<Vec<_>>());
    let phase = |name: &str, f: fn(&Sample) -> Duration| {
        line(
            &format!("  {name}"),
            &samples.iter().map(f).collect::<Vec<_>>(),
        );
    };
    phase(&format!("old key gone ({released})"), |s| s.released);
    phase("then new owner's key", |s| s.claimed);
    phase("then its first PLog event", |s| s.opened);
}

fn main() {
    let url = env_str("FAILOVER_URL");
    let binary = PathBuf::from(env_str("FAILOVER_HOST"));
    let kills = env_u64("FAILOVER_KILLS", 20);
    let terms = env_u64("FAILOVER_TERMS", 10);
    let ttl_s = env_u64("FAILOVER_TTL_S", 3);
    let host_count = env_u64("FAILOVER_HOSTS", 3).max(2);
    let partitions = env_u64("FAILOVER_PARTITIONS", 6) as u32;
    let rate = env_u64("FAILOVER_RATE", 2000);
    let temp = std::env::temp_dir().join(format!("failover-{}", std::process::id()));
    let logs = std::env::var("FAILOVER_LOGS").map_or(temp, PathBuf::from);
    std::fs::create_dir_all(&logs).expect("the logs' directory");

    // The cluster's part of a composite store's URL (`etcd://…?plog=…`).
    let cluster = url.split('?').next().unwrap_or(&url);
    let config = EtcdConfig::from_url(cluster).expect("an etcd:// URL");
    let store = EtcdStorage::connect(config.clone()).expect("connect to the cluster");
    let timings = Arc::new(Mutex::new(Timings::default()));
    {
        let timings = timings.clone();
        let endpoints = config.endpoints.clone();
        std::thread::spawn(move || watch(endpoints, timings));
    }
    if let Some(dir) = std::env::var("FAILOVER_PLOG_DIR")
        .ok()
        .filter(|d| !d.is_empty())
    {
        let timings = timings.clone();
        std::thread::spawn(move || poll_plog_dir(PathBuf::from(dir), timings));
    }
    let mut hosts = Hosts {
        binary,
        url: url.clone(),
        logs: logs.clone(),
        ttl_s,
        partitions,
        rate,
        running: BTreeMap::new(),
        starts: 0,
    };
    let names: Vec<String> = (0..host_count).map(|i| format!("h{i}")).collect();
    for n in &names {
        hosts.start(n);
    }
    let settle = Duration::from_secs(30 + 4 * ttl_s);
    let wait_balanced = |hosts: &Hosts, what: &str| {
        wait_for(settle, what, || {
            if let Some(e) = &timings.lock().expect("timings").failed {
                panic!("the watch failed: {e}");
            }
            balanced(&store, hosts, &timings)
        });
        std::thread::sleep(Duration::from_millis(500));
    };
    wait_balanced(&hosts, "every host owning its share");
    eprintln!(
        "failover: {host_count} hosts, {partitions} partitions, TTL {ttl_s} s; {kills} kills, {terms} SIGTERMs (logs in {})",
        logs.display()
    );

    let mut per_kill: Vec<Duration> = Vec::new();
    let mut exits: Vec<Duration> = Vec::new();
    // The handover samples of SIGTERMs (by index); the others are the joins'.
    let mut term_handovers: Vec<std::ops::Range<usize>> = Vec::new();
    for round in 0..kills + terms {
        let name = names[round as usize % names.len()].clone();
        let owned = owned_by(&store, &name);
        let kill = round < kills;
        if kill {
            let before = timings.lock().expect("timings").failovers.len();
            let at = Instant::now();
            {
                let mut t = timings.lock().expect("timings");
                for p in &owned {
                    t.partitions.entry(*p).or_default().killed_at = Some(at);
                }
            }
            let mut child = hosts.signal(&name, "-KILL");
            let _ = child.wait();
            wait_for(
                settle,
                "the killed host's partitions appended by others",
                || timings.lock().expect("timings").failovers.len() >= before + owned.len(),
            );
            let t = timings.lock().expect("timings");
            let these = &t.failovers[before..];
            per_kill.push(these.iter().map(|s| s.total).max().unwrap_or_default());
            eprintln!(
                "kill {:>2}: {name} owned {owned:?}; failovers {}",
                round + 1,
                brief(these)
            );
        } else {
            let before = timings.lock().expect("timings").handovers.len();
            let at = Instant::now();
            let mut child = hosts.signal(&name, "-TERM");
            let status = child.wait().expect("wait for the host");
            assert!(status.success(), "{name} ended {status} on SIGTERM");
            let exit = at.elapsed();
            exits.push(exit);
            wait_for(
                settle,
                "the stopped host's partitions appended by others",
                || timings.lock().expect("timings").handovers.len() >= before + owned.len(),
            );
            let t = timings.lock().expect("timings");
            term_handovers.push(before..t.handovers.len());
            eprintln!(
                "term {:>2}: {name} owned {owned:?}; exit after {} ms; handovers {}",
                round + 1 - kills,
                exit.as_millis(),
                brief(&t.handovers[before..])
            );
        }
        let before = timings.lock().expect("timings").handovers.len();
        hosts.start(&name);
        wait_balanced(&hosts, "the restarted host owning its share");
        let t = timings.lock().expect("timings");
        eprintln!(
            "        {name} back; handovers {}",
            brief(&t.handovers[before..])
        );
    }

    for name in &names {
        let mut child = hosts.signal(name, "-TERM");
        let status = child.wait().expect("wait for a host");
        assert!(status.success(), "{name} ended {status} on SIGTERM");
    }
    let check = Command::new(&hosts.binary)
        .args(["--quiet", "--no-progress", "check", "--store", &url])
        .output()
        .expect("run check");
    assert!(
        check.status.success(),
        "check failed:\n{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );

    let t = timings.lock().expect("timings");
    let (on_term, on_join): (Vec<_>, Vec<_>) = (t.handovers.iter().enumerate())
        .partition(|(i, _)| term_handovers.iter().any(|r| r.contains(i)));
    let samples = |v: Vec<(usize, &Sample)>| v.into_iter().map(|(_, d)| *d).collect::<Vec<_>>();
    println!("failover of {host_count} hosts, {partitions} partitions, lease TTL {ttl_s} s");
    phases("failover, per partition", &t.failovers, "lease expired");
    line("failover, per kill (its slowest)", &per_kill);
    phases("handover on SIGTERM", &samples(on_term), "released");
    phases("handover on a join", &samples(on_join), "released");
    line("SIGTERM to exit", &exits);
    println!("check                              passed");
}
