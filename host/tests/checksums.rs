//! The checksum every PLog event carries (CRC-32C over its offset, numbers and payload),
//! through the real binary: a bit flipped in a payload or in a number (redb), in an append
//! part's object of several events, in a one-event object of a store of the old format and in a
//! bundle (the object store on the local file system) is listed by `check`
//! (partition and offset, exit non-zero) and refused by a replay (`run` exits 1 with one line
//! naming the store, the partition and the offset). A store written before events carried
//! checksums (version-1 events) is read, continued, and `check` counts its events without one.
//! The same on etcd is in `etcd/damage.rs`.

mod common;

use std::path::Path;

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use sequencer_host::store::codec::{decode_event, encode_event_v1};
use sequencer_host::store::objects::{WRITE_FORMAT_ENV, bundle_object, event_object};

use common::{checked_events, component_path, host, run_host, run_on, text};

/// The redb store's PLog table (`store/redb/storage.rs`).
const PLOG: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("plog");
/// Its stored next offsets.
const NEXT_OFFSET: TableDefinition<u32, u64> = TableDefinition::new("next_offset");

/// Bytes before an event's first number: version, crc, count, then the value's workspace and
/// sequence.
const FIRST_NUMBER: usize = 1 + 4 + 4 + 8 + 2;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A completed run on a redb data directory: `events` per partition over 2 partitions.
fn redb_run(data: &Path, events: u64) {
    let out = run_on(
        data,
        &[
            "--partitions",
            "2",
            "--workspaces",
            "40",
            "--events",
            &events.to_string(),
        ],
    );
    assert!(out.status.success(), "{:?}", text(&out));
}

fn db(data: &Path) -> redb::Database {
    redb::Database::open(data.join("store.redb")).expect("open store.redb")
}

/// A partition's last PLog offset and its stored next offset (replay starts there).
fn last_and_stored(data: &Path, p: u32) -> (u64, u64) {
    let db = db(data);
    let rx = db.begin_read().expect("read");
    let plog = rx.open_table(PLOG).expect("plog");
    let (k, _) = plog
        .range((p, 0)..=(p, u64::MAX))
        .expect("range")
        .next_back()
        .expect("an event")
        .expect("row");
    let stored = rx
        .open_table(NEXT_OFFSET)
        .expect("next_offset")
        .get(p)
        .expect("get")
        .map_or(0, |v| v.value());
    (k.value().1, stored)
}

/// Flips bit 4 of byte `at(len)` of the stored event at (`p`, `o`), through redb (so its own
/// page checksums hold: only the event's checksum can tell).
fn flip_redb(data: &Path, p: u32, o: u64, at: impl Fn(usize) -> usize) {
    let db = db(data);
    let tx = db.begin_write().expect("write");
    {
        let mut plog = tx.open_table(PLOG).expect("plog");
        let mut bytes = plog
            .get((p, o))
            .expect("get")
            .expect("the event")
            .value()
            .to_vec();
        let i = at(bytes.len());
        bytes[i] ^= 0x10;
        plog.insert((p, o), bytes.as_slice()).expect("insert");
    }
    tx.commit().expect("commit");
}

/// `check` fails, listing exactly `damaged` (partition, offset): one line per damaged
/// partition on stdout, and the error (one line on stderr) naming each.
fn check_lists(store: &[&str], damaged: &[(u32, u64)]) {
    let mut args = vec!["check"];
    args.extend_from_slice(store);
    let out = run_host(&args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(&format!(
            "{} PLog event{} fail",
            damaged.len(),
            if damaged.len() == 1 { "" } else { "s" }
        )),
        "{stderr}"
    );
    for (p, o) in damaged {
        assert!(
            stderr.contains(&format!("partition {p} offset {o}")),
            "{stderr}"
        );
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("partition {p}: ")))
            .unwrap_or_else(|| panic!("no line for partition {p}:\n{stdout}"));
        assert!(
            line.contains("checksum") && line.contains(&o.to_string()),
            "{line}"
        );
    }
}

/// `run` stopped in one line naming the store, the partition and the offset, exit 1.
fn refused(out: &std::process::Output, store: &str, p: u32, o: u64) {
    let (stdout, stderr) = text(out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(store)
            && stderr.contains(&format!(
                "partition {p}: event at offset {o} fails its checksum"
            )),
        "{stderr}"
    );
}

#[test]
fn a_flipped_bit_in_a_payload_is_listed_by_check_and_refused_by_a_replay() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    redb_run(&data, 300);
    let (last, stored) = last_and_stored(&data, 0);
    assert!(
        stored <= last,
        "the last event is replayed ({stored}, {last})"
    );
    flip_redb(&data, 0, last, |len| len - 1);
    let dir = ["--data", s(&data)];
    check_lists(&dir, &[(0, last)]);

    let out = run_host(&["inspect", "--data", s(&data), "--partition", "0"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("fails its checksum")
            && stderr.contains(&format!("event at offset {last} fails its checksum")),
        "{stdout}{stderr}"
    );

    let out = run_on(&data, &["--partitions", "2", "--events", "10"]);
    refused(&out, "store.redb", 0, last);
}

#[test]
fn a_flipped_bit_in_a_number_is_listed_by_check_with_every_other_and_refused_by_a_replay() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    redb_run(&data, 300);
    let (last, _) = last_and_stored(&data, 1);
    // A sequence value of partition 1's last event, and two events of partition 0 (below
    // where a replay starts): check lists all three, and checks the rest.
    flip_redb(&data, 1, last, |_| FIRST_NUMBER);
    flip_redb(&data, 0, 5, |_| FIRST_NUMBER + 1);
    flip_redb(&data, 0, 7, |len| len / 2);
    check_lists(&["--data", s(&data)], &[(0, 5), (0, 7), (1, last)]);

    let out = run_on(&data, &["--partitions", "2", "--events", "10"]);
    refused(&out, "store.redb", 1, last);
}

/// The object store in `root` after a completed run: `events` per partition over 2
/// partitions, bundles of `bundle` events, with `args` and `env` added.
fn objects_run_with(
    root: &Path, events: u64, bundle: u64, args: &[&str], env: &[(&str, &str)],
) -> std::process::Output {
    let component = component_path();
    let mut cmd = host();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(["run", "--store", &format!("objects:{}", root.display())])
        .arg("--component")
        .arg(&component)
        .args(["--bundle-events", &bundle.to_string()])
        .args(["--partitions", "2", "--workspaces", "40"])
        .args(["--events", &events.to_string()])
        .args(args)
        .output()
        .expect("start sequencer-host")
}

/// [`objects_run_with`] with nothing added.
fn objects_run(root: &Path, events: u64, bundle: u64) -> std::process::Output {
    objects_run_with(root, events, bundle, &[], &[])
}

/// Flips bit 4 of byte `at(len)` of the file `path`.
fn flip_file(path: &Path, at: impl Fn(usize) -> usize) {
    let mut bytes = std::fs::read(path).expect("read");
    let i = at(bytes.len());
    bytes[i] ^= 0x10;
    std::fs::write(path, bytes).expect("write");
}

/// The first offsets of partition `p`'s event objects, ascending.
fn object_firsts(root: &Path, p: u32) -> Vec<u64> {
    let dir = root.join(event_object(p, 1));
    let dir = dir.parent().expect("the partition's folder");
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// Where event `i` starts in the event object `bytes` of several events (format 2:
/// `["SQE2", first, count u32, prev, writer-id length u8, writer id, count × (hash u64,
/// length u32), the events]`).
fn event_start(bytes: &[u8], i: usize) -> usize {
    assert_eq!(&bytes[..4], b"SQE2", "an object of format 2");
    let u32_at =
        |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
    let table = 25 + usize::from(bytes[24]);
    let lengths = |k: usize| u32_at(table + 12 * k + 8);
    table + 12 * u32_at(12) + (0..i).map(lengths).sum::<usize>()
}

/// `run` on the object store in `root` is refused at the damaged event (partition, offset)
/// `at`, naming the event object that holds it (named by `first`), and writes nothing.
fn refused_writing_nothing(
    root: &Path, at: (u32, u64), first: u64, run: impl FnOnce() -> std::process::Output,
) {
    let before = common::snapshot(root);
    let out = run();
    refused(&out, "object store", at.0, at.1);
    assert!(
        text(&out).1.contains(&event_object(at.0, first)),
        "{:?}",
        text(&out)
    );
    assert!(
        common::snapshot(root) == before,
        "a refused run wrote nothing"
    );
}

#[test]
fn a_flipped_bit_in_an_object_of_several_events_is_listed_by_check_and_refused_by_a_run_writing_nothing()
 {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("objects");
    // Bundles larger than the run, batches of 8 at most: every event stays in an append
    // part's object of a few events.
    let out = objects_run_with(&root, 120, 10_000, &["--batch-size", "8"], &[]);
    assert!(out.status.success(), "{:?}", text(&out));
    let firsts = object_firsts(&root, 1);
    // An object of at least 3 events, and one after it (both followed by another).
    let i = firsts
        .windows(2)
        .position(|w| w[1] - w[0] >= 3)
        .expect("an object of 3 events or more");
    assert!(firsts.len() > i + 3, "{firsts:?}");
    // A number of the first object's second event, the payload of the second's last event.
    let (a, b) = (firsts[i] + 1, firsts[i + 3] - 1);
    let first = root.join(event_object(1, firsts[i]));
    let at = event_start(&std::fs::read(&first).expect("read"), 1) + FIRST_NUMBER;
    flip_file(&first, |_| at);
    flip_file(&root.join(event_object(1, firsts[i + 2])), |len| len - 1);
    let store = format!("objects:{}", root.display());
    check_lists(&["--store", &store], &[(1, a), (1, b)]);

    refused_writing_nothing(&root, (1, a), firsts[i], || objects_run(&root, 10, 10_000));
}

#[test]
fn a_flipped_bit_in_a_one_event_object_of_the_old_format_is_listed_by_check_and_refused_by_a_run() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("objects");
    // A store of format 1, bundles larger than the run: every event stays a one-event object.
    let old = [(WRITE_FORMAT_ENV, "1")];
    let out = objects_run_with(&root, 120, 10_000, &[], &old);
    assert!(out.status.success(), "{:?}", text(&out));
    flip_file(&root.join(event_object(1, 30)), |len| len - 1);
    flip_file(&root.join(event_object(1, 31)), |len| len - 40);
    let store = format!("objects:{}", root.display());
    check_lists(&["--store", &store], &[(1, 30), (1, 31)]);

    refused_writing_nothing(&root, (1, 30), 30, || {
        objects_run_with(&root, 10, 10_000, &[], &old)
    });
}

#[test]
fn a_flipped_bit_in_a_bundle_is_listed_by_check_and_refused_by_a_replay() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("objects");
    // 64 events per partition in bundles of 16: every event is in a bundle, the last one
    // (where a replay starts) in 49..=64.
    let out = objects_run(&root, 64, 16);
    assert!(out.status.success(), "{:?}", text(&out));
    let bundle = root.join(bundle_object(0, 49, 64));
    assert!(bundle.is_file(), "the run merged every range");
    assert!(!root.join(event_object(0, 64)).exists());
    // The last byte of the bundle is the last event's payload.
    flip_file(&bundle, |len| len - 1);
    let store = format!("objects:{}", root.display());
    check_lists(&["--store", &store], &[(0, 64)]);

    let out = objects_run(&root, 10, 16);
    refused(&out, "object store", 0, 64);
}

#[test]
fn a_store_of_old_events_without_checksums_is_read_continued_and_counted_by_check() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    redb_run(&data, 150);
    // Every event rewritten as a store made before checksums holds it (version 1).
    let old = {
        let db = db(&data);
        let tx = db.begin_write().expect("write");
        let mut n = 0;
        {
            let mut plog = tx.open_table(PLOG).expect("plog");
            let rows: Vec<((u32, u64), Vec<u8>)> = plog
                .iter()
                .expect("iter")
                .map(|r| {
                    let (k, v) = r.expect("row");
                    (k.value(), v.value().to_vec())
                })
                .collect();
            for ((p, o), bytes) in rows {
                let (values, payload) = decode_event(o, &bytes).expect("a sound event");
                let v1 = encode_event_v1(&values, payload);
                assert_eq!(v1[0], 1);
                plog.insert((p, o), v1.as_slice()).expect("insert");
                n += 1;
            }
        }
        tx.commit().expect("commit");
        n
    };
    assert_eq!(old, 300);
    let out = run_host(&["check", "--data", s(&data)]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("checksums: 0 events verified, 300 without a checksum"),
        "{stdout}"
    );

    // Continued: replayed as before, new events carry checksums, the old ones are kept.
    let out = run_on(&data, &["--partitions", "2", "--events", "50"]);
    assert!(out.status.success(), "{:?}", text(&out));
    assert_eq!(
        checked_events(&["check", "--data", s(&data)], "resumed"),
        400
    );
    let out = run_host(&["check", "--data", s(&data)]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("checksums: 100 events verified, 300 without a checksum"),
        "{stdout}"
    );
    let db = db(&data);
    let rx = db.begin_read().expect("read");
    let plog = rx.open_table(PLOG).expect("plog");
    let versions: Vec<u8> = plog
        .iter()
        .expect("iter")
        .map(|r| r.expect("row").1.value()[0])
        .collect();
    assert_eq!(versions.iter().filter(|&&v| v == 1).count(), 300);
    assert_eq!(versions.iter().filter(|&&v| v == 3).count(), 100);
}

#[test]
fn archive_refuses_to_copy_a_damaged_event_and_trims_nothing_from_it_on() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (data, adir) = (tmp.path().join("data"), tmp.path().join("archive"));
    redb_run(&data, 300);
    flip_redb(&data, 0, 40, |len| len - 1);
    let out = run_host(&[
        "archive",
        "--data",
        s(&data),
        "--archive",
        &format!("objects:{}", s(&adir)),
        "--bundle-events",
        "16",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("partition 0: event at offset 40 fails its checksum: not archived"),
        "{stderr}"
    );
    // The bundles before it are archived and trimmed; the damaged one's range stays.
    let db = db(&data);
    let rx = db.begin_read().expect("read");
    let plog = rx.open_table(PLOG).expect("plog");
    let (first, _) = plog
        .range((0, 0)..=(0, u64::MAX))
        .expect("range")
        .next()
        .expect("an event")
        .expect("row");
    assert_eq!(
        first.value(),
        (0, 33),
        "trimmed below 33, not past the damage"
    );
    drop(plog);
    drop(rx);
    drop(db);
    check_lists(&["--data", s(&data)], &[(0, 40)]);
}
