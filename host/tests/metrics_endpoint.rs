//! `sequencer-host run --metrics ADDR` on a redb store, scraped over TCP while it runs: the
//! readiness probe answers 200 once every partition recovered, the series are there, and the
//! PLog offsets they show grow between two scrapes.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{component_path, host};

const PARTITIONS: u32 = 4;

/// A loopback port free now (the host binds it a moment later).
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("its address").port()
}

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

#[test]
fn a_run_with_metrics_is_ready_and_its_plog_offsets_grow_between_scrapes() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let port = free_port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let log = tmp.path().join("run.log");
    let child = host()
        .args(["run", "--data"])
        .arg(&data)
        .arg("--component")
        .arg(component_path())
        .args([
            "--partitions",
            &PARTITIONS.to_string(),
            "--workspaces",
            "50",
        ])
        // 4 x 500 commands at 250 a second: about 8 s, long enough to scrape twice.
        .args(["--events", "500", "--rate", "250", "--fail-rate", "0.02"])
        // A port alone: loopback.
        .args(["--metrics", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("start sequencer-host run");
    let mut run = Running(child);
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();

    // Ready once every partition recovered from its (empty) PLog: a bounded wait.
    let deadline = Instant::now() + Duration::from_secs(60);
    let ready = loop {
        if let Some((200, body)) = get(addr, "/readyz") {
            break body;
        }
        assert!(
            run.0.try_wait().expect("poll").is_none(),
            "the run ended before it was ready:\n{}",
            log_text()
        );
        assert!(
            Instant::now() < deadline,
            "not ready within 60 s: {:?}\n{}",
            get(addr, "/readyz"),
            log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
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
    assert_eq!(after.len(), PARTITIONS as usize, "{second}");
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
        PARTITIONS as usize
    );

    // The run ends by itself, and says so; its endpoint goes with it.
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = run.0.try_wait().expect("poll") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the run did not end within 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "the run failed:\n{}", log_text());
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
