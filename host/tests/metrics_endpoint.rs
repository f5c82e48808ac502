//! `sequencer-host run --metrics ADDR` on a redb store, scraped over TCP while it runs: the
//! readiness probe answers 200 once every partition recovered, the series are there, and the
//! PLog offsets they show grow between two scrapes; and the Grafana dashboard in `docs/` queries
//! only the families and labels such a scrape shows.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::host;
use common::metrics_run::{MetricsRun, redb_workload};

const PARTITIONS: usize = 4;

/// `GET path` on `addr`: the status and the body, or `None` when nothing answers (yet).
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// Each partition's value of the per-partition gauge or counter `name` in a scrape.
fn per_partition(text: &str, name: &str) -> BTreeMap<u32, f64> {
    let prefix = format!("{name}{{partition=\"");
    (text.lines())
        .filter_map(|l| {
            let rest = l.strip_prefix(&prefix)?;
            let (p, value) = rest.split_once("\"} ")?;
            Some((p.parse().ok()?, value.parse().ok()?))
        })
        .collect()
}

/// A run on a fresh redb store with `--metrics PORT`, its log in a file of its own.
struct Run {
    run: MetricsRun,
    addr: SocketAddr,
    _tmp: tempfile::TempDir,
}

impl Run {
    /// `run` over [`PARTITIONS`] partitions, `events` each at `rate` commands a second.
    fn start(events: u64, rate: u64) -> Self {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut args = redb_workload(&tmp.path().join("data"), PARTITIONS, events, rate);
        args.extend(["--fail-rate".to_string(), "0.02".to_string()]);
        let run = MetricsRun::start(tmp.path(), "run.log", &args);
        Self {
            addr: ([127, 0, 0, 1], run.port).into(),
            run,
            _tmp: tmp,
        }
    }

    fn log(&self) -> String {
        self.run.log()
    }

    /// Waits (at most 60 s) for `/readyz` to answer 200, and returns what it said.
    fn ready(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some((200, body)) = get(self.addr, "/readyz") {
                return body;
            }
            assert!(
                self.run.child.try_wait().expect("poll").is_none(),
                "the run ended before it was ready:\n{}",
                self.log()
            );
            assert!(
                Instant::now() < deadline,
                "not ready within 60 s: {:?}\n{}",
                get(self.addr, "/readyz"),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn a_run_with_metrics_is_ready_and_its_plog_offsets_grow_between_scrapes() {
    // 4 x 500 commands at 250 a second: about 8 s, long enough to scrape twice.
    let mut r = Run::start(500, 250);
    let addr = r.addr;
    // Ready once every partition recovered from its (empty) PLog.
    let ready = r.ready();
    assert_eq!(ready.trim(), format!("ready: {PARTITIONS} partitions"));
    assert_eq!(get(addr, "/healthz").map(|r| r.0), Some(200));

    let (status, first) = get(addr, "/metrics").expect("a first scrape");
    assert_eq!(status, 200, "{first}");
    std::thread::sleep(Duration::from_millis(1500));
    let (_, second) = get(addr, "/metrics").expect("a second scrape");

    for family in [
        "# TYPE sequencer_plog_next_offset gauge",
        "# TYPE sequencer_view_next_offset gauge",
        "# TYPE sequencer_appends counter",
        "# TYPE sequencer_append_seconds histogram",
        "# TYPE sequencer_actualization_seconds histogram",
        "# TYPE sequencer_numbers_read_seconds histogram",
        "# TYPE sequencer_partition_state gauge",
        "# TYPE sequencer_unflushed_numbers gauge",
        "# TYPE sequencer_appends_refused counter",
        "# TYPE sequencer_damaged_events gauge",
    ] {
        assert!(second.contains(family), "{family} missing:\n{second}");
    }
    assert!(second.ends_with("# EOF\n"), "{second}");
    let (before, after) = (
        per_partition(&first, "sequencer_plog_next_offset"),
        per_partition(&second, "sequencer_plog_next_offset"),
    );
    assert_eq!(after.len(), PARTITIONS, "{second}");
    for (p, now) in &after {
        let was = before.get(p).copied().unwrap_or(0.0);
        assert!(
            *now > was,
            "partition {p}: PLog offset {was} then {now}, 1.5 s later"
        );
    }
    let appended = per_partition(&second, "sequencer_appended_events_total");
    assert!(appended.values().all(|&n| n > 0.0), "{appended:?}");
    let ready_states = per_partition(&second, "sequencer_partition_state");
    assert!(ready_states.is_empty(), "state carries a second label");
    for p in 0..PARTITIONS {
        let series = format!("sequencer_partition_state{{partition=\"{p}\",state=\"lost\"}} 0");
        assert!(second.contains(&series), "{series} missing:\n{second}");
    }
    assert_eq!(
        per_partition(&second, "sequencer_actualizations_total").len(),
        PARTITIONS
    );

    // The run ends by itself, and says so; its endpoint goes with it.
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = r.run.child.try_wait().expect("poll") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the run did not end within 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "the run failed:\n{}", r.log());
    assert!(
        get(addr, "/metrics").is_none(),
        "still served after the run"
    );
}

#[test]
fn help_says_a_port_alone_is_loopback() {
    let out = host().args(["run", "--help"]).output().expect("run --help");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--metrics <ADDR>"), "{help}");
    assert!(help.contains("loopback"), "{help}");
}

/// The families a scrape describes (`# TYPE`), each with the names its samples may carry.
fn sample_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let (name, kind) = rest.split_once(' ').expect("# TYPE name type");
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_sum", "_count"],
            _ => &[""],
        };
        names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
    }
    names
}

/// Every label name the samples of a scrape carry.
fn label_names(text: &str) -> BTreeSet<String> {
    (text.lines())
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| Some(l.split_once('{')?.1.split_once('}')?.0.to_string()))
        .flat_map(|labels| {
            (labels.split(','))
                .filter_map(|kv| Some(kv.split_once('=')?.0.to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Identifiers in a PromQL expression that name series (`sequencer_…`), and the label names it
/// uses in matchers (`{name=…}`) and groupings (`by (a, b)`).
fn promql_names(expr: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut series = BTreeSet::new();
    let mut labels = BTreeSet::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut in_string = false;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '"' {
            in_string = !in_string;
            i += 1;
            continue;
        }
        if in_string || !word(chars[i]) || (i > 0 && word(chars[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && word(chars[i]) {
            i += 1;
        }
        let ident: String = chars[start..i].iter().collect();
        let before = chars[..start].iter().rev().find(|c| !c.is_whitespace());
        let after = chars[i..].iter().find(|c| !c.is_whitespace());
        if ident.starts_with("sequencer_") {
            series.insert(ident);
        } else if matches!(before, Some('{' | ',')) && matches!(after, Some('=' | '!')) {
            labels.insert(ident);
        }
    }
    for grouping in expr.split("by (").skip(1) {
        let inner = grouping.split(')').next().unwrap_or_default();
        labels.extend(inner.split(',').map(|l| l.trim().to_string()));
    }
    (series, labels)
}

/// Every `expr` string anywhere in `v` (panels, their targets, rows' panels).
fn collect_exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("expr", serde_json::Value::String(e)) => out.push(e.clone()),
                    _ => collect_exprs(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect_exprs(i, out)),
        _ => {}
    }
}

#[test]
fn the_dashboard_queries_only_families_and_labels_a_host_exports() {
    let mut r = Run::start(200, 400);
    r.ready();
    let (status, text) = get(r.addr, "/metrics").expect("a scrape");
    assert_eq!(status, 200, "{text}");
    let exported = sample_names(&text);
    // Prometheus adds the target's labels (`instance`, `job`).
    let mut labels = label_names(&text);
    labels.extend(["instance", "job"].map(String::from));

    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/grafana-dashboard.json");
    let json = std::fs::read_to_string(&path).expect("read docs/grafana-dashboard.json");
    let dashboard: serde_json::Value = serde_json::from_str(&json).expect("the dashboard is JSON");
    let mut exprs = Vec::new();
    collect_exprs(&dashboard, &mut exprs);
    assert!(exprs.len() >= 20, "{} queries", exprs.len());
    let mut used = BTreeSet::new();
    for expr in &exprs {
        let (series, used_labels) = promql_names(expr);
        assert!(!series.is_empty(), "a query of no sequencer series: {expr}");
        for s in &series {
            assert!(
                exported.contains(s),
                "the dashboard queries {s}, which a host does not export: {expr}\nexported: {exported:?}"
            );
        }
        for l in &used_labels {
            assert!(
                labels.contains(l),
                "the dashboard uses label {l}, which no series has: {expr}\nlabels: {labels:?}"
            );
        }
        used.extend(series);
    }
    // What the dashboard is for: throughput, ack latency, view lag, actualizations, fence
    // refusals, leases.
    for needed in [
        "sequencer_appended_events_total",
        "sequencer_append_seconds_bucket",
        "sequencer_plog_next_offset",
        "sequencer_view_next_offset",
        "sequencer_actualizations_total",
        "sequencer_appends_refused_total",
        "sequencer_lease_time_left_seconds",
        "sequencer_takeovers_total",
    ] {
        assert!(
            used.contains(needed),
            "the dashboard does not show {needed}"
        );
    }
}

#[test]
fn promql_names_finds_series_matchers_and_groupings() {
    let (series, labels) = promql_names(
        "histogram_quantile(0.99, sum by (instance, le) (rate(sequencer_append_seconds_bucket{instance=~\"$i\",state!=\"a,b=c\"}[5m]))) - sequencer_x",
    );
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        series,
        set(&["sequencer_append_seconds_bucket", "sequencer_x"])
    );
    assert_eq!(labels, set(&["instance", "le", "state"]));
}
