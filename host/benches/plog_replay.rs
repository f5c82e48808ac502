//! Replay speed of the PLog: paging through every event with `Storage::read_plog` as the
//! driver's actualization does (pages of 4,096 events, values decoded), from redb, from
//! object-store bundles and from event objects (one per append); and the durable append rate
//! of each (one partition, batches of 256 events of 128-byte payloads, every append synced).
//!
//! `cargo bench -p plog-sequencer-host --bench plog_replay`. Appends are timed on
//! `PLOG_REPLAY_EVENTS` events (default 20,000); replay from redb and from bundles on
//! `PLOG_REPLAY_LONG` events (default 1,048,576; the bundles written as `archive` writes them,
//! which is quicker than appending a million events), replay from event objects (not merged)
//! on the appended ones.
//!
//! With the `s3` feature and an S3 server named by `AWS_ENDPOINT_URL` (and keys), also the PLog
//! on S3 (bundles of 1,024; `PLOG_REPLAY_S3_EVENTS`, default 5,120: five bundles):
//! `bash scripts/s3-server.sh run cargo bench -p plog-sequencer-host --features s3 --bench
//! plog_replay`.

use std::time::Instant;

use futures::executor::block_on;
use sequencer::SeqValue;
use sequencer_host::store::ObjectStorage;
use sequencer_host::store::codec::encode_event;
use sequencer_host::store::redb::RedbStorage;
use sequencer_host::{EventBatch, Storage};

const PAGE: usize = 4096;
const BATCH: u64 = 256;

/// The values of the event at offset `o`: two numbers of one of 500 workspaces.
fn values(o: u64) -> [SeqValue; 2] {
    [
        SeqValue::new(o % 500 + 1, 1, o),
        SeqValue::new(o % 500 + 1, 2, 1_000_000 + o),
    ]
}

fn fill(storage: &dyn Storage, events: u64) -> f64 {
    let started = Instant::now();
    let mut first = 1;
    let mut batch = EventBatch::new(1);
    while first <= events {
        batch.reset(first);
        for o in first..(first + BATCH).min(events + 1) {
            batch.push(&values(o), &[b'.'; 128]);
        }
        storage.append_events(0, &batch).expect("append");
        first = batch.next();
    }
    events as f64 / started.elapsed().as_secs_f64()
}

/// `events` events (a multiple of the bundle size) written as bundles, the way `archive` does.
fn fill_bundles(storage: &ObjectStorage, events: u64) {
    let per = storage.plog().bundle_events();
    let mut o = 1;
    while o <= events {
        let bundle: Vec<Vec<u8>> = (o..o + per)
            .map(|o| encode_event(o, &values(o), &[b'.'; 128]))
            .collect();
        storage.plog().put_bundle(0, &bundle).expect("bundle");
        o += per;
    }
}

/// The best of three full replays, in events per second.
fn replay(storage: &dyn Storage, events: u64) -> f64 {
    (0..3)
        .map(|_| {
            let started = Instant::now();
            let (mut from, mut read) = (1, 0u64);
            loop {
                let page = block_on(storage.read_plog(0, from, PAGE)).expect("read");
                read += page.next - from;
                from = page.next;
                if page.end {
                    break;
                }
            }
            assert_eq!(read, events, "replayed every event");
            events as f64 / started.elapsed().as_secs_f64()
        })
        .fold(0.0, f64::max)
}

fn main() {
    let events: u64 = std::env::var("PLOG_REPLAY_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let long: u64 = std::env::var("PLOG_REPLAY_LONG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1u64 << 20)
        .div_ceil(1024)
        * 1024;
    let tmp = tempfile::tempdir().expect("temp dir");
    let redb = RedbStorage::create(&tmp.path().join("store.redb")).expect("redb");
    let redb_append = fill(&redb, events);
    drop(redb);
    let redb = RedbStorage::create(&tmp.path().join("long.redb")).expect("redb");
    fill(&redb, long);
    let redb_replay = replay(&redb, long);

    let bundled = ObjectStorage::open(&tmp.path().join("bundled"), Some(1024)).expect("objects");
    let bundled_append = fill(&bundled, events);
    drop(bundled);
    let bundled = ObjectStorage::open(&tmp.path().join("long"), Some(1024)).expect("objects");
    fill_bundles(&bundled, long);
    let bundled_replay = replay(&bundled, long);

    let loose = ObjectStorage::open(&tmp.path().join("loose"), Some(1 << 40)).expect("objects");
    let loose_append = fill(&loose, events);
    let loose_replay = replay(&loose, events);

    #[cfg_attr(not(feature = "s3"), allow(unused_mut))] // the S3 row needs the feature
    let mut rows = vec![
        ("redb".to_string(), redb_append, redb_replay),
        (
            "objects, bundles of 1024".into(),
            bundled_append,
            bundled_replay,
        ),
        ("objects, event objects".into(), loose_append, loose_replay),
    ];
    #[cfg(feature = "s3")]
    if std::env::var_os("AWS_ENDPOINT_URL").is_some() {
        let n: u64 = std::env::var("PLOG_REPLAY_S3_EVENTS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5_120);
        let url = format!("s3://sequencer/plog-replay-{}", std::process::id());
        let s3 = ObjectStorage::open_s3(
            &tmp.path().join("s3-view"),
            &url,
            Some(1024),
            std::time::Duration::from_secs(60),
        )
        .expect("the PLog on S3");
        let append = fill(&s3, n);
        s3.plog().merge_now().expect("merge");
        let bundled = replay(&s3, n);
        rows.push((format!("S3 {url}, bundles ({n} events)"), append, bundled));
    }

    println!(
        "appends: {events} events in appends of {BATCH} (durable); replay: pages of {PAGE}, \
         {long} events from redb and bundles, {events} from event objects"
    );
    println!(
        "{:<34} {:>14} {:>14}",
        "store", "append ev/s", "replay ev/s"
    );
    for (name, a, r) in rows {
        println!("{name:<34} {a:>14.0} {r:>14.0}");
    }
}
