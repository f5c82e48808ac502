//! The main job end to end: `run`, a restart that resumes, `inspect` and `check`.

#![cfg(feature = "cli")]

mod common;

use common::{component_path, run_host, small_run, text};

#[test]
fn a_fresh_run_prints_the_summary_and_a_restart_continues_without_a_gap() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");

    let first = small_run(&data, 50);
    let (stdout, stderr) = text(&first);
    assert!(first.status.success(), "{stdout}{stderr}");
    for row in [
        "events  ",
        "durable events/s",
        "durable appends",
        "ack latency             p50 ",
        "events per fsync",
        "numbers wlog-offset",
        "numbers rec-id",
        "numbers crec-id",
        "flushes",
        "actualizations",
        "time actualizing",
        "an empty store",
    ] {
        assert!(
            stdout.contains(row),
            "{row:?} missing from the summary:\n{stdout}"
        );
    }
    assert!(data.join("FORMAT").is_file() && data.join("store.redb").is_file());

    let second = small_run(&data, 50);
    let (stdout, stderr) = text(&second);
    assert!(second.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("started from") && stdout.contains("200 events: replayed"),
        "the restart resumed from the first run's 200 events:\n{stdout}"
    );
    assert!(stdout.contains("ok: 400 PLog events"), "{stdout}");

    let check = run_host(&["check", "--data", data.to_str().expect("utf-8")]);
    let (stdout, stderr) = text(&check);
    assert!(check.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("check passed: 4 partitions, 400 PLog events"),
        "{stdout}"
    );
    for p in 0..4 {
        assert!(
            stdout.contains(&format!("partition {p}: ok: 100 events")),
            "{stdout}"
        );
    }
}

#[test]
fn inspect_shows_the_plog_tail_and_the_sequences_view_of_a_partition() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    assert!(small_run(&data, 30).status.success());
    let out = run_host(&[
        "inspect",
        "--data",
        data.to_str().expect("utf-8"),
        "--partition",
        "2",
        "--tail",
        "3",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("partition 2: PLog tail (3 of 30 events)"),
        "{stdout}"
    );
    for offset in 28..=30 {
        assert!(
            stdout.contains(&format!("\n{offset:>8}  ")),
            "offset {offset} in the tail:\n{stdout}"
        );
    }
    assert!(stdout.contains("wlog-offset="), "{stdout}");
    assert!(
        stdout.contains(r#"{"cmd":"c.orders.Place""#),
        "payloads shown:\n{stdout}"
    );
    assert!(stdout.contains("partition 2: sequences view"), "{stdout}");
    assert!(stdout.contains("rec-id"), "{stdout}");
}

#[test]
fn the_memory_store_runs_the_workload_and_writes_no_data_dir() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let out = run_job(&data, &["--store", "memory", "--events", "200"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("memory (nothing kept)"), "{stdout}");
    assert!(stdout.contains("ok: 400 PLog events"), "{stdout}");
    assert!(!data.exists());
    assert!(
        row(&stdout, "own tail").starts_with("not used on this store"),
        "{stdout}"
    );
    let off = run_job(
        &data,
        &["--store", "memory", "--events", "10", "--own-tail", "off"],
    );
    let (stdout, stderr) = text(&off);
    assert!(off.status.success(), "{stdout}{stderr}");
    assert_eq!(row(&stdout, "own tail"), "off (--own-tail off)");
}

#[test]
fn the_latency_log_holds_each_acknowledged_event_with_its_time_and_the_summarys_latencies() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let log = tmp.path().join("acks.txt");
    let unix_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_millis() as u64
    };
    let before = unix_ms();
    let out = run_job(
        &data,
        &[
            "--events",
            "150",
            "--fail-rate",
            "0",
            "--batch-size",
            "10",
            "--latency-log",
            log.to_str().expect("utf-8"),
        ],
    );
    let after = unix_ms();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let lines = std::fs::read_to_string(&log).expect("the latency log");
    let mut us = Vec::new();
    for line in lines.lines() {
        let (ms, lat) = line
            .split_once(' ')
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u32>().ok()?)))
            .unwrap_or_else(|| panic!("not `UNIX_MS LATENCY_US`: {line:?}"));
        assert!(
            (before..=after).contains(&ms),
            "{ms} outside the run ({before}..={after})"
        );
        us.push(lat);
    }
    assert_eq!(us.len(), 300, "one line per acknowledged event of 2 x 150");
    // The summary's percentiles are those of the logged latencies.
    us.sort_unstable();
    let at = |q: f64| {
        let us = u64::from(us[(us.len() as f64 * q).ceil() as usize - 1]);
        format!(
            "{:.1} ms",
            std::time::Duration::from_micros(us).as_secs_f64() * 1000.0
        )
    };
    let summary = row(&stdout, "ack latency");
    let expected = format!("p50 {}, p99 {}, max {}", at(0.5), at(0.99), at(1.0));
    assert!(
        summary.starts_with(&expected),
        "{summary:?} against the log's {expected:?}"
    );
}

/// `run` on `data` with the test component, 2 partitions and `args`.
fn run_job(data: &std::path::Path, args: &[&str]) -> std::process::Output {
    let component = component_path();
    let mut all = vec![
        "run",
        "--data",
        data.to_str().expect("utf-8"),
        "--component",
        component.to_str().expect("utf-8"),
        "--partitions",
        "2",
    ];
    all.extend_from_slice(args);
    run_host(&all)
}

/// The summary's value for `metric` (the text after the metric's column).
fn row<'a>(summary: &'a str, metric: &str) -> &'a str {
    summary
        .lines()
        .find(|l| l.starts_with(&format!("{metric}  ")))
        .map(|l| l[metric.len()..].trim())
        .unwrap_or_else(|| panic!("no {metric:?} row in:\n{summary}"))
}

#[test]
fn batches_share_durable_appends_and_one_event_per_write_stays_available_for_comparison() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let run = |batch: &str| {
        run_job(
            &data,
            &["--events", "300", "--fail-rate", "0", "--batch-size", batch],
        )
    };
    let out = run("1");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(row(&stdout, "batches"), "one event per durable append");
    assert_eq!(row(&stdout, "durable appends"), "600 (1.0 events each)");

    let out = run("100");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        row(&stdout, "batches").starts_with("up to 100 events"),
        "{stdout}"
    );
    assert_eq!(
        row(&stdout, "durable appends"),
        "6 (100.0 events each)",
        "each partition appends its 300 events in 3 writes"
    );
    assert!(stdout.contains("ok: 1200 PLog events"), "{stdout}");
}

#[test]
fn at_an_offered_rate_a_batch_goes_once_its_first_event_has_waited_the_longest_wait() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    // 1,000 commands/s per partition and a 2 ms wait: batches of a few events, not 100.
    let out = run_job(
        &data,
        &[
            "--events",
            "100",
            "--fail-rate",
            "0",
            "--rate",
            "2000",
            "--batch-wait-ms",
            "2",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        row(&stdout, "batches").ends_with("2000 commands/s offered"),
        "{stdout}"
    );
    let appends: u64 = row(&stdout, "durable appends")
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count of appends");
    // Cut by the wait, a partition appends several times (about 34 on an idle machine; 3 or
    // 4 while another build shares the cores and each fsync takes 30 ms, as events wait behind
    // a write in flight); cut only by the batch size, it would append its 100 events once.
    assert!(
        appends >= 4,
        "200 events arriving over 0.1 s in batches cut at 2 ms: {appends} appends\n{stdout}"
    );
    assert!(stdout.contains("ok: 200 PLog events"), "{stdout}");
}

#[test]
fn rust_log_overrides_quiet_and_no_color_keeps_a_terminals_log_plain() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let component = common::component_path();
    let run = |data: &std::path::Path| {
        let mut c = common::host();
        c.args(["run", "--data"])
            .arg(data)
            .arg("--component")
            .arg(&component)
            .args(["--partitions", "1", "--events", "5"]);
        c
    };
    // RUST_LOG wins over --quiet (which common::host passes): the debug line shows.
    let out = run(&data).env("RUST_LOG", "debug").output().expect("run");
    let (_, stderr) = common::text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("loaded component"), "{stderr}");
    // Without it, --quiet shows nothing.
    let quiet = run(&data).env_remove("RUST_LOG").output().expect("run");
    assert_eq!(common::text(&quiet).1, "", "--quiet: no log lines");

    // On a terminal (script(1) gives the run one) log lines are coloured, unless NO_COLOR.
    let on_terminal = |no_color: Option<&str>| {
        let cmd = format!(
            "{} --no-progress run --data {} --component {} --partitions 1 --events 5",
            common::BIN,
            data.display(),
            component.display()
        );
        let mut c = std::process::Command::new("script");
        c.args(["-qec", &cmd, "/dev/null"]).env_remove("RUST_LOG");
        match no_color {
            Some(v) => c.env("NO_COLOR", v),
            None => c.env_remove("NO_COLOR"),
        };
        let out = c.output().expect("run script(1)");
        assert!(out.status.success(), "{:?}", common::text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(
        on_terminal(None).contains("\u{1b}["),
        "coloured on a terminal"
    );
    let plain = on_terminal(Some("1"));
    assert!(plain.contains("INFO"), "{plain}");
    assert!(
        !plain.contains("\u{1b}["),
        "NO_COLOR: no escape codes:\n{plain}"
    );
    assert!(
        on_terminal(Some("")).contains("\u{1b}["),
        "an empty NO_COLOR is unset"
    );
}
