//! `Storage::append_events`: many events in one durable write, fenced like one, all or nothing
//! per write; a batch split by a backend's limits is appended part by part in order, so a
//! failure leaves a dense prefix that actualization recovers without reusing a number.

#![cfg(feature = "redb")]

mod common;

use common::ready;

use std::sync::Arc;

use sequencer::{Params, SeqValue};
use sequencer_host::StoreReader as _;
use sequencer_host::store::codec::decode_event;
use sequencer_host::store::memory::Faults;
use sequencer_host::store::redb::RedbStorage;
use sequencer_host::store::{AppendLimits, PlogChecker};
use sequencer_host::{
    AppendError, Driver, DriverConfig, EventBatch, Limits, MemoryStorage, MonotonicClock,
    PartitionSequencer, Runtime, StartOutcome, Storage,
};

/// A batch of `n` events from `first`, event `o` holding value `o` of (ws 1, seq 1).
fn batch(first: u64, n: u64) -> EventBatch {
    let mut b = EventBatch::new(first);
    for o in first..first + n {
        b.push(&[SeqValue::new(1, 1, o)], format!("e{o}").as_bytes());
    }
    b
}

fn redb() -> (tempfile::TempDir, RedbStorage) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let s = RedbStorage::create(&tmp.path().join("s.redb")).expect("create");
    (tmp, s)
}

/// The offsets and first values of a partition's PLog in a memory store.
fn memory_plog(m: &MemoryStorage, p: u32) -> Vec<(u64, u64)> {
    m.plog(p).iter().map(|(o, v)| (*o, v[0].value)).collect()
}

#[test]
fn a_batch_is_cut_into_parts_by_events_and_bytes_in_order_and_an_oversized_event_stands_alone() {
    let b = batch(10, 7);
    let one = b.whole();
    assert_eq!((one.first(), one.next(), one.len()), (10, 17, 7));
    let event_bytes = one.encoded_len() / 7;
    let cut = |max_events, max_bytes| -> Vec<(u64, usize)> {
        b.parts(AppendLimits {
            max_events,
            max_bytes,
        })
        .map(|p| (p.first(), p.len()))
        .collect()
    };
    assert_eq!(cut(3, usize::MAX), vec![(10, 3), (13, 3), (16, 1)]);
    assert_eq!(
        cut(usize::MAX, 2 * event_bytes),
        vec![(10, 2), (12, 2), (14, 2), (16, 1)]
    );
    assert_eq!(
        cut(2, 3 * event_bytes),
        vec![(10, 2), (12, 2), (14, 2), (16, 1)]
    );
    // Smaller than one event: every event is a part of its own (the backend refuses it).
    assert_eq!(cut(100, 1).len(), 7);
    assert_eq!(cut(usize::MAX, usize::MAX), vec![(10, 7)]);
    // The parts hold exactly the batch's events, in order.
    let offsets: Vec<u64> = b
        .parts(AppendLimits {
            max_events: 3,
            max_bytes: usize::MAX,
        })
        .flat_map(|p| p.iter().map(|(o, _)| o).collect::<Vec<_>>())
        .collect();
    assert_eq!(offsets, (10..17).collect::<Vec<_>>());
    let (offset, bytes) = one.iter().nth(2).expect("event");
    let (values, payload) = decode_event(offset, bytes).expect("decodes");
    assert_eq!((values[0].value, payload), (12, &b"e12"[..]));
    assert_eq!(EventBatch::new(5).parts(AppendLimits::UNLIMITED).count(), 0);
}

#[test]
fn the_embedded_store_appends_a_batch_in_one_commit() {
    let (_tmp, s) = redb();
    let before = s.counts();
    s.append_events(0, &batch(1, 500)).expect("append 500");
    let after = s.counts();
    assert_eq!(after.commits - before.commits, 1, "one commit, one fsync");
    assert_eq!((after.appends, after.append_writes), (500, 1));
    assert_eq!(s.plog_bounds(0).expect("bounds"), Some((1, 500)));
}

#[test]
fn many_partitions_batches_share_one_fsync_and_a_refused_one_does_not_spoil_the_others() {
    let (_tmp, s) = redb();
    let partitions = 8u32;
    let rounds = 20u64;
    let n = 50;
    std::thread::scope(|scope| {
        for p in 0..partitions {
            let s = s.clone();
            scope.spawn(move || {
                for r in 0..rounds {
                    let first = r * n + 1;
                    if p == 0 {
                        // A stale writer on partition 0, refused in the same groups.
                        assert!(matches!(
                            s.append_events(p, &batch(first + 7, n)),
                            Err(AppendError::WrongOffset { .. })
                        ));
                    }
                    s.append_events(p, &batch(first, n)).expect("append");
                    // Returned: committed, so a new read transaction sees every event.
                    assert_eq!(s.plog_bounds(p).expect("bounds"), Some((1, first + n - 1)));
                }
            });
        }
    });
    let c = s.counts();
    assert_eq!(c.appends, u64::from(partitions) * rounds * n);
    assert_eq!(c.append_writes, u64::from(partitions) * rounds);
    assert!(
        c.commits < c.append_writes,
        "group commit across partitions: {} commits for {} batches",
        c.commits,
        c.append_writes
    );
}

/// Makes the second write of the next append fail.
fn fail_second_write(m: &MemoryStorage) {
    m.set_faults(Faults {
        fail_appends: 1,
        appends_before_failing: 1,
        ..Faults::default()
    });
}

#[test]
fn a_split_batch_whose_second_part_fails_leaves_a_dense_prefix_and_the_writer_goes_on_from_it() {
    let m = MemoryStorage::new();
    m.set_append_limits(AppendLimits {
        max_events: 4,
        max_bytes: usize::MAX,
    });
    m.append_events(0, &batch(1, 4)).expect("one part");
    // Three parts (5..=8, 9..=12, 13..=14); the second fails: the first is in, no hole.
    fail_second_write(&m);
    let r = m.append_events(0, &batch(5, 10));
    assert!(matches!(r, Err(AppendError::Storage(_))), "{r:?}");
    assert_eq!(
        memory_plog(&m, 0),
        (1..=8).map(|o| (o, o)).collect::<Vec<_>>(),
        "a dense prefix: the parts before the failed one"
    );
    // The writer learns from the PLog where it ends (the fence says) and goes on densely.
    assert_eq!(
        m.append_events(0, &batch(9 + 2, 2)),
        Err(AppendError::WrongOffset {
            expected: 9,
            offered: 11
        })
    );
    m.append_events(0, &batch(9, 6)).expect("go on at 9");
    assert_eq!(
        memory_plog(&m, 0),
        (1..=14).map(|o| (o, o)).collect::<Vec<_>>()
    );
}

fn params() -> Params {
    Params::new().with_seq(1, 1, 1).with_seq(1, 2, 100)
}

/// Numbers and stages the events of commands `commands` (command `i` on workspace
/// `1 + i % 3`), returning the batch and their numbers.
fn number_batch(
    seq: &PartitionSequencer, commands: std::ops::Range<u64>,
) -> (EventBatch, Vec<(u64, u64)>) {
    let mut b = EventBatch::new(0);
    let mut issued = Vec::new();
    for i in commands {
        let ws = 1 + i % 3;
        let (outcome, numbers) = seq.start_next(1, ws, &[1, 2]).expect("start");
        let StartOutcome::Started(offset) = outcome else {
            panic!("not now");
        };
        if b.is_empty() {
            b.reset(offset);
        }
        assert_eq!(offset, b.next(), "staged events take consecutive offsets");
        b.push(
            &[
                SeqValue::new(ws, 1, numbers[0]),
                SeqValue::new(ws, 2, numbers[1]),
            ],
            b"",
        );
        seq.stage().expect("stage");
        issued.push((numbers[0], numbers[1]));
    }
    (b, issued)
}

#[test]
fn after_a_batch_append_fails_part_way_actualization_keeps_the_durable_prefix_and_reuses_only_the_rest()
 {
    let runtime = Runtime::from_file(&common::component_path(), Limits::default()).expect("load");
    let m = MemoryStorage::new();
    m.set_append_limits(AppendLimits {
        max_events: 4,
        max_bytes: usize::MAX,
    });
    let driver = Driver::spawn(
        Arc::new(m.clone()),
        Arc::new(MonotonicClock::new()),
        DriverConfig::default(),
    );
    let seq = driver.open(&runtime, 0, &params()).expect("open");
    ready(&driver, &seq);

    // A batch of 6 (two parts) appended and flushed.
    let (b, _) = number_batch(&seq, 0..6);
    m.append_events(0, &b).expect("append");
    seq.flush().expect("flush");

    // A batch of 10 (three parts) whose second part fails: 7..=10 are in, 11..=16 are not.
    let (b, issued) = number_batch(&seq, 6..16);
    assert_eq!(b.first(), 7);
    fail_second_write(&m);
    let r = m.append_events(0, &b);
    assert!(matches!(r, Err(AppendError::Storage(_))), "{r:?}");
    assert_eq!(m.plog(0).last().map(|e| e.0), Some(10));
    seq.actualize().expect("actualize");
    ready(&driver, &seq);

    // The commands of the lost events, numbered again, start right after the durable prefix
    // and take exactly the numbers those events had.
    let (b, again) = number_batch(&seq, 10..16);
    assert_eq!(b.first(), 11, "offsets go on densely after the prefix");
    assert_eq!(
        again,
        issued[4..],
        "the lost events' numbers, handed out again"
    );
    m.append_events(0, &b).expect("append");
    seq.flush().expect("flush");
    driver.idle();
    seq.cleanup();

    let mut c = PlogChecker::new(0, m.stored_next_offset(0), |s| {
        Some(if s == 1 { 1 } else { 100 })
    });
    for (offset, values) in m.plog(0) {
        c.event(offset, &values).expect("dense, no number twice");
    }
    let view: Vec<(u64, u16, u64)> = (1..=3)
        .flat_map(|ws| [1u16, 2].map(|s| (ws, s, m.view_value(0, ws, s))))
        .collect();
    let report = c.finish(&view).expect("consistent");
    assert_eq!(report.events, 16);
}
