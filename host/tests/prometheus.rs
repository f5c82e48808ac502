//! A real Prometheus (Debian's, `scripts/prometheus-server.sh`) scraping `sequencer-host run
//! --metrics` while it runs: through Prometheus's HTTP API the target is up, every partition's
//! series are there and its PLog offset grows between two queries; `promtool check metrics`
//! passes on the host's text. Skipped, saying so, when Prometheus cannot be had outside CI.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::prometheus::Prometheus;
use common::{component_path, host};

const PARTITIONS: usize = 4;

/// Kills the run if the test fails before it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

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
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("a free port");
        l.local_addr().expect("its address").port()
    };
    let log = tmp.path().join("run.log");
    let child = host()
        .args(["run", "--data"])
        .arg(tmp.path().join("data"))
        .arg("--component")
        .arg(component_path())
        .args([
            "--partitions",
            &PARTITIONS.to_string(),
            "--workspaces",
            "50",
        ])
        // 4 x 1,000 commands at 200 a second: about 20 s, several scrapes a second apart.
        .args(["--events", "1000", "--rate", "200"])
        .args(["--metrics", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("start sequencer-host run");
    let _run = Running(child);
    let target = format!("127.0.0.1:{port}");
    prometheus.scrape(&target);
    let context = || {
        format!(
            "run log:\n{}\nPrometheus log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default(),
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
