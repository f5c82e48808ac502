//! The etcd store alone with the main job's transaction shape: what the cluster takes when
//! nothing but the store works. One thread per partition appends packs of
//! `STORE_ALONE_EVENTS_PER_APPEND` events (128-byte payloads, three numbers of one workspace
//! each, as `sequencer-host run` appends them) back to back, and beside the appends keeps one
//! flusher write of the sequences view in flight (the numbers appended meanwhile, by
//! workspace, and the stored offset), at most one per the store's
//! [`view_write_interval`](sequencer_host::Storage::view_write_interval), as the main job's
//! flusher does; no component, no reads, no failed commands. `scripts/bench-durable.sh` runs it beside the main job on etcd.
//!
//! `STORE_ALONE_URL=etcd://HOST:PORT,... cargo bench -p plog-sequencer-host --features etcd
//! --bench store_alone`; `STORE_ALONE_PARTITIONS` (8), `STORE_ALONE_WORKSPACES` (1,000 over
//! all partitions), `STORE_ALONE_EVENTS` (events per partition, 5,000),
//! `STORE_ALONE_EVENTS_PER_APPEND` (90). Prints `durable events/s N` and the shape.

use std::collections::BTreeMap;
use std::time::Instant;

use futures::FutureExt;
use sequencer::{Number, SeqValue};
use sequencer_host::StorageFuture;
use sequencer_host::store::etcd::EtcdStorage;
use sequencer_host::{EventBatch, Storage, StorageError};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One partition's appends and flusher writes; returns the events appended.
fn partition(
    store: &EtcdStorage, p: u32, workspaces: u64, events: u64, per_append: u64,
) -> Result<u64, StorageError> {
    let payload = vec![b'.'; 128];
    let mut last: BTreeMap<(u64, u16), Number> = BTreeMap::new();
    let mut waiting: BTreeMap<(u64, u16), Number> = BTreeMap::new();
    let mut write: Option<StorageFuture<()>> = None;
    let mut next = 1u64;
    let interval = store.view_write_interval();
    let mut write_began: Option<Instant> = None;
    let mut x = u64::from(p) * 0x9e37_79b9 + 1;
    while next <= events {
        let mut batch = EventBatch::new(next);
        for _ in 0..per_append.min(events + 1 - next) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ws = u64::from(p) + 1 + (x % workspaces.max(1)) * 1024;
            let values: Vec<SeqValue> = [1u16, 2, 3]
                .iter()
                .map(|&s| {
                    let n = last.entry((ws, s)).or_insert(0);
                    *n += 1;
                    waiting.insert((ws, s), *n);
                    SeqValue::new(ws, s, *n)
                })
                .collect();
            batch.push(&values, &payload);
        }
        store
            .append_events(p, &batch)
            .map_err(|e| StorageError(e.to_string()))?;
        next = batch.next();
        // One flusher write in flight at a time, carrying everything appended meanwhile, and
        // begun no sooner than the store's view write interval after the last (as the
        // main job's driver holds them).
        if write_began.is_some_and(|at| at.elapsed() < interval) {
            continue;
        }
        let done = match write.as_mut().map(|w| w.now_or_never()) {
            None => true,
            Some(None) => false,
            Some(Some(r)) => {
                r?;
                true
            }
        };
        if done {
            let values = std::mem::take(&mut waiting)
                .into_iter()
                .map(|((ws, s), n)| SeqValue::new(ws, s, n))
                .collect();
            write = Some(store.write(p, values, next - 1));
            write_began = Some(Instant::now());
        }
    }
    if let Some(w) = write {
        futures::executor::block_on(w)?;
    }
    Ok(next - 1)
}

fn main() {
    let Ok(url) = std::env::var("STORE_ALONE_URL") else {
        eprintln!("store_alone: set STORE_ALONE_URL=etcd://HOST:PORT,... (skipped)");
        return;
    };
    let partitions = env("STORE_ALONE_PARTITIONS", 8) as u32;
    let workspaces = env("STORE_ALONE_WORKSPACES", 1000) / u64::from(partitions.max(1));
    let events = env("STORE_ALONE_EVENTS", 5000);
    let per_append = env("STORE_ALONE_EVENTS_PER_APPEND", 90).max(1);
    let store = EtcdStorage::connect_url(&url).expect("connect");
    let started = Instant::now();
    let appended: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..partitions)
            .map(|p| {
                let store = &store;
                s.spawn(move || partition(store, p, workspaces, events, per_append))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("partition thread")
                    .expect("the store failed")
            })
            .sum()
    });
    let secs = started.elapsed().as_secs_f64();
    // The lines `scripts/bench-durable.sh` reads, in the main job's words and order.
    println!("events  {appended}");
    println!(
        "shape {partitions} partitions, {per_append} events per append, {workspaces} workspaces each, one view write in flight, at most one per {} ms",
        store.view_write_interval().as_millis()
    );
    println!("durable events/s {:.0}", appended as f64 / secs);
    println!(
        "etcd transactions (appends: {per_append} events each, and the view writes beside them)"
    );
}
