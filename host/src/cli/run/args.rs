//! The options of `run`, their parsers, and what they decide: the sequencer's params, the
//! numbering layout, and the store's options.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use sequencer::Params;
use sequencer_host::metrics::Metrics;
use sequencer_host::store::{ArchiveUse, OpenOptions, encoded_len};
use sequencer_host::store::{Layout, LayoutSeq};
use sequencer_host::{Clock, Driver, DriverConfig, Storage};

use super::super::common::{ArchiveSpec, CliError, CliResult, KIND, SEQS, StoreArg, parse_secs};
use super::super::component;
use sequencer_host::store::DEFAULT_DATA_DIR;

/// Values a partition may hold unwritten (staged batches included) before `start` says "not
/// now": the default (500) is smaller than one batch of 256 events over a few hundred keys.
const MAX_UNFLUSHED_VALUES: usize = 100_000;

pub(super) fn params() -> Params {
    SEQS.iter()
        .fold(Params::new(), |p, s| p.with_seq(KIND, s.id, s.initial))
        .with_max_unflushed_values(MAX_UNFLUSHED_VALUES)
}

/// The longest a command processor waits for its sequencer to become ready.
pub(super) const READY_WITHIN: Duration = Duration::from_secs(120);

/// The most numbers one event of the workload takes (1 + 3 + 2).
pub(super) const MAX_NUMBERS: usize = 6;

/// Options of `run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// The data directory (created if missing; resumed if it exists).
    #[arg(long, env = "SEQUENCER_DATA", default_value = DEFAULT_DATA_DIR)]
    pub data: PathBuf,
    /// Storage backend: redb (in --data; the old name `embedded` works too), memory, objects
    /// (the PLog as one object per append, merged into bundles, in --data; objects:DIR in DIR;
    /// objects:s3://BUCKET/PREFIX on S3 with the view in --data, feature `s3`), or
    /// etcd://HOST:PORT,... (an etcd cluster shared by many hosts; --data is not used).
    #[arg(long, default_value = "redb")]
    pub store: StoreArg,
    /// Events per bundle of a new object store (an existing one keeps its own).
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    pub bundle_events: Option<u64>,
    /// The component to run and the compiled-component cache.
    #[command(flatten)]
    pub component: component::ComponentArgs,
    /// Partitions, each with its own sequencer and command-processor thread.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub partitions: u32,
    /// Workspaces, spread over the partitions.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub workspaces: u64,
    /// Events per partition.
    #[arg(long, default_value_t = 2500)]
    pub events: u64,
    /// Share of events that fail after `start` and take the `actualize` path (0 to below
    /// 1: at 1 no event would ever reach the PLog and the run could never finish).
    #[arg(long, default_value_t = 0.01, value_parser = parse_share)]
    pub fail_rate: f64,
    /// Bytes of payload per PLog event (at most 16 MiB; a store may accept less).
    #[arg(long, default_value_t = 128, value_parser = parse_payload_bytes)]
    pub payload_bytes: usize,
    /// Seed of the workload's choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Events per durable append (one PLog write); 1 appends each event on its own.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub batch_size: u64,
    /// The longest a batch's first event waits for more commands before the batch is
    /// appended, in milliseconds (only an offered --rate makes commands wait).
    #[arg(long, default_value_t = 2.0, value_parser = parse_millis)]
    pub batch_wait_ms: f64,
    /// Commands offered per second over all partitions (evenly spaced); 0: as fast as the
    /// store acknowledges them.
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub rate: f64,
    /// How long to wait for a store that lost its majority (etcd), or a PLog on S3 that
    /// answers nothing, before stopping, in seconds: the run goes on by itself when the store
    /// is back.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub store_wait_s: u64,
    /// The shortest time between two flusher writes of a partition, in milliseconds: the
    /// values flushed meanwhile go together, in fewer, larger writes of the sequences view.
    /// Unset: the store's own (etcd 200, every other store 0: each write at once).
    #[arg(long, value_parser = parse_millis)]
    pub flush_interval_ms: Option<f64>,
    /// The archive of the store's old PLog events, objects:DIR (recorded with the store the
    /// first time; see `archive`). Without it, a recorded archive is used.
    #[arg(long)]
    pub archive: Option<ArchiveSpec>,
    /// Archive and trim every SECS seconds while the workload runs (needs an archive,
    /// recorded or --archive; redb or etcd store).
    #[arg(long, value_parser = parse_secs)]
    pub archive_every: Option<f64>,
    /// This host's name among many on one etcd cluster (`--store etcd://...`): the host then
    /// serves only the partitions it owns through its lease, as they come and go, until every
    /// partition's PLog holds --events events; without it the host serves every partition.
    #[arg(long)]
    pub host_name: Option<String>,
    /// The TTL of the host's lease, in seconds (with --host-name): a host that stops renewing
    /// it loses its partitions to the others within about that long.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=60))]
    pub lease_ttl_s: u64,
    /// Events per bundle of a new archive.
    #[arg(long, default_value_t = sequencer_host::store::layers::archive::DEFAULT_ARCHIVE_BUNDLE_EVENTS, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    pub archive_bundle_events: u64,
    /// Serve actualizations from what this host appended, once one read proves no other host
    /// appended after it (etcd; other stores read the store): on or off (to compare).
    #[arg(long, env = "SEQUENCER_OWN_TAIL", default_value = "on", action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub own_tail: bool,
    /// Serve this host's metrics (`/metrics`, OpenMetrics text), liveness (`/healthz`) and
    /// readiness (`/readyz`: every partition it owns ready) over HTTP at ADDR: PORT or :PORT
    /// (loopback), or HOST:PORT; `:0` picks a free port (logged).
    #[arg(long, value_name = "ADDR", value_parser = super::endpoint::parse_addr)]
    pub metrics: Option<std::net::SocketAddr>,
    /// Write every acknowledged event's acknowledgement time and latency to FILE at the end,
    /// one `UNIX_MS LATENCY_US` line each (partition by partition), to set the run's latency
    /// against another timeline (what ran beside it, and when). A host alone: refused with
    /// --host-name.
    #[arg(long, value_name = "FILE")]
    pub latency_log: Option<PathBuf>,
}

fn parse_millis(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=60_000.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of milliseconds from 0 to 60000"
        )),
    }
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a rate (events per second, 0 for no limit)"
        )),
    }
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        Ok(1.0) => Err(format!(
            "{s:?}: with every event failing none reaches the PLog and the run never finishes; give a share below 1"
        )),
        _ => Err(format!("{s:?} is not a share from 0 to below 1")),
    }
}

/// The largest payload `run` makes: a command processor's event, not a file; a batch holds up
/// to --batch-size of them in memory at once.
const MAX_PAYLOAD_BYTES: usize = 16 << 20;

/// The most payload bytes one partition's batch may hold in memory.
const MAX_BATCH_BYTES: u64 = 256 << 20;

fn parse_payload_bytes(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= MAX_PAYLOAD_BYTES => Ok(n),
        Ok(_) => Err(format!(
            "{s:?} bytes is more than a payload may hold ({MAX_PAYLOAD_BYTES} bytes)"
        )),
        Err(_) => Err(format!("{s:?} is not a number of bytes")),
    }
}

/// The numbering layout of this run: its partition count, the workload's kind and sequences.
pub fn layout(args: &RunArgs) -> Layout {
    Layout {
        partitions: args.partitions,
        kind: KIND,
        sequences: (SEQS.iter())
            .map(|s| LayoutSeq {
                id: s.id,
                name: s.name.into(),
                initial: s.initial,
            })
            .collect(),
    }
}

impl RunArgs {
    /// The task driver over `storage`: group commit of the view as --flush-interval-ms says,
    /// else as the store prefers ([`Storage::view_write_interval`]); recording into `metrics`.
    pub(super) fn driver(
        &self, storage: Arc<dyn Storage>, clock: Arc<dyn Clock>, metrics: Option<&Metrics>,
    ) -> Driver {
        let mut driver = Driver::spawn(storage, clock, DriverConfig::default());
        if let Some(m) = metrics {
            driver = driver.with_metrics(m);
        }
        match self.flush_interval_ms {
            Some(ms) => driver.with_min_write_interval(Duration::from_secs_f64(ms / 1000.0)),
            None => driver,
        }
    }

    /// Refuses options that could never finish or fit in memory, before anything is opened.
    pub fn validate(&self) -> CliResult<()> {
        if self.host_name.is_some() && self.store.0.backend() != "etcd" {
            return Err(CliError(format!(
                "--host-name {}: many hosts share an etcd store only; give --store etcd://HOST:PORT,...",
                self.host_name.as_deref().unwrap_or_default()
            )));
        }
        if let (Some(name), Some(log)) = (&self.host_name, &self.latency_log) {
            return Err(CliError(format!(
                "--latency-log {}: a host alone logs its latencies; a host among many (--host-name {name}) does not",
                log.display()
            )));
        }
        let batch_bytes = (self.payload_bytes as u64).saturating_mul(self.batch_size);
        if batch_bytes > MAX_BATCH_BYTES {
            return Err(CliError(format!(
                "--payload-bytes {} with --batch-size {} holds {batch_bytes} bytes of payload per batch in memory, more than {MAX_BATCH_BYTES}: give a smaller --batch-size or --payload-bytes",
                self.payload_bytes, self.batch_size
            )));
        }
        Ok(())
    }

    /// The largest event the workload appends: the command as JSON (at most ~160 bytes),
    /// padded to --payload-bytes.
    pub fn largest_event(&self) -> usize {
        encoded_len(MAX_NUMBERS, self.payload_bytes.max(160))
    }

    /// How the store is opened for this run: its layout, sizes, waits and archive.
    pub fn open_options(&self) -> OpenOptions {
        let mut archive = ArchiveUse::default().bundle_events(self.archive_bundle_events);
        if let Some(ArchiveSpec(root)) = &self.archive {
            archive = archive.named(root);
        }
        if self.archive_every.is_some() {
            archive = archive.writable();
        }
        let mut options = OpenOptions::new()
            .data(&self.data)
            .layout(layout(self))
            .store_wait(Duration::from_secs(self.store_wait_s))
            .largest_event(self.largest_event())
            .archive(archive)
            .own_tail(self.own_tail);
        if let Some(n) = self.bundle_events {
            options = options.bundle_events(n);
        }
        options
    }
}
