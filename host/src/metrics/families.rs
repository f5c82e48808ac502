//! The metric families a host keeps, each registered once with its name and help: the
//! per-partition counters and gauges the driver and the metered store update as things
//! happen, the host's histograms, and the membership's transfers.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::store::storage::PartitionId;

/// The label set of a per-partition series: `partition="3"`.
pub(crate) type PartitionLabel = [(&'static str, PartitionId); 1];

/// A per-partition series with one more label: `partition="3",reason="actualizing"`.
pub(crate) type PartitionAnd = (PartitionLabel, [(&'static str, &'static str); 1]);

/// A host-wide series with one label: `op="append"`.
pub(crate) type OneLabel = [(&'static str, &'static str); 1];

/// Latency buckets, in seconds: 50 µs to 10 s (appends and reads on redb take well under a
/// millisecond, on etcd a few; actualizations and takeovers take up to seconds).
const LATENCY_BUCKETS: [f64; 16] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 10.0,
];

/// Every family a host keeps that is updated as things happen (cheap clones: each is a
/// handle on shared atomics).
#[derive(Clone, Debug)]
pub(crate) struct Families {
    pub(crate) plog_next_offset: Family<PartitionLabel, Gauge>,
    pub(crate) view_next_offset: Family<PartitionLabel, Gauge>,
    pub(crate) starts: Family<PartitionLabel, Counter>,
    pub(crate) not_now: Family<PartitionAnd, Counter>,
    pub(crate) appends: Family<PartitionLabel, Counter>,
    pub(crate) appended_events: Family<PartitionLabel, Counter>,
    pub(crate) flushes: Family<PartitionLabel, Counter>,
    pub(crate) view_rows: Family<PartitionLabel, Counter>,
    pub(crate) actualizations: Family<PartitionLabel, Counter>,
    pub(crate) refused: Family<PartitionAnd, Counter>,
    pub(crate) storage_errors: Family<OneLabel, Counter>,
    pub(crate) partitions_lost: Family<OneLabel, Counter>,
    pub(crate) actualization_seconds: Histogram,
    pub(crate) append_seconds: Histogram,
    pub(crate) numbers_read_seconds: Histogram,
    pub(crate) view_write_seconds: Histogram,
    pub(crate) takeovers: Counter,
    pub(crate) handovers: Counter,
    pub(crate) takeover_seconds: Histogram,
    pub(crate) handover_seconds: Histogram,
}

fn latency() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

impl Families {
    pub(crate) fn new() -> Self {
        Self {
            plog_next_offset: Family::default(),
            view_next_offset: Family::default(),
            starts: Family::default(),
            not_now: Family::default(),
            appends: Family::default(),
            appended_events: Family::default(),
            flushes: Family::default(),
            view_rows: Family::default(),
            actualizations: Family::default(),
            refused: Family::default(),
            storage_errors: Family::default(),
            partitions_lost: Family::default(),
            actualization_seconds: latency(),
            append_seconds: latency(),
            numbers_read_seconds: latency(),
            view_write_seconds: latency(),
            takeovers: Counter::default(),
            handovers: Counter::default(),
            takeover_seconds: latency(),
            handover_seconds: latency(),
        }
    }

    /// Registers every family in `r` (names without the registry's prefix; counters get
    /// `_total`, histograms `_seconds` from their unit).
    pub(crate) fn register(&self, r: &mut Registry) {
        self.register_counts(r);
        self.register_latencies(r);
    }

    /// The gauges and counters.
    fn register_counts(&self, r: &mut Registry) {
        r.register(
            "plog_next_offset",
            "The offset the partition's next PLog event takes, as this host last saw it (an append, or the end of an actualization's replay)",
            self.plog_next_offset.clone(),
        );
        r.register(
            "view_next_offset",
            "The partition's stored PLog offset (the view's): every event before it has its numbers in the sequences view",
            self.view_next_offset.clone(),
        );
        r.register(
            "starts",
            "Transactions started (events numbered)",
            self.starts.clone(),
        );
        r.register(
            "not_now",
            "Starts answered \"not now\", by reason (actualizing, too_many_unflushed)",
            self.not_now.clone(),
        );
        r.register(
            "appends",
            "PLog appends acknowledged (durable)",
            self.appends.clone(),
        );
        r.register(
            "appended_events",
            "PLog events appended (durable)",
            self.appended_events.clone(),
        );
        r.register(
            "flushes",
            "Flusher writes of the sequences view completed",
            self.flushes.clone(),
        );
        r.register(
            "view_rows",
            "Rows of the sequences view written by completed flusher writes",
            self.view_rows.clone(),
        );
        r.register(
            "actualizations",
            "Actualizations completed (the sequencer recovered from the view and the PLog)",
            self.actualizations.clone(),
        );
        r.register(
            "appends_refused",
            "PLog appends refused, by what refused them: the offset fence (another writer was first) or the epoch (another host owns the partition)",
            self.refused.clone(),
        );
        r.register(
            "storage_errors",
            "Storage operations that failed, by operation (append, view_write, read_numbers, read_plog, read_next_offset)",
            self.storage_errors.clone(),
        );
        r.register(
            "partitions_lost",
            "Partitions this host stopped owning, by reason (handed_over, epoch_refused, lease_expired, left)",
            self.partitions_lost.clone(),
        );
        r.register(
            "takeovers",
            "Partitions this host took after another host owned them",
            self.takeovers.clone(),
        );
        r.register(
            "handovers",
            "Partitions this host handed over gracefully",
            self.handovers.clone(),
        );
    }

    /// The histograms, in seconds.
    fn register_latencies(&self, r: &mut Registry) {
        let h = [
            (
                "actualization",
                "Time from an actualization's start to the sequencer ready",
                &self.actualization_seconds,
            ),
            (
                "append",
                "Time of one PLog append, from the call to the durable acknowledgement",
                &self.append_seconds,
            ),
            (
                "numbers_read",
                "Time of one read of workspaces' numbers from the store",
                &self.numbers_read_seconds,
            ),
            (
                "view_write",
                "Time of one flusher write of the sequences view",
                &self.view_write_seconds,
            ),
            (
                "takeover",
                "Time from a previous owner's key seen gone to this host's key created",
                &self.takeover_seconds,
            ),
            (
                "handover",
                "Time from a handover's request to the partition's key deleted",
                &self.handover_seconds,
            ),
        ];
        for (name, help, hist) in h {
            r.register_with_unit(name, help, Unit::Seconds, hist.clone());
        }
    }
}
