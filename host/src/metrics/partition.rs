//! One partition's metrics: handles on its series, resolved once when the partition is
//! opened (so recording is an atomic add, no lookup), what the host last knew of its state,
//! and where its sequencer's state is read at a scrape.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, Weak};
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

use super::families::Families;
use crate::store::storage::PartitionId;

/// What a partition's sequencer is doing, as a scrape reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionState {
    /// Numbering events.
    Ready,
    /// Recovering from the view and the PLog: starts are answered "not now".
    Actualizing,
    /// Ready, but its last start was answered "not now" (too many numbers wait for the
    /// flusher).
    NotNow,
    /// Closed after the host stopped owning it (another host owns it, or may).
    Lost,
    /// Closed by its owner (the run ended, or the embedder closed it).
    Closed,
}

impl PartitionState {
    /// Every state, in the order a scrape lists them.
    pub const ALL: [PartitionState; 5] = [
        Self::Ready,
        Self::Actualizing,
        Self::NotNow,
        Self::Lost,
        Self::Closed,
    ];

    /// The state's label value (`ready`, `actualizing`, `not_now`, `lost`, `closed`).
    pub fn label(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Actualizing => "actualizing",
            Self::NotNow => "not_now",
            Self::Lost => "lost",
            Self::Closed => "closed",
        }
    }
}

/// The series of `family` with `labels`, made if new. (The family's lock is let go before
/// this returns: holding it while making another series of the family would deadlock.)
fn series<S, M>(family: &Family<S, M>, labels: &S) -> M
where
    S: Clone + std::hash::Hash + Eq,
    M: Clone + Default,
{
    family.get_or_create(labels).clone()
}

/// What a partition's sequencer tells a scrape (the driver's side implements it).
pub trait PartitionProbe: Send + Sync {
    /// Whether it is ready, actualizing or closed (`Ready`, `Actualizing` or `Closed`).
    fn state(&self) -> PartitionState;

    /// The numbers it holds that are not in the view yet (waiting, being written, or in the
    /// open transaction), if it can say without waiting for a caller's call.
    fn unflushed(&self) -> Option<u64>;
}

/// One partition's series and state (see the module's documentation).
pub struct PartitionMetrics {
    pub(crate) partition: PartitionId,
    pub(crate) plog_next: Gauge,
    pub(crate) view_next: Gauge,
    starts: Counter,
    not_now_actualizing: Counter,
    not_now_unflushed: Counter,
    pub(crate) appends: Counter,
    pub(crate) appended_events: Counter,
    pub(crate) flushes: Counter,
    pub(crate) view_rows: Counter,
    actualizations: Counter,
    pub(crate) refused_fence: Counter,
    pub(crate) refused_epoch: Counter,
    actualization_seconds: Histogram,
    /// The last start was answered "not now" for too many unflushed numbers.
    not_now: AtomicBool,
    /// The host stopped owning the partition.
    lost: AtomicBool,
    /// An actualization completed since the sequencer was opened (it recovered from its PLog
    /// once: later actualizations, after a failed command, are passing states).
    recovered: AtomicBool,
    /// Nanoseconds after `epoch` when the running actualization began, plus one (0: none).
    actualizing_since: AtomicU64,
    epoch: Instant,
    probe: Mutex<Option<Weak<dyn PartitionProbe>>>,
    /// The last unflushed count a scrape read (kept while the sequencer is busy).
    pub(crate) last_unflushed: AtomicU64,
}

impl PartitionMetrics {
    pub(crate) fn new(p: PartitionId, f: &Families, epoch: Instant) -> Self {
        let l = [("partition", p)];
        let reason = |r: &'static str| (l, [("reason", r)]);
        let by = |r: &'static str| (l, [("by", r)]);
        Self {
            partition: p,
            plog_next: series(&f.plog_next_offset, &l),
            view_next: series(&f.view_next_offset, &l),
            starts: series(&f.starts, &l),
            not_now_actualizing: series(&f.not_now, &reason("actualizing")),
            not_now_unflushed: series(&f.not_now, &reason("too_many_unflushed")),
            appends: series(&f.appends, &l),
            appended_events: series(&f.appended_events, &l),
            flushes: series(&f.flushes, &l),
            view_rows: series(&f.view_rows, &l),
            actualizations: series(&f.actualizations, &l),
            refused_fence: series(&f.refused, &by("fence")),
            refused_epoch: series(&f.refused, &by("epoch")),
            actualization_seconds: f.actualization_seconds.clone(),
            not_now: AtomicBool::new(false),
            lost: AtomicBool::new(false),
            recovered: AtomicBool::new(false),
            actualizing_since: AtomicU64::new(0),
            epoch,
            probe: Mutex::new(None),
            last_unflushed: AtomicU64::new(0),
        }
    }

    /// The partition.
    pub fn partition(&self) -> PartitionId {
        self.partition
    }

    /// A sequencer of the partition opened (again): its state is read from `probe` from now
    /// on, and an actualization begins.
    pub fn opened(&self, probe: Weak<dyn PartitionProbe>) {
        *self.probe.lock().unwrap_or_else(|p| p.into_inner()) = Some(probe);
        self.lost.store(false, Ordering::Relaxed);
        self.recovered.store(false, Ordering::Relaxed);
        self.not_now.store(false, Ordering::Relaxed);
        self.actualizing(true, false);
    }

    /// The host stopped owning the partition (its sequencer is closed).
    pub fn mark_lost(&self) {
        self.lost.store(true, Ordering::Relaxed);
    }

    /// `n` transactions started; `not_now` is the reason the next one was not, if one was
    /// not ([`NotNowReason`](crate::NotNowReason)'s `TooManyUnflushed` is `true`).
    #[inline]
    pub fn started(&self, n: u64, not_now: Option<bool>) {
        if n > 0 {
            self.starts.inc_by(n);
            if self.not_now.load(Ordering::Relaxed) {
                self.not_now.store(false, Ordering::Relaxed);
            }
        }
        match not_now {
            None => {}
            Some(true) => {
                self.not_now_unflushed.inc();
                self.not_now.store(true, Ordering::Relaxed);
            }
            Some(false) => {
                self.not_now_actualizing.inc();
            }
        }
    }

    /// The sequencer began (`now`) or ended (not `now`) an actualization: an end after a
    /// beginning that `completed` it (the sequencer is ready, not closed) is counted, with its
    /// duration.
    pub fn actualizing(&self, now: bool, completed: bool) {
        let nanos = self.epoch.elapsed().as_nanos() as u64 + 1;
        if now {
            let _ = self.actualizing_since.compare_exchange(
                0,
                nanos,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        } else {
            let began = self.actualizing_since.swap(0, Ordering::Relaxed);
            if began > 0 && completed {
                self.recovered.store(true, Ordering::Relaxed);
                self.actualizations.inc();
                let took = nanos.saturating_sub(began) as f64 / 1e9;
                self.actualization_seconds.observe(took);
            }
        }
    }

    /// The partition's state now.
    pub fn state(&self) -> PartitionState {
        let probe = self.probe.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let seen = probe
            .and_then(|p| p.upgrade())
            .map_or(PartitionState::Closed, |p| p.state());
        match seen {
            PartitionState::Closed if self.lost.load(Ordering::Relaxed) => PartitionState::Lost,
            PartitionState::Ready if self.not_now.load(Ordering::Relaxed) => PartitionState::NotNow,
            other => other,
        }
    }

    /// Whether the sequencer has recovered from its PLog since it was opened (a readiness
    /// probe's question: an actualization after a failed command, or a "not now", passes).
    pub fn recovered(&self) -> bool {
        self.recovered.load(Ordering::Relaxed)
    }

    /// The numbers waiting for the flusher now, or the last count read while the sequencer
    /// was busy.
    pub fn unflushed(&self) -> u64 {
        let probe = self.probe.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match probe.and_then(|p| p.upgrade()).and_then(|p| p.unflushed()) {
            Some(n) => {
                self.last_unflushed.store(n, Ordering::Relaxed);
                n
            }
            None => self.last_unflushed.load(Ordering::Relaxed),
        }
    }
}
