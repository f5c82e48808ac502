//! The merger: a thread per writing handle that writes every complete, linked
//! bundle-sized range of event objects (of one event or of many, in either format) as a
//! bundle, makes it durable, then deletes the objects it holds.
//!
//! Two kinds of failure, kept apart ([`MergeError`]): a partition whose range has a hole, a
//! broken link or a conflicting bundle stops merging for good (the error is kept and
//! reported); a store that fails a request (S3 away for a while) is tried again under
//! [`RetryPolicy::MERGE`], and stops the partition's merging only once those retries are
//! spent. The other partitions go on either way.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use backon::ExponentialBackoff;

use sequencer::PLogOffset;

use crate::store::objects::bundle;
use crate::store::objects::names::{
    BUNDLES, bundle_object, event_object, event_object_at, partition_dir,
};
use crate::store::objects::scan::damaged;
use crate::store::objects::shared::{CreateError, Shared, lock};
use crate::store::objects::sweep::{first_sweep, sweep_every};
use crate::store::retry::{RetryPolicy, WarnLimiter};
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

/// Why a merge failed.
#[derive(Debug)]
pub(super) enum MergeError {
    /// The range cannot be merged as it stands (a hole, a broken link, a damaged event, a
    /// conflicting bundle): merging that partition stops for good.
    Broken(StorageError),
    /// The store failed a request (each retried first): the same merge may succeed later.
    Store(StorageError),
}

impl From<MergeError> for StorageError {
    fn from(e: MergeError) -> Self {
        match e {
            MergeError::Broken(e) | MergeError::Store(e) => e,
        }
    }
}

/// A partition whose merge the store failed: when to try again, and the waits left.
struct Retrying {
    at: Instant,
    waits: ExponentialBackoff,
}

/// Merges the partitions appends name (each is sent once a bundle-sized range may be
/// complete), and every partition every [`MERGE_POLL`], and deletes merged objects when their
/// time comes, until the handle is dropped (objects still waiting are left in place: the next
/// writable open finds them under their bundles). A partition the store failed is tried
/// again after its next wait under [`RetryPolicy::MERGE`]; once those are spent, its
/// merging stops with the store's error.
fn merger_loop(shared: &Shared, rx: &mpsc::Receiver<PartitionId>) {
    let mut retrying: HashMap<PartitionId, Retrying> = HashMap::new();
    let mut sweeps = Sweeps::default();
    let warnings = WarnLimiter::new(Duration::from_secs(5));
    loop {
        sweeps.run_due(shared, &warnings);
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
        let now = Instant::now();
        for p in wanted {
            if retrying.get(&p).is_some_and(|r| r.at > now) {
                continue;
            }
            // A broken range is kept on the partition (and logged) by `merge_ready`; merging
            // goes on elsewhere.
            match shared.merge_ready(p) {
                Ok(_) | Err(MergeError::Broken(_)) => {
                    retrying.remove(&p);
                }
                Err(MergeError::Store(e)) => {
                    let r = retrying.entry(p).or_insert_with(|| Retrying {
                        at: now,
                        waits: RetryPolicy::MERGE.waits(u64::from(p)),
                    });
                    match r.waits.next() {
                        Some(wait) => {
                            r.at = Instant::now() + wait;
                            warnings.warn("merge", || {
                                format!("{e}; merging partition {p} again in {wait:.1?}")
                            });
                        }
                        None => {
                            tracing::error!(
                                "{e}; the store failed the merge for too long: merging stops on partition {p}"
                            );
                            lock(&shared.part(p)).merge_error = Some(e.0);
                            retrying.remove(&p);
                        }
                    }
                }
            }
        }
    }
}

/// When the merger next sweeps each partition it knows ([`Shared::sweep_leftovers`]), and
/// when it next looks (an append's wake-up does not cost a pass over the partitions).
#[derive(Default)]
struct Sweeps {
    due: HashMap<PartitionId, Instant>,
    next_look: Option<Instant>,
}

impl Sweeps {
    /// Sweeps the partitions whose time has come: a partition met for the first time
    /// [`first_sweep`] later, then every [`sweep_every`]. A failed sweep is tried at the next.
    fn run_due(&mut self, shared: &Shared, warnings: &WarnLimiter) {
        if shared.delete_delay.is_zero() {
            return;
        }
        let (first, every) = (
            first_sweep(shared.delete_delay),
            sweep_every(shared.delete_delay),
        );
        let now = Instant::now();
        if self.next_look.is_some_and(|at| now < at) {
            return;
        }
        self.next_look = Some(now + MERGE_POLL);
        let known: Vec<PartitionId> = lock(&shared.parts).keys().copied().collect();
        for p in known {
            let due = self.due.entry(p).or_insert(now + first);
            if *due > now {
                continue;
            }
            *due = now + every;
            if let Err(e) = shared.sweep_leftovers(p) {
                warnings.warn("sweep", || {
                    format!("{e}; the objects left under partition {p}'s bundles stay until the next sweep")
                });
            }
        }
    }
}

impl Shared {
    /// Merges every complete, linked bundle-sized range of a partition; returns how many
    /// bundles it wrote. A broken range stops the partition's merging (kept in its
    /// `merge_error`); a store's failure is only returned.
    pub(super) fn merge_ready(&self, p: PartitionId) -> Result<u64, MergeError> {
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
                Err(MergeError::Broken(e)) => {
                    tracing::error!("{e}; merging stops on partition {p}");
                    lock(&part).merge_error = Some(e.0.clone());
                    return Err(MergeError::Broken(e));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes the bundle of `first..first + bundle_events` (whose predecessor's hash is
    /// `prev`), makes it durable, then deletes the event objects it holds (at once, or after
    /// the store's delete delay). Returns the hash of its last event.
    fn merge(&self, p: PartitionId, first: PLogOffset, prev: u64) -> Result<u64, MergeError> {
        use MergeError::{Broken, Store};
        let last = first + self.bundle_events - 1;
        // The objects that hold the range, as this handle knows them (every writer cuts its
        // objects at bundle boundaries), read at once from a few threads.
        // With their names, and the takeover marks among them, which go with them.
        let (firsts, names): (Vec<PLogOffset>, Vec<String>) = {
            let part = self.part(p);
            let st = lock(&part);
            let firsts: Vec<PLogOffset> = st.tail.range(first..=last).map(|(f, _)| *f).collect();
            let marks = st.marks.range((first, None)..=(last, Some(u64::MAX)));
            let names = (firsts.iter().map(|&f| st.key(f)))
                .chain(marks.copied())
                .map(|k| event_object_at(p, k))
                .collect();
            (firsts, names)
        };
        // A hole in the range as this handle knows it: another host's merger may have bundled
        // the range first, its objects then deleted, or this handle's tail moved past the range
        // meanwhile (an append's rescan found that bundle between the merger reading where to
        // start and reading the tail here).
        let hole = |o: PLogOffset| -> Result<u64, MergeError> {
            if let Some(b) = self.get_bundle(p, first).map_err(Store)?
                && b.prev == prev
            {
                return Ok(b.last_hash());
            }
            Err(Broken(StorageError(format!(
                "object store: partition {p}: hole at offset {o} while merging {first}..={last}: {} is missing",
                event_object(p, o)
            ))))
        };
        let mut events: Vec<(u64, Vec<u8>)> = Vec::with_capacity(self.bundle_events as usize);
        let mut link = prev;
        let mut o = first;
        for (&f, obj) in firsts
            .iter()
            .zip(self.objects_for(p, &firsts).map_err(Store)?)
        {
            let Some(e) = obj.filter(|_| f == o) else {
                return hole(o);
            };
            if let Some(bad) = e.damaged {
                return Err(Broken(damaged(p, bad, o)));
            }
            if e.prev != link || e.last() > last {
                return Err(Broken(StorageError(format!(
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
                ))));
            }
            link = e.last_hash();
            o = e.last() + 1;
            events.extend((0..e.len()).map(|i| (e.hashes[i], e.event(i).to_vec())));
        }
        if o != last + 1 {
            return hole(o);
        }
        let name = bundle_object(p, first, last);
        match self.create(&name, &bundle::encode(first, prev, &events)) {
            Ok(_) => {}
            Err(CreateError::Taken) => {
                return Err(Broken(StorageError(format!(
                    "object store: partition {p}: two different objects for offsets {first}..={last}: {name} exists and differs from the events it should hold"
                ))));
            }
            Err(CreateError::Storage(e)) => return Err(Store(e)),
        }
        self.sync_objects(&partition_dir(BUNDLES, p), &[name])
            .map_err(Store)?;
        self.stats.bundles_written.fetch_add(1, Ordering::Relaxed);
        // The objects go in two halves, with the kill test's pause before each.
        let (a, b) = names.split_at(names.len() / 2);
        for half in [a, b] {
            if !self.merge_pause.is_zero() {
                std::thread::sleep(self.merge_pause);
            }
            self.delete_later(half.to_vec()).map_err(Store)?;
        }
        self.stats
            .merged_events
            .fetch_add(self.bundle_events, Ordering::Relaxed);
        Ok(link)
    }
}
