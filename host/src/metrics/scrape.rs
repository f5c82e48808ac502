//! What a scrape reads at that moment rather than as it happens: each partition's state and
//! unflushed numbers, the lease's time left, the store's damaged event and its own counters.

use std::sync::Weak;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

use super::Inner;
use super::partition::PartitionState;
use crate::store::stats::StoreStats;

/// The collector registered beside the families (it holds the metrics weakly: the registry
/// lives inside them).
#[derive(Debug)]
pub(crate) struct Scraped(pub(crate) Weak<Inner>);

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

type Fmt = Result<(), std::fmt::Error>;

impl Collector for Scraped {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Fmt {
        let Some(inner) = self.0.upgrade() else {
            return Ok(());
        };
        partitions(&inner, &mut encoder)?;
        let sources = inner.sources.lock().unwrap_or_else(|e| e.into_inner());
        let damaged = sources.storage.as_ref().and_then(|s| s.damaged());
        let gauge = |e: &mut DescriptorEncoder, name, help, v: i64| -> Fmt {
            ConstGauge::new(v).encode(e.encode_descriptor(name, help, None, MetricType::Gauge)?)
        };
        gauge(
            &mut encoder,
            "damaged_events",
            "PLog events a read of this host's store refused because they fail their checksum (the first is kept: 0 or 1)",
            i64::from(damaged.is_some()),
        )?;
        // Described on every host (a dashboard's query names it whatever the store), with a
        // sample only where a lease is held (many hosts on etcd).
        let help = "Time left before this host's lease may have expired (it stops numbering then); no sample without a lease";
        let m = encoder.encode_descriptor(
            "lease_time_left",
            help,
            Some(&Unit::Seconds),
            MetricType::Gauge,
        )?;
        if let Some(left) = sources.lease.as_ref().and_then(|l| l()) {
            ConstGauge::new(left.as_secs_f64()).encode(m)?;
        }
        if let Some(stats) = sources.store_stats.as_ref().map(|s| s()) {
            store_counters(&stats, &mut encoder)?;
        }
        Ok(())
    }
}

/// Each partition's state (one series per state, 1 for the one it is in) and unflushed
/// numbers.
fn partitions(inner: &Inner, encoder: &mut DescriptorEncoder) -> Fmt {
    let parts: Vec<_> = (inner.partitions.read().unwrap_or_else(|e| e.into_inner()))
        .values()
        .cloned()
        .collect();
    let states: Vec<PartitionState> = parts.iter().map(|m| m.state()).collect();
    let mut e = encoder.encode_descriptor(
        "partition_state",
        "The partition's state on this host: 1 for the state it is in (ready, actualizing, not_now: its last start was refused for too many unflushed numbers, lost: another host owns it, closed)",
        None,
        MetricType::Gauge,
    )?;
    for (m, &now) in parts.iter().zip(&states) {
        for s in PartitionState::ALL {
            let labels = [
                ("partition", m.partition().to_string()),
                ("state", s.label().into()),
            ];
            ConstGauge::new(i64::from(s == now)).encode(e.encode_family(&labels)?)?;
        }
    }
    let mut e = encoder.encode_descriptor(
        "unflushed_numbers",
        "Numbers the partition's sequencer holds that are not in the sequences view yet",
        None,
        MetricType::Gauge,
    )?;
    for (m, &now) in parts.iter().zip(&states) {
        if matches!(now, PartitionState::Lost | PartitionState::Closed) {
            continue;
        }
        let n = m.unflushed();
        ConstGauge::new(n as i64).encode(e.encode_family(&[("partition", m.partition())])?)?;
    }
    Ok(())
}

/// The store's own counters, `sequencer_store_<name>_total` (only those the backend keeps).
/// A time counted in nanoseconds is given in seconds (`sequencer_store_commit_seconds_total`),
/// Prometheus's base unit.
fn store_counters(stats: &StoreStats, encoder: &mut DescriptorEncoder) -> Fmt {
    for (c, v) in stats.kept() {
        let name = format!("store_{}", c.name().replace([' ', '-'], "_"));
        if let Some(what) = name.strip_suffix("_nanoseconds") {
            let help = format!("The store's own total of {} time", &what["store_".len()..]);
            let m = encoder.encode_descriptor(
                what,
                &help,
                Some(&Unit::Seconds),
                MetricType::Counter,
            )?;
            ConstCounter::new(v as f64 / 1e9).encode(m)?;
            continue;
        }
        let help = format!("The store's own count of {}", c.name());
        let m = encoder.encode_descriptor(&name, &help, None, MetricType::Counter)?;
        ConstCounter::new(v).encode(m)?;
    }
    Ok(())
}

/// `text` (OpenMetrics, as [`Metrics::encode`](super::Metrics::encode) writes it) in the
/// Prometheus text format 0.0.4, for scrapers and tools that read only that (`promtool check
/// metrics`): a counter's `# HELP` and `# TYPE` name its samples (`…_total`), `# UNIT` and
/// `# EOF` go, and help texts drop OpenMetrics' escaped quotes. The samples are the same.
pub(crate) fn to_text_format(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut help: Option<(&str, String)> = None;
    for line in text.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, words) = rest.split_once(' ').unwrap_or((rest, ""));
            help = Some((name, words.replace("\\\"", "\"")));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let named = match kind {
                "counter" => format!("{name}_total"),
                _ => name.to_string(),
            };
            if let Some((_, words)) = help.take().filter(|(h, _)| *h == name) {
                out.push_str(&format!("# HELP {named} {words}\n"));
            }
            out.push_str(&format!("# TYPE {named} {kind}\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
