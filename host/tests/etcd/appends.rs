//! Appends on the cluster: two hosts on one partition (the fence), a batch beyond the request
//! limit split into parts, an event larger than a request, a request the cluster refuses, and
//! the PLog's end as each read of it finds it (another writer's keys, a wiped store).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use sequencer::SeqValue;
use sequencer_host::StoreReader as _;
use sequencer_host::store::TailProbe as _;
use sequencer_host::store::etcd::{EtcdConfig, EtcdStorage};
use sequencer_host::{
    AppendError, Driver, DriverConfig, Limits, MonotonicClock, PartitionSequencer, Runtime, Storage,
};

use crate::common::etcd_cluster::EtcdCluster;
use crate::common::{component_path, run_host, text};
use crate::support::{all_events, check_passes, command_processor, event_batch, params};

#[test]
fn two_hosts_on_one_partition_never_both_commit_an_offset_and_the_loser_goes_on_without_reuse() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let runtime = Runtime::from_file(&component_path(), Limits::default()).expect("component");
    let hosts: Vec<(EtcdStorage, Driver)> = (0..2)
        .map(|_| {
            let store = cluster.store(Duration::from_secs(10));
            let driver = Driver::spawn(
                Arc::new(store.clone()),
                Arc::new(MonotonicClock::new()),
                DriverConfig::default(),
            );
            (store, driver)
        })
        .collect();
    let seqs: Vec<PartitionSequencer> = hosts
        .iter()
        .map(|(_, d)| d.open(&runtime, 0, &params()).expect("open partition 0"))
        .collect();
    let per_host = 150;
    let results: Vec<(Vec<u64>, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = seqs
            .iter()
            .zip(&hosts)
            .zip(["A", "B"])
            .map(|((seq, (store, _)), name)| {
                s.spawn(move || command_processor(name, seq, store, 7, per_host))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("host thread"))
            .collect()
    });
    for (seq, (_, driver)) in seqs.iter().zip(&hosts) {
        driver.idle();
        seq.cleanup();
    }
    let (a, b) = (&results[0], &results[1]);
    assert!(
        a.0.iter().all(|o| !b.0.contains(o)),
        "an offset committed by both hosts"
    );
    let mut all: Vec<u64> = a.0.iter().chain(&b.0).copied().collect();
    all.sort_unstable();
    let dense: Vec<u64> = (1..=2 * per_host as u64).collect();
    assert_eq!(
        all, dense,
        "together the hosts committed offsets 1..=300 once each"
    );
    assert!(
        a.1 + b.1 > 0,
        "the hosts raced: at least one append was fenced"
    );
    let checked = check_passes(&cluster.url());
    assert!(
        checked.contains("check passed: 1 partitions, 300 PLog events"),
        "{checked}"
    );
    eprintln!("fenced appends: host A {}, host B {}", a.1, b.1);
}

#[test]
fn a_batch_beyond_the_request_limit_is_appended_in_parts_in_order_and_reads_back_densely() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let mut config = EtcdConfig::new(cluster.endpoints.clone());
    config.max_request_bytes = 64 * 1024;
    let store = EtcdStorage::connect(config).expect("connect");
    let limits = store.append_limits();
    assert!(limits.max_bytes < 64 * 1024, "{limits:?}");

    // 3000 events of ~230 bytes: parts of at most 1024 events and the byte limit.
    let batch = event_batch(1, 3000, 200);
    let parts = batch.parts(limits).count();
    assert!(parts >= 10, "{parts} parts");
    store.append_events(0, &batch).expect("append 3000 events");
    assert_eq!(
        store.stats().append_txns.load(Ordering::Relaxed),
        parts as u64,
        "one transaction per part"
    );
    // One event on its own (stored as a plain event), then another batch.
    store
        .append_event(0, 3001, &[SeqValue::new(1, 1, 3001)], b"single")
        .expect("append one");
    store
        .append_events(0, &event_batch(3002, 5, 10))
        .expect("append 5");

    let events = all_events(&store, 0);
    let offsets: Vec<u64> = events.iter().map(|e| e.offset).collect();
    assert_eq!(offsets, (1..=3006).collect::<Vec<_>>(), "dense, in order");
    assert!(
        events
            .iter()
            .all(|e| e.values == [SeqValue::new(1, 1, e.offset)])
    );
    assert_eq!(events[1499].payload[..11], *b"event 1500 ");
    assert_eq!(events[3000].payload, b"single");
    // A read from inside a pack starts at the offset asked for.
    let page = store.events(0, 1234, 3).expect("read");
    assert_eq!(
        page.iter().map(|e| e.offset).collect::<Vec<_>>(),
        vec![1234, 1235, 1236]
    );
    assert_eq!(store.plog_bounds(0).expect("bounds"), Some((1, 3006)));

    // Stale or early batches are refused whole: inside a pack, at its start, past the end.
    for offered in [1500, 1025, 3006, 3008] {
        assert_eq!(
            store.append_events(0, &event_batch(offered, 3, 10)),
            Err(AppendError::WrongOffset {
                expected: 3007,
                offered
            }),
            "a batch at {offered}"
        );
    }
    assert_eq!(all_events(&store, 0).len(), 3006, "nothing written");
    let checked = check_passes(&cluster.url());
    assert!(
        checked.contains("1 partitions, 3006 PLog events"),
        "{checked}"
    );
}

/// Partitions appending at once share transactions; a stale part among them writes nothing of
/// anyone's, is refused with the PLog's real end, and the others are appended on their own.
#[test]
fn appends_of_several_partitions_share_transactions_and_a_stale_one_fails_alone() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let (a, b) = (
        cluster.store(Duration::from_secs(10)),
        cluster.store(Duration::from_secs(10)),
    );
    let partitions = 8u32;
    let (rounds, n) = (40u64, 5u64);
    std::thread::scope(|s| {
        for p in 0..partitions {
            let a = &a;
            s.spawn(move || {
                for r in 0..rounds {
                    a.append_events(p, &event_batch(1 + r * n, n, 32))
                        .unwrap_or_else(|e| panic!("partition {p} round {r}: {e}"));
                }
            });
        }
    });
    let stats = a.stats();
    let (txns, combined) = (
        stats.append_txns.load(Ordering::Relaxed),
        stats.combined_txns.load(Ordering::Relaxed),
    );
    let appends = u64::from(partitions) * rounds;
    assert!(
        combined > 0 && txns < appends,
        "{appends} appends in {txns} transactions, {combined} of them combined"
    );

    // Partition 0 goes stale each round (B appends there first); A's eight partitions append
    // at once again, partition 0 at the offset it believed next.
    let (mut end0, mut end) = (rounds * n, rounds * n);
    for _ in 0..20 {
        b.append_events(0, &event_batch(end0 + 1, 1, 32))
            .expect("B appends");
        let answers: Vec<Result<(), AppendError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..partitions)
                .map(|p| {
                    let a = &a;
                    let first = if p == 0 { end0 + 1 } else { end + 1 };
                    s.spawn(move || a.append_events(p, &event_batch(first, 1, 32)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("append"))
                .collect()
        });
        assert_eq!(
            answers[0],
            Err(AppendError::WrongOffset {
                expected: end0 + 2,
                offered: end0 + 1
            }),
            "the stale part"
        );
        assert!(answers[1..].iter().all(Result::is_ok), "{answers:?}");
        // Partition 0 catches up: A appends after B's event.
        a.append_events(0, &event_batch(end0 + 2, 1, 32))
            .expect("A appends after B");
        (end0, end) = (end0 + 2, end + 1);
    }
    eprintln!(
        "combined transactions {}, refused {}",
        stats.combined_txns.load(Ordering::Relaxed),
        stats.combined_refused.load(Ordering::Relaxed)
    );
    for p in 0..partitions {
        let offsets: Vec<u64> = all_events(&a, p).iter().map(|e| e.offset).collect();
        let last = if p == 0 { end0 } else { end };
        assert_eq!(
            offsets,
            (1..=last).collect::<Vec<_>>(),
            "partition {p}: dense"
        );
    }
}

#[test]
fn an_event_larger_than_a_request_is_refused_with_a_clear_error_and_writes_nothing() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let store = cluster.store(Duration::from_secs(5));
    let huge = event_batch(1, 1, 2 * 1024 * 1024);
    let err = store.append_events(0, &huge).expect_err("too large");
    let message = err.to_string();
    assert!(matches!(err, AppendError::Storage(_)), "{message}");
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(
        message.contains("append at partition 0 offset 1"),
        "{message}"
    );
    assert_eq!(store.plog_bounds(0).expect("bounds"), None);

    // The main job refuses such a payload before it writes anything.
    let out = run_host(&[
        "run",
        "--store",
        &cluster.url(),
        "--component",
        component_path().to_str().expect("utf-8"),
        "--payload-bytes",
        "2000000",
        "--batch-size", // small enough for memory: the store's limit is what refuses it
        "8",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("--payload-bytes 2000000") && stderr.contains("does not fit in one write"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert_eq!(store.partitions().expect("partitions"), Vec::<u32>::new());
    assert_eq!(
        store.read_layout().expect("layout"),
        None,
        "no layout either"
    );
}

#[test]
fn a_request_the_cluster_refuses_as_too_large_is_not_retried_and_becomes_the_stores_failure() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    // The store believes the cluster takes 8 MiB requests; it takes etcd's default 1.5 MiB.
    let mut config = EtcdConfig::new(cluster.endpoints.clone());
    config.max_request_bytes = 8 << 20;
    let store = EtcdStorage::connect(config).expect("connect");
    let started = Instant::now();
    let err = store
        .append_events(0, &event_batch(1, 1, 3 << 20))
        .expect_err("the cluster refuses the request");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused at once, not retried: {:?}: {err}",
        started.elapsed()
    );
    assert!(err.to_string().contains("too large"), "{err}");
    let failure = store
        .failure()
        .expect("a failure that cannot clear by itself");
    assert!(failure.contains("--max-request-bytes"), "{failure}");
    // Every later request is refused at once, naming it; nothing was written.
    let again = store
        .append_events(0, &event_batch(1, 1, 100))
        .expect_err("refused after the failure");
    assert!(again.to_string().contains("--max-request-bytes"), "{again}");
    let fresh = cluster.store(Duration::from_secs(10));
    assert_eq!(fresh.partitions().expect("partitions"), Vec::<u32>::new());
}

#[test]
fn every_read_of_the_plog_end_sees_another_writers_keys_and_a_store_wiped_under_it() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let (a, b) = (
        cluster.store(Duration::from_secs(10)),
        cluster.store(Duration::from_secs(10)),
    );
    let end = |s: &EtcdStorage| s.plog_bounds(0).expect("bounds").map_or(0, |b| b.1);
    let probed = |s: &EtcdStorage| {
        futures::executor::block_on(s.read_offsets(0))
            .expect("probe")
            .plog_next
    };
    for first in (1..=40).step_by(4) {
        a.append_events(0, &event_batch(first, 4, 16))
            .expect("A appends");
    }
    assert_eq!((end(&a), probed(&a)), (40, 41), "A's own appends");
    // B appends after the last key A has seen: every read of A's finds B's keys.
    b.append_events(0, &event_batch(41, 3, 16))
        .expect("B appends");
    b.append_events(0, &event_batch(44, 1, 16))
        .expect("B appends");
    assert_eq!(probed(&a), 45, "A's probe sees B's keys");
    match a.append_events(0, &event_batch(41, 1, 16)) {
        Err(AppendError::WrongOffset { expected, offered }) => {
            assert_eq!(
                (expected, offered),
                (45, 41),
                "the fence names the real end"
            );
        }
        other => panic!("A's stale append: {other:?}"),
    }
    assert_eq!(end(&a), 44);
    // The store wiped and rebuilt shorter: no key at or after what A saw last.
    cluster.wipe();
    b.append_events(0, &event_batch(1, 2, 16))
        .expect("B appends anew");
    assert_eq!(end(&a), 2, "A's end read falls back to the whole PLog");
    b.append_events(0, &event_batch(3, 1, 16))
        .expect("B appends");
    assert_eq!(probed(&a), 4, "A's probe too");
    cluster.wipe();
    b.append_events(0, &event_batch(1, 1, 16))
        .expect("B appends anew");
    match a.append_events(0, &event_batch(9, 1, 16)) {
        Err(AppendError::WrongOffset { expected, .. }) => {
            assert_eq!(
                expected, 2,
                "the fence's else branch falls back to the whole PLog"
            );
        }
        other => panic!("A's stale append: {other:?}"),
    }
    // A new store takes the stored offset as its first hint; one past the PLog's end (never
    // written so by a host) is not trusted either.
    futures::executor::block_on(b.write(0, vec![], 50)).expect("B writes the offset");
    let c = cluster.store(Duration::from_secs(10));
    assert_eq!(
        probed(&c),
        2,
        "C's first probe, hinted by the stored offset"
    );
    assert_eq!(end(&c), 1);
}
