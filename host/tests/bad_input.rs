//! Bad input to the real `sequencer-host` binary: each case exits non-zero with one line on
//! stderr naming what is wrong and where, and writes nothing.

#![cfg(feature = "cli")]

mod common;

use std::path::Path;
use std::process::Output;

use common::{component_path, run_host, run_on, small_run, snapshot, text};

/// Asserts a failed run with a one-line error containing every one of `needles`.
fn assert_one_line_error(out: &Output, needles: &[&str]) {
    let (stdout, stderr) = text(out);
    assert!(!out.status.success(), "expected failure; stdout:\n{stdout}");
    assert_eq!(out.status.code(), Some(1), "exit code; stderr:\n{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr, got:\n{stderr}");
    assert!(lines[0].starts_with("sequencer-host: error: "), "{stderr}");
    for n in needles {
        assert!(lines[0].contains(n), "{n:?} not in {stderr:?}");
    }
    assert!(stdout.is_empty(), "nothing on stdout, got:\n{stdout}");
}

fn run_with(data: &Path, component: &Path) -> Output {
    run_host(&[
        "run",
        "--data",
        data.to_str().expect("utf-8"),
        "--component",
        component.to_str().expect("utf-8"),
        "--partitions",
        "4", // as the data directories made by small_run were numbered
        "--events",
        "10",
    ])
}

/// A data directory made by a real run, in a fresh temp dir.
fn made_data_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let out = small_run(&data, 20);
    assert!(out.status.success(), "{:?}", text(&out));
    (tmp, data)
}

#[test]
fn a_component_file_that_is_not_webassembly_is_refused_and_no_data_dir_is_created() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bogus = tmp.path().join("notes.wasm");
    std::fs::write(&bogus, b"just some text").expect("write");
    let data = tmp.path().join("data");
    let out = run_with(&data, &bogus);
    assert_one_line_error(&out, &["notes.wasm", "not a WebAssembly component"]);
    assert!(!data.exists(), "no data directory was created");
}

#[test]
fn a_core_module_is_refused_as_not_a_component() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let module = tmp.path().join("core.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").expect("write");
    let data = tmp.path().join("data");
    let out = run_with(&data, &module);
    assert_one_line_error(
        &out,
        &["core.wasm", "core WebAssembly module, not a component"],
    );
    assert!(!data.exists());
}

#[test]
fn a_missing_component_file_is_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let out = run_with(&data, &tmp.path().join("absent.wasm"));
    assert_one_line_error(&out, &["absent.wasm", "cannot read"]);
    assert!(!data.exists());
}

#[test]
fn a_component_of_another_wit_version_is_refused_naming_both_versions() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let real = std::fs::read(component_path()).expect("read the component");
    // Same-length rewrite of the package version in every interface name.
    let from = b"sequencer:plugin/";
    let mut patched = real.clone();
    let mut i = 0;
    while let Some(at) = patched[i..].windows(from.len()).position(|w| w == from) {
        let start = i + at;
        let end = (start..patched.len())
            .find(|&j| patched[j] == b'@')
            .expect("a versioned name");
        assert_eq!(&patched[end..end + 6], b"@0.3.0");
        patched[end..end + 6].copy_from_slice(b"@0.9.0");
        i = end;
    }
    assert_ne!(patched, real);
    let v9 = tmp.path().join("sequencer-v9.wasm");
    std::fs::write(&v9, &patched).expect("write");
    let data = tmp.path().join("data");
    let out = run_with(&data, &v9);
    assert_one_line_error(
        &out,
        &[
            "sequencer-v9.wasm",
            "incompatible WIT version",
            "sequencer:plugin/sequencer-api@0.3.0",
            "sequencer:plugin/sequencer-api@0.9.0",
        ],
    );
    assert!(!data.exists());
}

#[test]
fn check_and_inspect_refuse_a_missing_data_dir() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("nowhere");
    for cmd in ["check", "inspect"] {
        let out = run_host(&[cmd, "--data", data.to_str().expect("utf-8")]);
        assert_one_line_error(&out, &["nowhere", "does not exist"]);
    }
    assert!(!data.exists());
}

#[test]
fn run_refuses_a_data_dir_whose_parent_is_missing() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("no/such/parent");
    let out = run_with(&data, &component_path());
    assert_one_line_error(&out, &["no/such/parent", "parent directory does not exist"]);
    assert!(!tmp.path().join("no").exists());
}

#[test]
fn run_refuses_a_data_dir_path_that_is_a_file() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("data");
    std::fs::write(&file, b"x").expect("write");
    let before = snapshot(tmp.path());
    let out = run_with(&file, &component_path());
    assert_one_line_error(&out, &["data", "is not a directory"]);
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn run_refuses_a_non_empty_directory_without_a_format_marker_and_leaves_it_untouched() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    std::fs::write(data.join("photo.jpg"), b"not ours").expect("write");
    let before = snapshot(tmp.path());
    let out = run_with(&data, &component_path());
    assert_one_line_error(&out, &["data", "not a sequencer data directory"]);
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn a_corrupt_format_marker_is_refused_and_nothing_is_written() {
    let (tmp, data) = made_data_dir();
    std::fs::write(data.join("FORMAT"), b"\xff\xfe garbage").expect("write");
    let before = snapshot(tmp.path());
    for args in [vec!["check"], vec!["inspect"]] {
        let mut a = args.clone();
        a.extend(["--data", data.to_str().expect("utf-8")]);
        assert_one_line_error(&run_host(&a), &["FORMAT", "corrupt data directory"]);
    }
    assert_one_line_error(
        &run_with(&data, &component_path()),
        &["FORMAT", "corrupt data directory"],
    );
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn a_data_dir_of_another_format_version_is_refused_and_nothing_is_written() {
    let (tmp, data) = made_data_dir();
    std::fs::write(
        data.join("FORMAT"),
        b"sequencer-data format=99 store=redb\n",
    )
    .expect("write");
    let before = snapshot(tmp.path());
    let out = run_with(&data, &component_path());
    assert_one_line_error(&out, &["FORMAT", "format 99 is not supported"]);
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn a_missing_database_file_is_refused_as_corrupt() {
    let (tmp, data) = made_data_dir();
    std::fs::remove_file(data.join("store.redb")).expect("rm");
    let before = snapshot(tmp.path());
    let out = run_with(&data, &component_path());
    assert_one_line_error(&out, &["corrupt data directory", "store.redb is missing"]);
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn a_database_file_overwritten_with_garbage_is_refused_and_nothing_is_written() {
    let (tmp, data) = made_data_dir();
    let db = data.join("store.redb");
    let mut bytes = std::fs::read(&db).expect("read");
    bytes[..512].fill(0xA5);
    std::fs::write(&db, &bytes).expect("write");
    let before = snapshot(tmp.path());
    for cmd in ["check", "inspect"] {
        let out = run_host(&[cmd, "--data", data.to_str().expect("utf-8")]);
        assert_one_line_error(&out, &["store.redb", "corrupt data directory"]);
    }
    let out = run_with(&data, &component_path());
    assert_one_line_error(&out, &["store.redb", "not a readable sequencer database"]);
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn a_database_file_with_damaged_pages_is_refused_and_nothing_is_written() {
    let (tmp, data) = made_data_dir();
    let db = data.join("store.redb");
    let mut bytes = std::fs::read(&db).expect("read");
    // Damage every page after the header: whichever the trees use, the checksums catch it.
    for page in bytes.chunks_mut(4096).skip(1) {
        page[100..164].fill(0x5A);
    }
    std::fs::write(&db, &bytes).expect("write");
    let before = snapshot(tmp.path());
    let out = run_with(&data, &component_path());
    assert_one_line_error(&out, &["store.redb", "corrupt data directory"]);
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn a_truncated_database_file_is_refused_and_nothing_is_written() {
    let (tmp, data) = made_data_dir();
    let db = data.join("store.redb");
    let bytes = std::fs::read(&db).expect("read");
    std::fs::write(&db, &bytes[..bytes.len() / 3]).expect("write");
    let before = snapshot(tmp.path());
    let out = run_with(&data, &component_path());
    assert_one_line_error(&out, &["store.redb", "corrupt data directory"]);
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn batch_options_out_of_range_are_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    for (option, value) in [
        ("--batch-size", "0"),
        ("--batch-size", "100000"),
        ("--batch-wait-ms", "99999999"),
        ("--rate", "fast"),
        ("--flush-interval-ms", "1e9"),
    ] {
        let out = run_host(&[
            "run",
            "--data",
            data.to_str().expect("utf-8"),
            "--component",
            component_path().to_str().expect("utf-8"),
            option,
            value,
        ]);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{option} {value}: {stderr}");
        assert!(stderr.contains(option), "{option} named: {stderr}");
        assert!(!data.exists(), "nothing written");
    }
}

#[cfg(feature = "etcd")]
#[test]
fn an_unreachable_etcd_store_is_refused_in_one_line() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let out = run_on(&data, &["--store", "etcd://127.0.0.1:2379"]);
    assert_one_line_error(&out, &["etcd://127.0.0.1:2379", "not available"]);
    assert!(!data.exists());
}

#[cfg(feature = "etcd")]
#[test]
fn a_latency_log_with_a_host_name_is_refused_before_anything_is_opened() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let log = tmp.path().join("acks.txt");
    let out = run_on(
        &data,
        &[
            "--store",
            "etcd://127.0.0.1:2379",
            "--host-name",
            "a",
            "--latency-log",
            log.to_str().expect("utf-8"),
        ],
    );
    assert_one_line_error(&out, &["--latency-log", "--host-name a"]);
    assert!(!data.exists() && !log.exists());
}

#[cfg(not(feature = "etcd"))]
#[test]
fn an_etcd_store_without_the_etcd_feature_is_refused_in_one_line_saying_how_to_get_it() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let out = run_on(&data, &["--store", "etcd://127.0.0.1:2379"]);
    assert_one_line_error(
        &out,
        &[
            "etcd://127.0.0.1:2379",
            "without etcd support",
            "--features etcd",
        ],
    );
    assert!(!data.exists());
}

#[test]
fn options_that_could_never_finish_or_fit_in_memory_are_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let run = |extra: &[&str]| run_on(&data, extra);
    for (option, value, says) in [
        ("--fail-rate", "1", "never finishes"),
        (
            "--payload-bytes",
            "1000000000000",
            "more than a payload may hold",
        ),
    ] {
        let out = run(&[option, value]);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{option} {value}: {stderr}");
        assert!(stderr.contains(option) && stderr.contains(says), "{stderr}");
        assert!(!data.exists(), "nothing written");
    }
    let out = run(&["--payload-bytes", "16000000", "--batch-size", "256"]);
    assert_one_line_error(&out, &["per batch in memory", "--batch-size"]);
    assert!(!data.exists(), "nothing written");
}

#[test]
fn inspect_of_a_partition_that_does_not_exist_exits_non_zero_in_one_line() {
    let (_tmp, data) = made_data_dir();
    let out = run_host(&[
        "inspect",
        "--data",
        data.to_str().expect("utf-8"),
        "--partition",
        "99",
    ]);
    assert_one_line_error(&out, &["partition 99 does not exist", "partitions 0 to 3"]);
}
