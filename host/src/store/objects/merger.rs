//! The merger: a thread per writing handle that writes every complete, linked
//! bundle-sized range of event objects (of one event or of many, in either format) as a
//! bundle, makes it durable, then deletes the objects it holds. A partition whose range has a hole, a broken link or a conflicting bundle
//! stops merging (the error is kept and reported); the others go on.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use sequencer::PLogOffset;

use crate::store::objects::bundle::Bundle;
use crate::store::objects::names::{BUNDLES, bundle_object, event_object, partition_dir};
use crate::store::objects::scan::damaged;
use crate::store::objects::shared::{CreateError, Shared, lock};
use crate::store::storage::{PartitionId, StorageError};

/// Names a pause (milliseconds) the merger makes after writing a bundle and half-way
/// through deleting what it holds: lets the kill test land SIGKILLs inside merges.
pub const MERGE_PAUSE_ENV: &str = "SEQUENCER_OBJECTS_MERGE_PAUSE_MS";

/// How often the merger looks at every partition even when no append woke it.
const MERGE_POLL: Duration = Duration::from_millis(500);

/// The pause [`MERGE_PAUSE_ENV`] asks for (none when it is unset or not a number).
pub(super) fn merge_pause() -> Duration {
    Duration::from_millis(
        std::env::var(MERGE_PAUSE_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    )
}

/// The merger thread of a handle, stopped and joined when the last clone of the handle drops it.
pub(super) struct MergerThread(Mutex<Option<JoinHandle<()>>>, Arc<Shared>);

impl Drop for MergerThread {
    fn drop(&mut self) {
        lock(&self.1.merge_tx).take();
        if let Some(t) = lock(&self.0).take() {
            let _ = t.join();
        }
    }
}

impl MergerThread {
    /// Starts the merger of `shared` when `merge` (a handle that writes), else none.
    pub(super) fn start(shared: &Arc<Shared>, merge: bool) -> Self {
        let mut handle = None;
        if merge {
            let (tx, rx) = mpsc::channel();
            *lock(&shared.merge_tx) = Some(tx);
            let s = shared.clone();
            handle = std::thread::Builder::new()
                .name("plog-merger".into())
                .spawn(move || merger_loop(&s, &rx))
                .ok();
        }
        Self(Mutex::new(handle), shared.clone())
    }
}

/// Merges the partitions appends name (each is sent once a bundle-sized range may be
/// complete), and every partition every [`MERGE_POLL`], and deletes merged objects when their
/// time comes, until the handle is dropped (objects still waiting are left in place: the next
/// writable open finds them under their bundles).
fn merger_loop(shared: &Shared, rx: &mpsc::Receiver<PartitionId>) {
    loop {
        let wait = match shared.delete_due() {
            Some(at) => at
                .saturating_duration_since(std::time::Instant::now())
                .min(MERGE_POLL),
            None => MERGE_POLL,
        };
        let wanted: Vec<PartitionId> = match rx.recv_timeout(wait) {
            Ok(p) => {
                let mut v = vec![p];
                v.extend(rx.try_iter());
                v.sort_unstable();
                v.dedup();
                v
            }
            Err(RecvTimeoutError::Timeout) => lock(&shared.parts).keys().copied().collect(),
            Err(RecvTimeoutError::Disconnected) => return,
        };
        for p in wanted {
            // An error is kept on the partition (and logged); merging goes on elsewhere.
            let _ = shared.merge_ready(p);
        }
    }
}

impl Shared {
    /// Merges every complete, linked bundle-sized range of a partition; returns how many
    /// bundles it wrote.
    pub(super) fn merge_ready(&self, p: PartitionId) -> Result<u64, StorageError> {
        let _merging = lock(&self.merging);
        let part = self.part(p);
        let mut written = 0;
        loop {
            let (first, prev) = {
                let st = lock(&part);
                if st.merge_error.is_some() || st.next < st.merged_to + 1 + self.bundle_events {
                    return Ok(written);
                }
                (st.merged_to + 1, st.merged_hash)
            };
            match self.merge(p, first, prev) {
                Ok(last_hash) => {
                    lock(&part).merged(first + self.bundle_events - 1, last_hash);
                    written += 1;
                }
                Err(e) => {
                    tracing::error!("{e}; merging stops on partition {p}");
                    lock(&part).merge_error = Some(e.0.clone());
                    return Err(e);
                }
            }
        }
    }

    /// Writes the bundle of `first..first + bundle_events` (whose predecessor's hash is
    /// `prev`), makes it durable, then deletes the event objects it holds (at once, or after
    /// the store's delete delay). Returns the hash of its last event.
    fn merge(&self, p: PartitionId, first: PLogOffset, prev: u64) -> Result<u64, StorageError> {
        let last = first + self.bundle_events - 1;
        // The objects that hold the range, as this handle knows them (every writer cuts its
        // objects at bundle boundaries), read at once from a few threads.
        let firsts: Vec<PLogOffset> = {
            let part = self.part(p);
            let st = lock(&part);
            st.tail.range(first..=last).map(|(f, _)| *f).collect()
        };
        // A hole in the range as this handle knows it: another host's merger may have bundled
        // the range first, its objects then deleted, or this handle's tail moved past the range
        // meanwhile (an append's rescan found that bundle between the merger reading where to
        // start and reading the tail here).
        let hole = |o: PLogOffset| -> Result<u64, StorageError> {
            if let Some(b) = self.get_bundle(p, first)?
                && b.prev == prev
            {
                return Ok(b.last_hash());
            }
            Err(StorageError(format!(
                "object store: partition {p}: hole at offset {o} while merging {first}..={last}: {} is missing",
                event_object(p, o)
            )))
        };
        let mut events: Vec<(u64, Vec<u8>)> = Vec::with_capacity(self.bundle_events as usize);
        let mut link = prev;
        let mut o = first;
        for (&f, obj) in firsts.iter().zip(self.objects_for(p, &firsts)?) {
            let Some(e) = obj.filter(|_| f == o) else {
                return hole(o);
            };
            if let Some(bad) = e.damaged {
                return Err(damaged(p, bad, o));
            }
            if e.prev != link || e.last() > last {
                return Err(StorageError(format!(
                    "object store: partition {p}: {} at offset {o} while merging {first}..={last}: {} (writer {}, offsets {o}..={}) {}",
                    if e.prev != link {
                        "broken link"
                    } else {
                        "an object across a bundle's end"
                    },
                    event_object(p, o),
                    e.writer,
                    e.last(),
                    if e.prev != link {
                        format!("does not follow offset {}", o - 1)
                    } else {
                        format!("does not end by offset {last}")
                    }
                )));
            }
            link = e.last_hash();
            o = e.last() + 1;
            events.extend((0..e.len()).map(|i| (e.hashes[i], e.event(i).to_vec())));
        }
        if o != last + 1 {
            return hole(o);
        }
        let name = bundle_object(p, first, last);
        match self.create(&name, &Bundle::encode(first, prev, &events)) {
            Ok(_) => {}
            Err(CreateError::Taken) => {
                return Err(StorageError(format!(
                    "object store: partition {p}: two different objects for offsets {first}..={last}: {name} exists and differs from the events it should hold"
                )));
            }
            Err(CreateError::Storage(e)) => return Err(e),
        }
        self.sync_objects(&partition_dir(BUNDLES, p), &[name])?;
        self.stats.bundles_written.fetch_add(1, Ordering::Relaxed);
        // The objects go in two halves, with the kill test's pause before each.
        let names: Vec<String> = firsts.iter().map(|&f| event_object(p, f)).collect();
        let (a, b) = names.split_at(names.len() / 2);
        for half in [a, b] {
            if !self.merge_pause.is_zero() {
                std::thread::sleep(self.merge_pause);
            }
            self.delete_later(half.to_vec())?;
        }
        self.stats
            .merged_events
            .fetch_add(self.bundle_events, Ordering::Relaxed);
        Ok(link)
    }
}
