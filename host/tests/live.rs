//! `check` and `inspect` beside a live run on redb: the run serves them one snapshot per
//! session on `DATA/live.sock` (`sequencer_host::store::live`), so they pass while it appends
//! and their counts grow; a stopped run is said to be in use, not corrupt, within the answer
//! deadline; a malformed request gets an error and the run goes on; a socket a killed run left
//! is ignored and replaced; and redb's integrity check catches a corrupted file.

#![cfg(all(feature = "cli", unix))]

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{host, run_host, small_run, text};

fn data_arg(data: &Path) -> &str {
    data.to_str().expect("utf-8 path")
}

/// A `run` in the background, killed (and continued first, if stopped) when dropped.
struct Run(Option<Child>);

impl Run {
    /// Starts a run of 2 partitions at an offered `rate`, `events` per partition.
    fn start(data: &Path, events: u64, rate: u64) -> Self {
        let child = host()
            .args(["run", "--data", data_arg(data), "--component"])
            .arg(common::component_path())
            .args(["--partitions", "2", "--events", &events.to_string()])
            .args(["--rate", &rate.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sequencer-host");
        Self(Some(child))
    }

    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("the run")
    }

    /// Waits for the run to end by itself and returns its output.
    fn finish(mut self) -> std::process::Output {
        let child = self.0.take().expect("the run");
        child.wait_with_output().expect("wait for the run")
    }

    fn signal(&mut self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child().id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal}");
    }

    /// Waits (bounded) until the run serves readers and has appended events.
    fn wait_until_served(&mut self, data: &Path) {
        let deadline = Instant::now() + Duration::from_secs(90);
        while Instant::now() < deadline {
            assert!(self.running(), "the run ended early");
            // A new database is about 1 MiB: twice that means events.
            let big = std::fs::metadata(data.join("store.redb")).is_ok_and(|m| m.len() > 2 << 20);
            if big && data.join("live.sock").exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the run served nothing within 90 s");
    }

    fn running(&mut self) -> bool {
        self.child().try_wait().expect("poll the run").is_none()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The number after `prefix` in `text` (the first one).
fn number_after(text: &str, prefix: &str) -> u64 {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix:?} not in {text}"));
    text[at + prefix.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after {prefix:?} in {text}"))
}

#[test]
fn check_and_inspect_beside_a_live_run_pass_on_consistent_snapshots_whose_counts_grow() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    // About 20 s of appends: 2 x 30,000 events at 3,000 a second.
    let mut run = Run::start(&data, 30_000, 3_000);
    run.wait_until_served(&data);
    let (mut checked, mut last_offset) = (0, 0);
    for round in 0..4 {
        // Only when asked for (the first round) does a check hold the run's commits, to run
        // redb's integrity check on a copy.
        let hold = round == 0;
        let mut args = vec!["check", "--data", data_arg(&data)];
        if hold {
            args.push("--hold-run");
        }
        let out = run_host(&args);
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "check beside the live run, round {round}:\n{stdout}{stderr}"
        );
        assert!(stdout.contains("a run has it open"), "{stdout}");
        if hold {
            assert!(
                stdout.contains("integrity check passed") && stdout.contains("held its commits"),
                "redb's integrity check ran on a copy taken while the run held its commits:\n{stdout}"
            );
        } else {
            assert!(
                stdout.contains("integrity check: not run beside the live run")
                    && !stdout.contains("held its commits"),
                "without --hold-run the run is never held:\n{stdout}"
            );
        }
        let events = number_after(&stdout, "check passed: 2 partitions, ");
        assert!(
            events > checked,
            "round {round}: {events} events checked, after {checked}"
        );
        checked = events;

        let out = run_host(&["inspect", "--data", data_arg(&data), "--partition", "0"]);
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "inspect beside the live run, round {round}:\n{stdout}{stderr}"
        );
        assert!(
            stdout.contains("live run: "),
            "the run's figures:\n{stdout}"
        );
        let row = (stdout.lines())
            .find(|l| l.trim_start().starts_with("0 ") && l.contains("..="))
            .unwrap_or_else(|| panic!("no row of partition 0:\n{stdout}"));
        let offset = number_after(row, "..=");
        assert!(
            offset > last_offset,
            "round {round}: partition 0 ends at {offset}, after {last_offset}"
        );
        last_offset = offset;
        assert!(run.running(), "the run goes on while it is read");
        std::thread::sleep(Duration::from_millis(300));
    }
    // The run ends by itself: its own check passes, and its socket is gone.
    let out = run.finish();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "the run:\n{stdout}{stderr}");
    assert!(
        stdout.contains("ok: 60000 PLog events"),
        "the run's own check:\n{stdout}"
    );
    assert!(
        !data.join("live.sock").exists(),
        "the run removed its socket"
    );
    let out = run_host(&["check", "--data", data_arg(&data)]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("read-only in place"), "{stdout}");
}

/// Asserts that `out` is a refusal in one line saying the store is in use by a live run.
fn assert_in_use(out: &std::process::Output, took: Duration, what: &str) {
    let (stdout, stderr) = text(out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{what}:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{what}: one line:\n{stderr}");
    assert!(stderr.contains("in use by a live run"), "{what}: {stderr}");
    assert!(!stderr.contains("corrupt"), "{what}: not corrupt: {stderr}");
    assert!(
        took < Duration::from_secs(20),
        "{what} took {took:?}, past the answer deadline of 5 s"
    );
}

#[test]
fn a_stopped_run_is_said_to_be_in_use_by_a_live_run_not_corrupt_within_the_deadline() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let mut run = Run::start(&data, 10_000_000, 5_000);
    run.wait_until_served(&data);
    run.signal("-STOP");
    for command in ["check", "inspect"] {
        let started = Instant::now();
        let out = run_host(&[command, "--data", data_arg(&data)]);
        assert_in_use(&out, started.elapsed(), command);
    }
    run.signal("-CONT");
    let out = run_host(&["check", "--data", data_arg(&data)]);
    assert!(out.status.success(), "once continued: {:?}", text(&out));
}

/// One frame (a little-endian u32 length, then the body).
fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = u32::try_from(body.len())
        .expect("small")
        .to_le_bytes()
        .to_vec();
    f.extend_from_slice(body);
    f
}

/// Reads one reply frame's body.
fn reply(stream: &mut UnixStream) -> Vec<u8> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).expect("a reply");
    let mut body = vec![0; u32::from_le_bytes(len) as usize];
    stream.read_exact(&mut body).expect("its body");
    body
}

/// Asserts that `body` is an error reply (tag 255) saying `says`.
fn assert_error(body: &[u8], says: &str) {
    assert_eq!(body.first(), Some(&255), "an error reply: {body:?}");
    let message = String::from_utf8_lossy(body);
    assert!(message.contains(says), "{says:?} not in {message:?}");
}

#[test]
fn a_malformed_request_gets_an_error_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let mut run = Run::start(&data, 10_000_000, 5_000);
    run.wait_until_served(&data);
    let mut s = UnixStream::connect(data.join("live.sock")).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    // An unknown request, a request cut short, one with bytes after it, a read before Hello
    // and another protocol version: each answered with an error, the session still open.
    for (body, says) in [
        (&[99u8, 1, 2][..], "malformed request: unknown request 99"),
        (&[3, 1][..], "malformed request"),
        (&[2, 0, 0][..], "malformed request"),
        (&[2][..], "say Hello first"),
        (&[1, 9, 0][..], "protocol version 1, not 9"),
    ] {
        s.write_all(&frame(body)).expect("send");
        assert_error(&reply(&mut s), says);
    }
    // A frame over the limit: an error, then the session is closed.
    s.write_all(&u32::MAX.to_le_bytes()).expect("send");
    assert_error(&reply(&mut s), "over the limit");
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "the session was closed");
    // Garbage and a hang-up half-way through a frame.
    let mut t = UnixStream::connect(data.join("live.sock")).expect("connect");
    t.write_all(&[200, 0, 0, 0, 1, 2, 3]).expect("send");
    drop(t);
    assert!(run.running(), "the run goes on");
    let out = run_host(&["check", "--data", data_arg(&data)]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("a run has it open"), "{stdout}");
    assert!(run.running(), "the run goes on");
}

#[test]
fn a_socket_left_by_a_killed_run_is_ignored_by_readers_and_replaced_by_the_next_run() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let mut run = Run::start(&data, 10_000_000, 5_000);
    run.wait_until_served(&data);
    run.child().kill().expect("SIGKILL the run");
    run.child().wait().expect("reap the run");
    assert!(data.join("live.sock").exists(), "a killed run leaves it");
    let out = run_host(&["check", "--data", data_arg(&data)]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("recovered there"), "{stdout}");

    let mut next = Run::start(&data, 10_000_000, 5_000);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        assert!(next.running(), "the next run ended early");
        let out = run_host(&["inspect", "--data", data_arg(&data)]);
        let (stdout, _) = text(&out);
        if out.status.success() && stdout.contains("a run has it open") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the next run never served readers"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_corrupted_redb_file_fails_check_in_one_line() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    assert!(small_run(&data, 500).status.success());
    let db = data.join("store.redb");
    let mut bytes = std::fs::read(&db).expect("read the database");
    let pages = bytes.len() / 4096;
    assert!(pages > 20, "a database of {pages} pages");
    // A few bytes of every page past the header: some of them are the store's trees.
    for page in 1..pages {
        for at in (64..4096).step_by(512) {
            bytes[page * 4096 + at] ^= 0x5a;
        }
    }
    std::fs::write(&db, &bytes).expect("write the database");
    let out = run_host(&["check", "--data", data_arg(&data)]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\nstderr:\n{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
    assert!(
        stderr.contains("corrupt") || stderr.contains("integrity check failed"),
        "{stderr}"
    );
    assert!(!stdout.contains("check passed"), "{stdout}");
}

/// Corrupts one page of `data`'s database at a time, from the middle of the file, until
/// redb's read-only open accepts the file and its integrity check is what `check` refuses it
/// for; returns the database as then written and `check`'s output. Panics if no page does.
fn corrupt_a_page_past_redbs_open(data: &Path, clean: &[u8]) -> (Vec<u8>, Output) {
    let db = data.join("store.redb");
    let pages = clean.len() / 4096;
    for page in (pages / 4..pages).step_by(7) {
        let mut bytes = clean.to_vec();
        for at in (64..4096).step_by(512) {
            bytes[page * 4096 + at] ^= 0x5a;
        }
        std::fs::write(&db, &bytes).expect("write the database");
        let out = run_host(&["check", "--data", data_arg(data)]);
        if text(&out).1.contains("redb's integrity check failed") {
            return (bytes, out);
        }
        // A free page, or one redb's read-only open refuses already.
    }
    panic!("no corrupted page was caught by redb's integrity check");
}

#[test]
fn a_corrupted_page_that_redb_opens_is_caught_by_its_integrity_check() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    assert!(small_run(&data, 500).status.success());
    let clean = std::fs::read(data.join("store.redb")).expect("read the database");
    let (_, out) = corrupt_a_page_past_redbs_open(&data, &clean);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\nstderr:\n{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
    assert!(!stdout.contains("check passed"), "{stdout}");
}

/// A store whose file redb opens for reading but whose integrity check fails: `run` refuses
/// it as corrupt, and so does `inspect` (one line, exit status 1, no tables), where it used to
/// print the tables and exit 0.
#[test]
fn inspect_refuses_a_store_that_run_refuses_as_corrupt() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    assert!(small_run(&data, 500).status.success());
    let db = data.join("store.redb");
    let clean = std::fs::read(&db).expect("read the database");
    let (bytes, _) = corrupt_a_page_past_redbs_open(&data, &clean);
    let run = common::run_on(&data, &["--partitions", "4", "--events", "1"]);
    let (stdout, stderr) = text(&run);
    assert!(!run.status.success(), "run took it:\n{stdout}\n{stderr}");
    assert!(stderr.contains("corrupt"), "{stderr}");
    assert_eq!(
        std::fs::read(&db).expect("read"),
        bytes,
        "run wrote nothing"
    );

    let out = run_host(&["inspect", "--data", data_arg(&data), "--partition", "0"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\nstderr:\n{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
    assert!(stderr.contains("integrity check failed"), "{stderr}");
    assert!(
        stderr.contains("`run` refuses this store as corrupt"),
        "{stderr}"
    );
    assert!(stdout.is_empty(), "no tables of a corrupt store:\n{stdout}");

    // The clean file again: inspect shows it and exits 0.
    std::fs::write(&db, &clean).expect("write the database");
    let out = run_host(&["inspect", "--data", data_arg(&data), "--partition", "0"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("partition 0: PLog tail"), "{stdout}");
}

/// A reader beside a live store reads each partition's bounds, stored offset and view from one
/// snapshot, its events each in a transaction of their own (the snapshot let go), and takes a
/// new snapshot once its reads move on to another partition: what it reads of a partition
/// before its events stays still, and what was appended meanwhile is seen by its events and
/// when it comes back. So no snapshot is held while a reader works through a PLog (a held
/// snapshot stops redb from reusing the pages the run frees, and the run's file grows).
#[test]
fn a_live_reader_takes_a_snapshot_per_partition_and_reads_events_without_holding_it() {
    use sequencer::SeqValue;
    use sequencer_host::store::live::{Connect, connect};
    use sequencer_host::store::{OpenOptions, StoreReader, open};

    let tmp = tempfile::tempdir().expect("temp dir");
    let store = open(
        &"redb".parse().expect("URL"),
        &OpenOptions::new().data(tmp.path()),
    )
    .expect("open the store");
    let storage = store.storage();
    let append = |p: u32, offset: u64| {
        (storage.append(p, offset, &[SeqValue::new(u64::from(p) * 2 + 1, 1, offset)]))
            .expect("append");
    };
    append(0, 1);
    append(1, 1);
    let _server = store.serve_readers().expect("serve").expect("a socket");
    let Connect::Served(reader) = connect(tmp.path()) else {
        panic!("the store's socket did not answer");
    };
    let end = |p| reader.plog_bounds(p).expect("bounds").map(|(_, last)| last);

    assert_eq!(end(0), Some(1));
    append(0, 2);
    assert_eq!(end(0), Some(1), "partition 0 read from one snapshot");
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(
        end(0),
        Some(1),
        "bounds, the view and the stored offset keep the snapshot"
    );
    assert_eq!(
        reader.events(0, 1, 10).expect("events").len(),
        2,
        "events are read as they are now, not from the snapshot"
    );
    append(0, 3);
    assert_eq!(
        reader.events(0, 1, 10).expect("events").len(),
        3,
        "each read of events is as the store is then"
    );
    assert_eq!(
        end(0),
        Some(3),
        "bounds read after events come from a new snapshot"
    );
    append(1, 2);
    assert_eq!(end(1), Some(2), "partition 1 read from a new snapshot");
    append(1, 3);
    assert_eq!(end(1), Some(2), "and from that one while it is read");
    append(0, 4);
    assert_eq!(
        end(0),
        Some(4),
        "partition 0 again: a new snapshot sees its append"
    );
    assert_eq!(reader.stored_next_offset(0).expect("stored next"), 0);
}
