//! What a host shows its operators while it runs: metrics in the OpenMetrics text format
//! (Prometheus scrapes it), whether it is alive, and whether every partition it owns is ready.
//!
//! One [`Metrics`] per host (a cheap handle; clones share it) is given to the driver
//! ([`Driver::with_metrics`](crate::Driver::with_metrics)), which registers each partition it
//! opens, and layered over the store ([`Metrics::storage`]), which counts appends, flushes and
//! refusals and times them; a membership on etcd takes it from its driver and records
//! takeovers, handovers, losses and its lease. A scrape ([`Metrics::encode`]) reads what is
//! kept as things happen (atomics) and, at that moment, each partition's state and unflushed
//! numbers, the lease's time left and the store's own counters.
//!
//! The library serves nothing: `sequencer-host run --metrics ADDR` serves `/metrics`,
//! `/healthz` and `/readyz` from these calls, and an embedder mounts the same on its own
//! server ([`Metrics::encode`], [`Metrics::health`], [`Metrics::readiness`]) or registers the
//! same series in its own registry ([`Metrics::register`]).
//!
//! | file | what it does |
//! |---|---|
//! | `families.rs` | every family kept as things happen, its name and help, registered once |
//! | `metered.rs` | [`Metered`]: the layer over a store that counts and times its calls |
//! | `partition.rs` | [`PartitionMetrics`]: one partition's handles and state, [`PartitionProbe`] |
//! | `scrape.rs` | what is read at a scrape: states, unflushed numbers, the lease, the store's counters |

mod families;
mod metered;
mod partition;
mod scrape;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use prometheus_client::registry::Registry;

pub use metered::Metered;
pub use partition::{PartitionMetrics, PartitionProbe, PartitionState};

use crate::store::stats::StoreStats;
use crate::store::storage::{PartitionId, Storage};
use families::Families;
use scrape::Scraped;

/// A host's metrics (see the module's documentation). Cloning it gives another handle on
/// the same series.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

/// What the series and the scrape share.
pub(crate) struct Inner {
    pub(crate) families: Families,
    pub(crate) partitions: RwLock<BTreeMap<PartitionId, Arc<PartitionMetrics>>>,
    pub(crate) sources: Mutex<Sources>,
    /// The host is still opening the partitions it will own ([`Metrics::set_opening`]).
    opening: AtomicBool,
    registry: Registry,
    epoch: Instant,
}

/// Where a scrape reads what is not kept as it happens.
#[derive(Default)]
pub(crate) struct Sources {
    /// The store's own counters ([`StoreStats`]).
    pub(crate) store_stats: Option<Box<dyn Fn() -> StoreStats + Send + Sync>>,
    /// The storage, for its failure and its damaged event.
    pub(crate) storage: Option<Arc<dyn Storage>>,
    /// The time left before the host's lease may have expired.
    pub(crate) lease: Option<Box<dyn Fn() -> Option<Duration> + Send + Sync>>,
    /// What stopped the membership, if anything did.
    pub(crate) membership: Option<Box<dyn Fn() -> Option<String> + Send + Sync>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("partitions", &self.partition_ids())
            .finish()
    }
}

/// Whether every partition a host owns is ready ([`Metrics::readiness`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    /// The host is still opening its partitions ([`Metrics::set_opening`]).
    pub opening: bool,
    /// The partitions the host owns (open and not lost), ascending.
    pub owned: Vec<PartitionId>,
    /// Those of them not ready, with their state.
    pub not_ready: Vec<(PartitionId, PartitionState)>,
}

impl Readiness {
    /// True when the host opened its partitions and every one it owns is ready.
    pub fn is_ready(&self) -> bool {
        !self.opening && self.not_ready.is_empty()
    }
}

impl std::fmt::Display for Readiness {
    /// `ready: 8 partitions`, `not ready: opening partitions`, or `not ready: partition 3
    /// actualizing, partition 5 not_now`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.opening {
            return write!(f, "not ready: opening partitions");
        }
        if self.is_ready() {
            return write!(f, "ready: {} partitions", self.owned.len());
        }
        let parts: Vec<String> = (self.not_ready.iter())
            .map(|(p, s)| format!("partition {p} {}", s.label()))
            .collect();
        write!(f, "not ready: {}", parts.join(", "))
    }
}

impl Metrics {
    /// A host's metrics, with no partition yet; series are named `sequencer_…`.
    pub fn new() -> Self {
        let families = Families::new();
        // Every known label value from the start, at 0: a rate or an alert sees the first one.
        for op in STORAGE_OPS {
            let _ = families.storage_errors.get_or_create(&[("op", op)]);
        }
        for reason in LOST_REASONS {
            let _ = families
                .partitions_lost
                .get_or_create(&[("reason", reason)]);
        }
        let mut registry = Registry::with_prefix("sequencer");
        families.register(&mut registry);
        let inner = Arc::new_cyclic(|weak| {
            registry.register_collector(Box::new(Scraped(weak.clone())));
            Inner {
                families,
                partitions: RwLock::new(BTreeMap::new()),
                sources: Mutex::new(Sources::default()),
                opening: AtomicBool::new(false),
                registry,
                epoch: Instant::now(),
            }
        });
        Self { inner }
    }

    /// Registers the same series in an embedder's own `registry` (to be encoded with its
    /// other metrics); this handle keeps recording into them.
    pub fn register(&self, registry: &mut Registry) {
        let sub = registry.sub_registry_with_prefix("sequencer");
        self.inner.families.register(sub);
        sub.register_collector(Box::new(Scraped(Arc::downgrade(&self.inner))));
    }

    /// Every series now, in the OpenMetrics text format (ending in `# EOF`), as `/metrics`
    /// serves it (content type [`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(64 * 1024);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.inner.registry);
        out
    }

    /// Every series now in the Prometheus text format 0.0.4 (content type
    /// [`TEXT_CONTENT_TYPE`]), for a scraper that does not accept OpenMetrics and for
    /// `promtool check metrics`; the same samples as [`encode`](Self::encode).
    pub fn encode_text(&self) -> String {
        scrape::to_text_format(&self.encode())
    }

    /// The handles of partition `p`'s series, made on first use.
    pub fn partition(&self, p: PartitionId) -> Arc<PartitionMetrics> {
        if let Some(m) = self.read_partitions().get(&p) {
            return m.clone();
        }
        let mut all = self
            .inner
            .partitions
            .write()
            .unwrap_or_else(|e| e.into_inner());
        all.entry(p)
            .or_insert_with(|| {
                Arc::new(PartitionMetrics::new(
                    p,
                    &self.inner.families,
                    self.inner.epoch,
                ))
            })
            .clone()
    }

    fn read_partitions(
        &self,
    ) -> std::sync::RwLockReadGuard<'_, BTreeMap<PartitionId, Arc<PartitionMetrics>>> {
        self.inner
            .partitions
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn partition_ids(&self) -> Vec<PartitionId> {
        self.read_partitions().keys().copied().collect()
    }

    /// `storage` with every append, flusher write and read counted and timed into these
    /// metrics (a layer over any store; put it under the read-ahead, so that the numbers
    /// reads timed are the store's). Its failure and damaged event are read at each scrape.
    pub fn storage(&self, storage: Arc<dyn Storage>) -> Arc<dyn Storage> {
        self.sources().storage = Some(storage.clone());
        Arc::new(Metered::new(storage, self.clone()))
    }

    /// Reads the store's own counters at each scrape, as `sequencer_store_…` series (the
    /// CLI passes [`Store::stats_source`](crate::store::Store::stats_source)).
    pub fn watch_store_stats(&self, stats: impl Fn() -> StoreStats + Send + Sync + 'static) {
        self.sources().store_stats = Some(Box::new(stats));
    }

    /// Reads the time left before the host's lease may have expired at each scrape (`None`:
    /// no lease now).
    pub fn watch_lease(&self, left: impl Fn() -> Option<Duration> + Send + Sync + 'static) {
        self.sources().lease = Some(Box::new(left));
    }

    /// Reads what stopped the host's membership, if anything did, for [`health`](Self::health).
    pub fn watch_membership(&self, failure: impl Fn() -> Option<String> + Send + Sync + 'static) {
        self.sources().membership = Some(Box::new(failure));
    }

    pub(crate) fn sources(&self) -> std::sync::MutexGuard<'_, Sources> {
        self.inner.sources.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn families(&self) -> &Families {
        &self.inner.families
    }

    /// Whether the host is alive: `Err` says why not (the store takes no more writes until it
    /// is reopened, or the membership stopped); a restart is what helps then.
    pub fn health(&self) -> Result<(), String> {
        let s = self.sources();
        if let Some(f) = s.storage.as_ref().and_then(|st| st.failure()) {
            return Err(format!("the store takes no writes: {f}"));
        }
        if let Some(f) = s.membership.as_ref().and_then(|m| m()) {
            return Err(format!("the membership stopped: {f}"));
        }
        Ok(())
    }

    /// Whether every partition the host owns (opened and not lost or closed) has recovered
    /// from its PLog since it was opened. An actualization after a failed command and a "not
    /// now" are passing states (`sequencer_partition_state` shows them): they do not make
    /// the host unready, or a probe would flap with every failed command.
    pub fn readiness(&self) -> Readiness {
        let mut owned = Vec::new();
        let mut not_ready = Vec::new();
        for (&p, m) in self.read_partitions().iter() {
            match m.state() {
                PartitionState::Lost | PartitionState::Closed => continue,
                now if !m.recovered() => not_ready.push((p, now)),
                _ => {}
            }
            owned.push(p);
        }
        let opening = self.inner.opening.load(Ordering::Relaxed);
        Readiness {
            opening,
            owned,
            not_ready,
        }
    }

    /// While `opening`, the host is not ready whatever its partitions' states: a host that
    /// serves its endpoint before it opened its partitions sets it until they are opened
    /// (else it would be ready with none). Unset at first.
    pub fn set_opening(&self, opening: bool) {
        self.inner.opening.store(opening, Ordering::Relaxed);
    }

    /// A takeover (`true`) or a graceful handover (`false`) that took `took`.
    pub fn transfer(&self, takeover: bool, took: Duration) {
        let f = &self.inner.families;
        let (count, hist) = match takeover {
            true => (&f.takeovers, &f.takeover_seconds),
            false => (&f.handovers, &f.handover_seconds),
        };
        count.inc();
        hist.observe(took.as_secs_f64());
    }

    /// Partition `p` is not this host's any more, for `reason` (`handed_over`,
    /// `epoch_refused`, `lease_expired`, `left`).
    pub fn partition_lost(&self, p: PartitionId, reason: &'static str) {
        self.partition(p).mark_lost();
        (self.inner.families.partitions_lost)
            .get_or_create(&[("reason", reason)])
            .inc();
    }
}

/// The storage operations whose failures are counted (`sequencer_storage_errors_total{op}`).
pub const STORAGE_OPS: [&str; 5] = [
    "append",
    "view_write",
    "read_numbers",
    "read_plog",
    "read_next_offset",
];

/// Why a host stops owning a partition (`sequencer_partitions_lost_total{reason}`).
pub const LOST_REASONS: [&str; 4] = ["handed_over", "epoch_refused", "lease_expired", "left"];

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`Metrics::encode_text`]'s text.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A sequencer's state as a test sets it.
    struct Fixed(Mutex<PartitionState>);

    impl PartitionProbe for Fixed {
        fn state(&self) -> PartitionState {
            *self.0.lock().unwrap()
        }
        fn unflushed(&self) -> Option<u64> {
            Some(7)
        }
    }

    impl Fixed {
        fn set(&self, state: PartitionState) {
            *self.0.lock().unwrap() = state;
        }
    }

    fn opened(m: &Metrics, p: PartitionId) -> (Arc<PartitionMetrics>, Arc<Fixed>) {
        let probe = Arc::new(Fixed(Mutex::new(PartitionState::Actualizing)));
        let pm = m.partition(p);
        let weak: std::sync::Weak<dyn PartitionProbe> = Arc::downgrade(&probe) as _;
        pm.opened(weak);
        (pm, probe)
    }

    /// The partition of `p` and `s` recovered: its sequencer ready, its actualization done.
    fn recovered(p: &PartitionMetrics, s: &Fixed) {
        s.set(PartitionState::Ready);
        p.actualizing(false, true);
    }

    /// Partition `p` of `m`, opened and recovered.
    fn ready(m: &Metrics, p: PartitionId) -> (Arc<PartitionMetrics>, Arc<Fixed>) {
        let (pm, probe) = opened(m, p);
        recovered(&pm, &probe);
        (pm, probe)
    }

    #[test]
    fn a_host_is_ready_once_every_owned_partition_recovered_and_stays_ready_through_passing_states()
    {
        let m = Metrics::new();
        let (p0, s0) = opened(&m, 0);
        let (p1, s1) = opened(&m, 1);
        assert_eq!(m.readiness().not_ready.len(), 2, "{}", m.readiness());
        recovered(&p0, &s0);
        assert_eq!(m.readiness().not_ready, [(1, PartitionState::Actualizing)]);
        recovered(&p1, &s1);
        assert!(m.readiness().is_ready());
        // A failed command's actualization, and a "not now", pass.
        s1.set(PartitionState::Actualizing);
        p1.started(0, Some(true));
        assert!(m.readiness().is_ready());
        assert_eq!(p1.state(), PartitionState::Actualizing);
        // A lost partition is not owned.
        drop(s0);
        m.partition_lost(0, "epoch_refused");
        assert_eq!(p0.state(), PartitionState::Lost);
        assert_eq!(m.readiness().owned, [1]);
        // A host still opening its partitions is not ready, whatever they are.
        m.set_opening(true);
        assert!(!m.readiness().is_ready());
        assert_eq!(m.readiness().to_string(), "not ready: opening partitions");
        m.set_opening(false);
        assert_eq!(m.readiness().to_string(), "ready: 1 partitions");
    }

    #[test]
    fn a_scrape_shows_every_family_and_ends_in_eof() {
        let m = Metrics::new();
        let (p, _s) = ready(&m, 3);
        p.started(5, None);
        p.started(0, Some(true));
        let text = m.encode();
        for want in [
            "sequencer_starts_total{partition=\"3\"} 5",
            "sequencer_not_now_total{partition=\"3\",reason=\"too_many_unflushed\"} 1",
            "sequencer_actualizations_total{partition=\"3\"} 1",
            "sequencer_partition_state{partition=\"3\",state=\"not_now\"} 1",
            "sequencer_unflushed_numbers{partition=\"3\"} 7",
            "sequencer_damaged_events 0",
            "# TYPE sequencer_append_seconds histogram",
        ] {
            assert!(text.contains(want), "{want} missing from:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    /// `line`, a sample, holds a number and belongs to the family of `families` (name to type)
    /// that its name starts with, under a suffix that family's type allows.
    fn sample_of_a_described_family(line: &str, families: &BTreeMap<String, String>) {
        let (series, value) = line.rsplit_once(' ').expect("name value");
        value
            .parse::<f64>()
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        let name = series.split('{').next().unwrap_or_default();
        let (family, kind) = (families.iter())
            .filter(|(f, _)| name.starts_with(f.as_str()))
            .max_by_key(|(f, _)| f.len())
            .unwrap_or_else(|| panic!("sample of no family: {line}"));
        let suffix = &name[family.len()..];
        let allowed: &[&str] = match kind.as_str() {
            "counter" => &["_total"],
            "gauge" => &[""],
            "histogram" => &["_bucket", "_sum", "_count"],
            other => panic!("unexpected type {other}"),
        };
        assert!(allowed.contains(&suffix), "{line} in a {kind}");
    }

    /// The text follows OpenMetrics' shape: each family is described once (`# HELP`, `# TYPE`,
    /// `# UNIT` for seconds) before its samples, which carry the suffixes its type allows,
    /// and `# EOF` ends it.
    #[test]
    fn the_text_is_openmetrics_every_sample_under_its_described_family() {
        let m = Metrics::new();
        let (p, _s) = ready(&m, 1);
        p.started(2, None);
        m.transfer(true, Duration::from_millis(30));
        m.watch_lease(|| Some(Duration::from_secs(4)));
        let text = m.encode();
        let mut families: BTreeMap<String, String> = BTreeMap::new();
        let mut helped = std::collections::BTreeSet::new();
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            if line == "# EOF" {
                assert!(lines.peek().is_none(), "text after # EOF");
                break;
            }
            let words: Vec<&str> = line.splitn(4, ' ').collect();
            match words[..] {
                ["#", "TYPE", name, kind] => {
                    let again = families.insert(name.into(), kind.into());
                    assert!(again.is_none(), "{name} described twice");
                    assert!(name.starts_with("sequencer_"), "{name}");
                }
                ["#", "HELP", name, ..] => {
                    assert!(helped.insert(name.to_string()), "{name} helped twice");
                }
                ["#", "UNIT", name, unit] => {
                    assert_eq!(unit, "seconds");
                    assert!(name.ends_with("_seconds"), "{line}");
                }
                _ => sample_of_a_described_family(line, &families),
            }
        }
        assert!(text.ends_with("# EOF\n"));
        let described: std::collections::BTreeSet<String> = families.keys().cloned().collect();
        assert_eq!(helped, described, "every family has its help and its type");
        for f in [
            "sequencer_takeover_seconds",
            "sequencer_lease_time_left_seconds",
            "sequencer_partition_state",
            "sequencer_appends_refused",
        ] {
            assert!(families.contains_key(f), "{f} missing: {families:?}");
        }
        assert!(
            text.contains("sequencer_lease_time_left_seconds 4.0"),
            "{text}"
        );
        assert!(text.contains("sequencer_takeovers_total 1"), "{text}");
    }

    /// The text format names each counter's samples in its `# HELP` and `# TYPE`, has no
    /// `# UNIT` or `# EOF`, and carries the same samples.
    #[test]
    fn the_text_format_describes_counters_by_their_samples_name() {
        let m = Metrics::new();
        m.partition(0).started(3, Some(false));
        let (open, text) = (m.encode(), m.encode_text());
        assert!(
            text.contains("# TYPE sequencer_starts_total counter\n"),
            "{text}"
        );
        assert!(text.contains("# HELP sequencer_starts_total Transactions started"));
        assert!(text.contains("# HELP sequencer_not_now_total Starts answered \"not now\""));
        assert!(text.contains("# TYPE sequencer_append_seconds histogram\n"));
        assert!(
            !text.contains("# UNIT") && !text.contains("# EOF"),
            "{text}"
        );
        let samples = |t: &str| -> Vec<String> {
            (t.lines().filter(|l| !l.starts_with('#')))
                .map(String::from)
                .collect()
        };
        assert_eq!(samples(&open), samples(&text));
        assert!(samples(&text).contains(&"sequencer_starts_total{partition=\"0\"} 3".into()));
    }

    #[test]
    fn an_embedder_s_registry_carries_the_same_series() {
        let m = Metrics::new();
        let mut registry = Registry::default();
        m.register(&mut registry);
        m.partition(2).started(1, None);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("sequencer_starts_total{partition=\"2\"} 1"),
            "{text}"
        );
    }
}
