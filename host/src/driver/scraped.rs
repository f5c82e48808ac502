//! The metrics of a real driver over a metered memory store, read back from the OpenMetrics
//! text a scrape gives: what moves when a sequencer is opened, numbers events, appends them
//! (and has an append refused by the offset fence) and flushes.

use std::sync::Arc;

use sequencer::{Params, SeqValue};

use crate::clock::MonotonicClock;
use crate::driver::{Driver, DriverConfig};
use crate::metrics::Metrics;
use crate::runtime::Runtime;
use crate::runtime::bindings::StartOutcome;
use crate::runtime::link::{Limits, component_path};
use crate::store::memory::MemoryStorage;
use crate::store::storage::AppendError;

const KIND: u16 = 1;
const SEQ: u16 = 1;
const PARTITION: u32 = 2;

/// The compiled component (`scripts/build-component.sh` builds it).
fn runtime() -> Runtime {
    let path = component_path();
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "no component at {} ({e}); build it first: bash scripts/build-component.sh",
            path.display()
        )
    });
    Runtime::from_bytes(&bytes, Limits::default()).expect("runtime")
}

/// The value of the one sample named exactly `series` (name and labels) in `text`.
fn value(text: &str, series: &str) -> f64 {
    let found: Vec<f64> = (text.lines())
        .filter_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap_or_else(|e| panic!("{series} {v}: {e}")))
        .collect();
    match found[..] {
        [v] => v,
        _ => panic!("{series}: {} samples in:\n{text}", found.len()),
    }
}

fn p(name: &str) -> String {
    format!("{name}{{partition=\"{PARTITION}\"}}")
}

#[test]
fn appends_starts_flushes_refusals_and_an_actualization_show_in_a_scrape() {
    let rt = runtime();
    let metrics = Metrics::new();
    let storage = metrics.storage(Arc::new(MemoryStorage::new()));
    let driver = Driver::spawn(
        storage.clone(),
        Arc::new(MonotonicClock::new()),
        DriverConfig::default(),
    )
    .with_metrics(&metrics);
    let params = Params::new().with_seq(KIND, SEQ, 1);

    // Nothing is known of a partition before it is opened.
    assert!(!metrics.encode().contains(&p("sequencer_starts_total")));
    let seq = driver.open(&rt, PARTITION, &params).expect("open");
    driver.idle();
    assert!(metrics.readiness().is_ready(), "{}", metrics.readiness());
    assert_eq!(metrics.readiness().owned, [PARTITION]);

    let mut offsets = Vec::new();
    for ws in [7, 8, 7, 9, 7] {
        let offset = match seq.start(KIND, ws).expect("start") {
            StartOutcome::Started(o) => o,
            other => panic!("not started: {other:?}"),
        };
        let id = seq.next(SEQ).expect("next");
        seq.append_event(offset, &[SeqValue::new(ws, SEQ, id)], b"event")
            .expect("append");
        seq.flush().expect("flush");
        offsets.push(offset);
    }
    assert_eq!(offsets, [1, 2, 3, 4, 5]);
    // Another writer's offset: refused by the fence, which names the PLog's end.
    let refused = seq.append_event(3, &[], b"late");
    assert!(
        matches!(refused, Err(AppendError::WrongOffset { .. })),
        "{refused:?}"
    );
    driver.idle();

    let text = metrics.encode();
    let v = |name: &str| value(&text, &p(name));
    assert_eq!(v("sequencer_starts_total"), 5.0);
    assert_eq!(v("sequencer_appends_total"), 5.0);
    assert_eq!(v("sequencer_appended_events_total"), 5.0);
    assert_eq!(v("sequencer_plog_next_offset"), 6.0);
    // Every number reached the view: the stored offset is the last flushed event's (the
    // store's rule, `Storage::write`), the one before the PLog's end; nothing is unflushed.
    assert_eq!(v("sequencer_view_next_offset"), 5.0, "{text}");
    assert_eq!(v("sequencer_unflushed_numbers"), 0.0);
    let flushes = v("sequencer_flushes_total");
    assert!((1.0..=5.0).contains(&flushes), "{flushes} flusher writes");
    assert!(v("sequencer_view_rows_total") >= flushes);
    assert_eq!(v("sequencer_actualizations_total"), 1.0);
    let by = |b: &str| {
        let s = format!("sequencer_appends_refused_total{{partition=\"{PARTITION}\",by=\"{b}\"}}");
        value(&text, &s)
    };
    assert_eq!(by("fence"), 1.0);
    assert_eq!(by("epoch"), 0.0);
    let state = |s: &str| {
        let series =
            format!("sequencer_partition_state{{partition=\"{PARTITION}\",state=\"{s}\"}}");
        value(&text, &series)
    };
    assert_eq!(state("ready"), 1.0);
    assert_eq!(state("actualizing"), 0.0);
    // The histograms count every acknowledged append and the one actualization; their sums
    // are real durations.
    assert_eq!(value(&text, "sequencer_append_seconds_count"), 5.0);
    assert!(value(&text, "sequencer_append_seconds_sum") > 0.0);
    assert_eq!(value(&text, "sequencer_actualization_seconds_count"), 1.0);
    assert!(value(&text, "sequencer_actualization_seconds_sum") > 0.0);
    assert_eq!(
        value(&text, "sequencer_view_write_seconds_count"),
        flushes,
        "one timing per flusher write"
    );
    assert_eq!(value(&text, "sequencer_damaged_events"), 0.0);
    assert_eq!(
        value(&text, "sequencer_append_seconds_bucket{le=\"+Inf\"}"),
        5.0
    );

    // Closed by its owner: not owned any more, so the host is ready with nothing to own.
    driver.shutdown(&[seq]);
    let text = metrics.encode();
    assert_eq!(
        value(
            &text,
            &format!("sequencer_partition_state{{partition=\"{PARTITION}\",state=\"closed\"}}")
        ),
        1.0
    );
    assert!(metrics.readiness().owned.is_empty());
}

#[test]
fn a_reopened_partition_actualizes_from_its_plog_and_counts_a_second_actualization() {
    let rt = runtime();
    let metrics = Metrics::new();
    let memory = MemoryStorage::new();
    let params = Params::new().with_seq(KIND, SEQ, 1);
    for life in 1..=2u64 {
        let storage = metrics.storage(Arc::new(memory.clone()));
        let driver = Driver::spawn(
            storage,
            Arc::new(MonotonicClock::new()),
            DriverConfig::default(),
        )
        .with_metrics(&metrics);
        let seq = driver.open(&rt, PARTITION, &params).expect("open");
        driver.idle();
        let offset = match seq.start(KIND, 7).expect("start") {
            StartOutcome::Started(o) => o,
            other => panic!("life {life}: not started: {other:?}"),
        };
        assert_eq!(
            offset, life,
            "the second life carries on after the first's event"
        );
        let id = seq.next(SEQ).expect("next");
        seq.append_event(offset, &[SeqValue::new(7, SEQ, id)], b"event")
            .expect("append");
        // The first life never flushes: its number is replayed from the PLog on reopening.
        if life == 2 {
            seq.flush().expect("flush");
        }
        driver.shutdown(&[seq]);
    }
    let text = metrics.encode();
    assert_eq!(value(&text, &p("sequencer_actualizations_total")), 2.0);
    assert_eq!(value(&text, &p("sequencer_starts_total")), 2.0);
    assert_eq!(value(&text, &p("sequencer_plog_next_offset")), 3.0);
    assert_eq!(value(&text, "sequencer_actualization_seconds_count"), 2.0);
}
