//! A real Prometheus (Debian's, `scripts/prometheus-server.sh`) scraping `sequencer-host run
//! --metrics` while it runs: through Prometheus's HTTP API the target is up, every partition's
//! series are there and its PLog offset grows between two queries; `promtool check metrics`
//! passes on the host's text; and with two hosts on an etcd cluster, the one killed goes down and
//! its partitions' takeover shows up on the successor. Skipped, saying so, when Prometheus (or
//! etcd) cannot be had outside CI.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::metrics_run::{MetricsRun, redb_workload};
use common::prometheus::Prometheus;

const PARTITIONS: usize = 4;

/// Polls `f` every 200 ms until it answers, for at most `within`.
fn wait_for<T>(within: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Each partition's value of `promql` (a per-partition series), keyed by partition.
fn by_partition(p: &Prometheus, promql: &str) -> std::collections::BTreeMap<String, f64> {
    (p.query(promql).into_iter())
        .filter_map(|(labels, v)| Some((labels["partition"].as_str()?.to_string(), v)))
        .collect()
}

#[test]
fn prometheus_scrapes_a_running_host_and_its_plog_offsets_grow() {
    let Some(prometheus) = Prometheus::start() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    // 4 x 1,000 commands at 200 a second: about 20 s, several scrapes a second apart.
    let args = redb_workload(&tmp.path().join("data"), PARTITIONS, 1000, 200);
    let run = MetricsRun::start(tmp.path(), "run.log", &args);
    let target = run.target();
    prometheus.scrape(&[&target]);
    let context = || {
        format!(
            "run log:\n{}\nPrometheus log:\n{}",
            run.log(),
            prometheus.log()
        )
    };

    // The target is up, and every partition's offset has been scraped.
    let first = wait_for(
        Duration::from_secs(30),
        "the host's series in Prometheus",
        || {
            let up = prometheus.query("up{job=\"sequencer\"}");
            let offsets = by_partition(&prometheus, "sequencer_plog_next_offset");
            (up.first().is_some_and(|(_, v)| *v == 1.0) && offsets.len() == PARTITIONS)
                .then_some(offsets)
        },
    );
    let ready = prometheus.query("sum(sequencer_partition_state{state=\"ready\"})");
    assert!(!ready.is_empty(), "no partition state: {}", context());
    for family in [
        "sequencer_appended_events_total",
        "sequencer_append_seconds_bucket",
        "sequencer_view_next_offset",
        "sequencer_actualizations_total",
        "sequencer_appends_refused_total",
        "sequencer_unflushed_numbers",
        "sequencer_damaged_events",
    ] {
        assert!(
            !prometheus.query(family).is_empty(),
            "{family} not in Prometheus\n{}",
            context()
        );
    }

    // A few scrapes later, every partition's PLog offset has grown, and so has the rate of
    // durable events Prometheus computes from the counter.
    let later = wait_for(Duration::from_secs(20), "PLog offsets growing", || {
        let now = by_partition(&prometheus, "sequencer_plog_next_offset");
        (now.len() == PARTITIONS && now.iter().all(|(p, v)| *v > first[p])).then_some(now)
    });
    assert!(later.values().all(|&v| v > 1.0), "{later:?}");
    let rate = wait_for(Duration::from_secs(20), "a durable events rate", || {
        let r = prometheus.query("sum(rate(sequencer_appended_events_total[5s]))");
        r.first().map(|(_, v)| *v).filter(|v| *v > 0.0)
    });
    assert!(rate > 10.0, "{rate} durable events/s at 200 commands/s");

    // promtool accepts the host's text (the Prometheus text format, asked for by Accept).
    let mut s = TcpStream::connect(&target).expect("connect to the host");
    write!(s, "GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n").expect("request");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("answer");
    let (_, body) = answer.split_once("\r\n\r\n").expect("a body");
    let mut promtool = std::process::Command::new(Prometheus::promtool())
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start promtool");
    promtool
        .stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("feed promtool");
    let checked = promtool.wait_with_output().expect("promtool");
    assert!(
        checked.status.success(),
        "promtool check metrics:\n{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}

/// Two hosts of one deployment on an etcd cluster, each with `--metrics`, scraped by one
/// Prometheus: both hold leases and own partitions; host `a` is killed (SIGKILL), its target
/// goes down, and `b`'s takeovers counter, read through Prometheus, shows it took them.
#[cfg(feature = "etcd")]
#[test]
fn prometheus_sees_a_killed_host_s_partitions_taken_over_by_its_successor() {
    use common::etcd_cluster::EtcdCluster;
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let Some(prometheus) = Prometheus::start() else {
        return;
    };
    let url = cluster.url();
    let spawn = |name: &str| {
        let log = format!("{name}.log");
        let args = ["--store", &url, "--partitions", "4", "--workspaces", "50"];
        let args = [&args[..], &["--events", "3000", "--host-name", name]].concat();
        let args = [&args[..], &["--lease-ttl-s", "2", "--rate", "300"]].concat();
        MetricsRun::start(cluster.dir.path(), &log, &args)
    };
    let (mut host_a, host_b) = (spawn("a"), spawn("b"));
    let (a, b) = (host_a.target(), host_b.target());
    prometheus.scrape(&[&a, &b]);
    let (log_a, log_b) = (host_a.log.clone(), host_b.log.clone());
    let context = || {
        let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
        format!(
            "a:\n{}\nb:\n{}\nPrometheus:\n{}",
            read(&log_a),
            read(&log_b),
            prometheus.log()
        )
    };
    let instance =
        |labels: &serde_json::Value| labels["instance"].as_str().unwrap_or("").to_string();

    // Both up, each owning and numbering partitions, each with its lease's time left.
    wait_for(
        Duration::from_secs(40),
        "both hosts ready and owning",
        || {
            let ready =
                prometheus.query("sum by (instance) (sequencer_partition_state{state=\"ready\"})");
            let owning: Vec<String> = (ready.iter())
                .filter(|(_, v)| *v >= 1.0)
                .map(|(l, _)| instance(l))
                .collect();
            (owning.contains(&a) && owning.contains(&b)).then_some(())
        },
    );
    let leases = prometheus.query("sequencer_lease_time_left_seconds");
    assert_eq!(leases.len(), 2, "{leases:?}\n{}", context());
    assert!(leases.iter().all(|(_, v)| *v > 0.0), "{leases:?}");
    let takeovers_of_b = || {
        (prometheus.query(&format!("sequencer_takeovers_total{{instance=\"{b}\"}}")))
            .first()
            .map_or(0.0, |(_, v)| *v)
    };
    let before = takeovers_of_b();

    host_a.child.kill().expect("SIGKILL a");
    let _ = host_a.child.wait();
    let taken = wait_for(
        Duration::from_secs(30),
        "b's takeovers in Prometheus",
        || {
            let now = takeovers_of_b();
            (now > before).then_some(now)
        },
    );
    wait_for(Duration::from_secs(10), "a's target down", || {
        let up = prometheus.query(&format!("up{{instance=\"{a}\"}}"));
        up.first().filter(|(_, v)| *v == 0.0).map(|_| ())
    });
    // Every partition is b's once it took a's (each takeover counted as it happens).
    let state_of_b = format!(
        "sum(sequencer_partition_state{{instance=\"{b}\",state=~\"ready|not_now|actualizing\"}})"
    );
    let owned = wait_for(Duration::from_secs(30), "b owning every partition", || {
        let owned = prometheus.query(&state_of_b);
        owned.first().map(|(_, v)| *v).filter(|v| *v == 4.0)
    });
    assert_eq!(owned, 4.0, "{}", context());
    eprintln!("b's takeovers through Prometheus: {before} before a's SIGKILL, {taken} after");
}
