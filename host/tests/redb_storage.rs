//! The embedded store's own promises (appends share commits, a flusher write is one commit),
//! the event codec, the checker that proves stored data consistent, and the component on the
//! embedded store across reopenings. The promises every backend keeps (the fence, pages,
//! durability, payloads) are the contract suite's: `tests/contract.rs`.

#![cfg(feature = "redb")]

mod common;

use common::ready;

use std::sync::Arc;

use futures::executor::block_on;
use sequencer::{Params, SeqValue};
use sequencer_host::StoreReader as _;
use sequencer_host::store::PlogChecker;
use sequencer_host::store::codec::{decode_event, encode_event};
use sequencer_host::store::redb::{DataDir, OpenMode, RedbStorage};
use sequencer_host::{
    Driver, DriverConfig, Limits, MonotonicClock, Runtime, StartOutcome, Storage,
};

fn store() -> (tempfile::TempDir, RedbStorage) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let s = RedbStorage::create(&tmp.path().join("s.redb")).expect("create");
    (tmp, s)
}

#[test]
fn concurrent_appends_share_commits_and_each_returns_only_once_durable() {
    let (_tmp, s) = store();
    let threads = 8u32;
    let per = 50u64;
    std::thread::scope(|scope| {
        for p in 0..threads {
            let s = s.clone();
            scope.spawn(move || {
                for o in 1..=per {
                    s.append_event(p, o, &[SeqValue::new(1, 1, o)], b"")
                        .expect("append");
                    // Returned: the event is committed, so a new read transaction sees it.
                    assert_eq!(s.plog_bounds(p).expect("bounds"), Some((1, o)));
                }
            });
        }
    });
    let c = s.counts();
    assert_eq!(c.appends, u64::from(threads) * per);
    assert!(
        c.commits < c.appends,
        "group commit: {} commits for {} appends",
        c.commits,
        c.appends
    );
}

#[test]
fn a_flusher_write_puts_values_and_offset_in_one_commit() {
    let (_tmp, s) = store();
    let before = s.counts().commits;
    block_on(s.write(0, vec![SeqValue::new(1, 1, 5), SeqValue::new(2, 1, 9)], 12)).expect("write");
    assert_eq!(s.counts().commits, before + 1);
    assert_eq!(s.read_numbers(0, 2, &[1]).expect("read"), vec![9]);
    assert_eq!(s.stored_next_offset(0).expect("offset"), 12);
}

#[test]
fn events_encode_and_decode_losslessly_and_garbage_is_not_an_event() {
    let values = [
        SeqValue::new(u64::MAX, 7, 1),
        SeqValue::new(0, u16::MAX, u64::MAX),
    ];
    let bytes = encode_event(7, &values, b"payload");
    let (decoded, payload) = decode_event(7, &bytes).expect("decodes");
    assert_eq!(
        (decoded.as_slice(), payload),
        (&values[..], &b"payload"[..])
    );
    assert!(decode_event(7, &[]).is_err());
    assert!(decode_event(7, &[9, 0, 0, 0, 0]).is_err());
    assert!(decode_event(7, &[1, 2, 0, 0, 0, 1]).is_err());
}

fn checker(stored_next: u64) -> PlogChecker<impl Fn(u16) -> Option<u64>> {
    PlogChecker::new(0, stored_next, |_| Some(1))
}

#[test]
fn the_checker_passes_a_consistent_partition() {
    let mut c = checker(3);
    c.event(1, &[SeqValue::new(1, 1, 1), SeqValue::new(1, 1, 2)])
        .expect("ok");
    c.event(2, &[SeqValue::new(2, 1, 1)]).expect("ok");
    c.event(3, &[SeqValue::new(1, 1, 3)]).expect("ok");
    let r = c.finish(&[(1, 1, 2), (2, 1, 1)]).expect("consistent");
    assert_eq!((r.events, r.numbers, r.keys), (3, 4, 2));
}

#[test]
fn the_checker_finds_a_gap_in_offsets() {
    let mut c = checker(0);
    c.event(1, &[]).expect("ok");
    let e = c.event(3, &[]).expect_err("gap");
    assert!(e.message.contains("not dense"), "{e}");
}

#[test]
fn the_checker_finds_a_number_issued_twice() {
    let mut c = checker(0);
    c.event(1, &[SeqValue::new(5, 1, 1)]).expect("ok");
    let e = c.event(2, &[SeqValue::new(5, 1, 1)]).expect_err("reuse");
    assert!(e.message.contains("already issued"), "{e}");
}

#[test]
fn the_checker_finds_a_skipped_number_and_a_wrong_first_number() {
    let mut c = checker(0);
    c.event(1, &[SeqValue::new(5, 1, 1)]).expect("ok");
    assert!(c.event(2, &[SeqValue::new(5, 1, 3)]).is_err());
    let mut c = checker(0);
    assert!(c.event(1, &[SeqValue::new(5, 1, 2)]).is_err());
}

#[test]
fn the_checker_finds_a_view_behind_its_offset_or_ahead_of_the_plog() {
    let mut c = checker(2);
    c.event(1, &[SeqValue::new(5, 1, 1)]).expect("ok");
    c.event(2, &[SeqValue::new(5, 1, 2)]).expect("ok");
    let e = c.finish(&[]).expect_err("behind");
    assert!(e.message.contains("behind"), "{e}");

    let mut c = checker(0);
    c.event(1, &[SeqValue::new(5, 1, 1)]).expect("ok");
    let e = c.finish(&[(5, 1, 2)]).expect_err("ahead");
    assert!(e.message.contains("ahead"), "{e}");

    let c = checker(5);
    let e = c.finish(&[]).expect_err("offset past the end");
    assert!(e.message.contains("past the PLog's end"), "{e}");
}

fn params() -> Params {
    Params::new().with_seq(1, 1, 1).with_seq(1, 2, 100)
}

#[test]
fn the_component_on_the_embedded_store_resumes_after_reopening_without_reusing_numbers() {
    let runtime = Runtime::from_file(&common::component_path(), Limits::default()).expect("load");
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let mut issued = Vec::new();
    for life in 0..3 {
        let dir = DataDir::open(&data, OpenMode::OpenOrCreate).expect("open");
        assert_eq!(dir.created(), life == 0);
        let store = dir.store().clone();
        let driver = Driver::spawn(
            Arc::new(store.clone()),
            Arc::new(MonotonicClock::new()),
            DriverConfig::default(),
        );
        let seq = driver.open(&runtime, 0, &params()).expect("open");
        ready(&driver, &seq);
        for i in 0..20u64 {
            let (outcome, numbers) = seq.start_next(1, 9, &[1, 2]).expect("start");
            let StartOutcome::Started(offset) = outcome else {
                panic!("not now");
            };
            assert_eq!(offset, life * 20 + i + 1, "offsets continue across lives");
            let values = [
                SeqValue::new(9, 1, numbers[0]),
                SeqValue::new(9, 2, numbers[1]),
            ];
            store
                .append_event(0, offset, &values, b"e")
                .expect("append");
            seq.flush().expect("flush");
            issued.push((numbers[0], numbers[1]));
        }
        // The middle life ends without waiting for the flusher, so the next one replays.
        if life != 1 {
            driver.idle();
        }
        seq.cleanup();
    }
    let expected: Vec<(u64, u64)> = (0..60).map(|i| (i + 1, i + 100)).collect();
    assert_eq!(issued, expected, "numbers continue, none reused");
}
