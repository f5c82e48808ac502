//! `run`: the command-processor workload.
//!
//! One thread per partition plays a command processor that appends its events in batches:
//! each command picks a workspace and takes its event's PLog offset and numbers with one
//! `start_next` (one WLog offset, one to three record ids, zero to two C-record ids, as spec
//! 002's system sequences), then `stage`s the event; once the batch is full (`--batch-size`),
//! or the next command would make its first event wait longer than `--batch-wait-ms`, or the
//! sequencer says "not now", the batch goes to the PLog with one durable `append_events`, and
//! `flush` completes all its events at once. A share of commands fail after `start` (their
//! numbers go back): that ends the batch, whose events so far are appended, then `actualize`
//! drops the failed one (and replays the appended ones from the PLog). A failed or refused
//! append takes the `actualize` path for the whole batch. `--batch-size 1` is one event per
//! durable write (no `stage`), for comparison.

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use backon::ExponentialBackoff;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use sequencer::testkit::Rng;
use sequencer::{Number, PLogOffset, Params, SeqId, SeqValue, WsId};
use sequencer_host::bindings::{NotNowReason, StartOutcome, Status};
use sequencer_host::{
    AppendError, AppendLimits, DataDir, DirState, Driver, DriverConfig, EventBatch, HostError,
    Layout, LayoutSeq, Limits, MemoryStorage, MonotonicClock, ObjectStorage, OpenMode, PartitionId,
    PartitionSequencer, ReadAhead, RetryPolicy, Runtime, Storage, StoreReader, WarnLimiter,
    encoded_len,
};
use sequencer_host::{
    Archive, ArchivePass, ArchiveRecord, Trim, WithArchive, archive_pass, check_lines_up,
};
#[cfg(feature = "etcd")]
use sequencer_host::{EtcdConfig, EtcdStorage};

use super::archive::{self, ArchiveSpec};
use super::logging::Progress;
use super::{CliError, CliResult, DEFAULT_DATA_DIR, StoreKind, check, component};

/// The workspace kind of every workspace in the workload.
pub const KIND: u16 = 1;

/// A sequence of the workload.
pub struct SeqDef {
    /// Its id.
    pub id: SeqId,
    /// Its name (spec 002's system sequences).
    pub name: &'static str,
    /// The first number it hands out.
    pub initial: Number,
}

/// The workload's sequences.
pub const SEQS: [SeqDef; 3] = [
    SeqDef {
        id: 1,
        name: "wlog-offset",
        initial: 1,
    },
    SeqDef {
        id: 2,
        name: "rec-id",
        initial: 1_000_000,
    },
    SeqDef {
        id: 3,
        name: "crec-id",
        initial: 1,
    },
];

/// The name of sequence `id`.
pub fn seq_name(id: SeqId) -> String {
    SEQS.iter()
        .find(|s| s.id == id)
        .map_or_else(|| format!("seq-{id}"), |s| s.name.to_string())
}

/// The first number sequence `id` hands out.
pub fn initial(id: SeqId) -> Option<Number> {
    SEQS.iter().find(|s| s.id == id).map(|s| s.initial)
}

/// Values a partition may hold unwritten (staged batches included) before `start` says "not
/// now": the default (500) is smaller than one batch of 256 events over a few hundred keys.
const MAX_UNFLUSHED_VALUES: usize = 100_000;

fn params() -> Params {
    SEQS.iter()
        .fold(Params::new(), |p, s| p.with_seq(KIND, s.id, s.initial))
        .with_max_unflushed_values(MAX_UNFLUSHED_VALUES)
}

/// The longest a command processor waits for its sequencer to become ready.
const READY_WITHIN: Duration = Duration::from_secs(120);

/// The most numbers one event of the workload takes (1 + 3 + 2).
const MAX_NUMBERS: usize = 6;

/// Options of `run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// The data directory (created if missing; resumed if it exists).
    #[arg(long, env = "SEQUENCER_DATA", default_value = DEFAULT_DATA_DIR)]
    pub data: PathBuf,
    /// Storage backend: embedded (redb in --data), memory, objects (the PLog as one object per
    /// event, merged into bundles, in --data; objects:DIR in DIR; objects:s3://BUCKET/PREFIX on
    /// S3 with the view in --data, feature `s3`), or etcd://HOST:PORT,... (an etcd cluster
    /// shared by many hosts; --data is not used).
    #[arg(long, default_value = "embedded")]
    pub store: StoreKind,
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
    #[arg(long, default_value_t = 0.0, value_parser = parse_millis)]
    pub flush_interval_ms: f64,
    /// The archive of the store's old PLog events, objects:DIR (recorded with the store the
    /// first time; see `archive`). Without it, a recorded archive is used.
    #[arg(long)]
    pub archive: Option<ArchiveSpec>,
    /// Archive and trim every SECS seconds while the workload runs (needs an archive,
    /// recorded or --archive; embedded or etcd store).
    #[arg(long, value_parser = archive::parse_secs)]
    pub archive_every: Option<f64>,
    /// Events per bundle of a new archive.
    #[arg(long, default_value_t = sequencer_host::DEFAULT_ARCHIVE_BUNDLE_EVENTS, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    pub archive_bundle_events: u64,
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

/// The store a run works on.
enum Backend {
    Embedded(DataDir),
    Objects(ObjectStorage),
    Memory(MemoryStorage),
    #[cfg(feature = "etcd")]
    Etcd(EtcdStorage),
}

impl Backend {
    /// The store's read side, to prove what the run stored.
    fn reader(&self) -> &dyn StoreReader {
        match self {
            Self::Embedded(d) => d.store(),
            Self::Objects(o) => o,
            Self::Memory(m) => m,
            #[cfg(feature = "etcd")]
            Self::Etcd(e) => e,
        }
    }

    /// The store as `archive` trims it (embedded and etcd stores).
    fn trimmable(&self) -> Option<&dyn Trim> {
        match self {
            Self::Embedded(d) => Some(d.store()),
            #[cfg(feature = "etcd")]
            Self::Etcd(e) => Some(e),
            _ => None,
        }
    }

    /// Another host may hold the same partition (etcd, a PLog on S3), so an append refused by the fence
    /// means "actualize and go on", not a bug.
    fn shared(&self) -> bool {
        // A PLog on S3 may have other hosts (each with a view of its own) appending to it.
        if let Self::Objects(o) = self
            && o.remote().is_some()
        {
            return true;
        }
        #[cfg(feature = "etcd")]
        if matches!(self, Self::Etcd(_)) {
            return true;
        }
        false
    }
}

/// What one partition's command processor did.
#[derive(Default, Clone)]
struct Tally {
    /// Events durable in the PLog (acknowledged, or found there by actualization).
    events: u64,
    numbers: [u64; SEQS.len()],
    /// Durable appends that succeeded (one per batch).
    appends: u64,
    /// Events of failed appends that actualization found in the PLog after all.
    recovered: u64,
    actualizations: u64,
    append_failures: u64,
    fenced: u64,
    actualizing: Duration,
    not_now: u64,
    /// Microseconds from numbering each acknowledged event to its append's acknowledgement.
    latencies_us: Vec<u32>,
}

impl Tally {
    fn add(&mut self, t: Tally) {
        self.events += t.events;
        for (sum, n) in self.numbers.iter_mut().zip(t.numbers) {
            *sum += n;
        }
        self.appends += t.appends;
        self.recovered += t.recovered;
        self.actualizations += t.actualizations;
        self.append_failures += t.append_failures;
        self.fenced += t.fenced;
        self.actualizing += t.actualizing;
        self.not_now += t.not_now;
        self.latencies_us.extend(t.latencies_us);
    }
}

/// One command of the workload: its workspace, the sequences its event takes numbers of, and
/// whether it fails after `start`.
struct Command {
    ws: WsId,
    seqs: [SeqId; MAX_NUMBERS],
    len: usize,
    fails: bool,
}

impl Command {
    fn seqs(&self) -> &[SeqId] {
        &self.seqs[..self.len]
    }
}

/// A partition's commands, from the seed.
struct Commands {
    rng: Rng,
    partition: u64,
    partitions: u64,
    per_partition: u64,
    fail_rate: f64,
}

impl Commands {
    fn new(a: &RunArgs, p: PartitionId) -> Self {
        Self {
            rng: Rng::new(a.seed.wrapping_mul(u64::from(p) + 1)),
            partition: u64::from(p),
            partitions: u64::from(a.partitions),
            per_partition: a.workspaces.div_ceil(u64::from(a.partitions)),
            fail_rate: a.fail_rate,
        }
    }

    fn next(&mut self) -> Command {
        let rng = &mut self.rng;
        let ws = rng.below(self.per_partition) * self.partitions + self.partition + 1;
        let recs = 1 + rng.below(3) as usize;
        let crecs = rng.below(3) as usize;
        let mut seqs = [SEQS[0].id; MAX_NUMBERS];
        seqs[1..=recs].fill(SEQS[1].id);
        seqs[1 + recs..1 + recs + crecs].fill(SEQS[2].id);
        Command {
            ws,
            seqs,
            len: 1 + recs + crecs,
            fails: rng.unit() < self.fail_rate,
        }
    }
}

/// When commands arrive: evenly spaced at an offered rate, or always at once.
struct Arrivals {
    start: Instant,
    interval: Option<Duration>,
    taken: u32,
}

impl Arrivals {
    fn new(a: &RunArgs) -> Self {
        let per_partition = a.rate / f64::from(a.partitions);
        Self {
            start: Instant::now(),
            interval: (per_partition > 0.0).then(|| Duration::from_secs_f64(1.0 / per_partition)),
            taken: 0,
        }
    }

    /// When the next command arrives (`None`: it is there already).
    fn next_due(&self) -> Option<Instant> {
        self.interval.map(|i| self.start + i * self.taken)
    }

    fn take(&mut self) {
        self.taken = self.taken.saturating_add(1);
    }
}

/// Why a batch stopped growing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BatchEnd {
    /// Full, or the run's events are all numbered.
    Full,
    /// The next command would arrive after the first event's longest wait, or the sequencer
    /// said "not now": append what there is.
    Early,
    /// A command failed after `start`: append what there is, then actualize (dropping it).
    CommandFailed,
}

struct Workload<'a> {
    args: &'a RunArgs,
    storage: &'a Arc<dyn Storage>,
    read_ahead: &'a ReadAhead,
    events_bar: &'a ProgressBar,
    actualizations: &'a AtomicU64,
    /// A shared store (etcd): another host may hold the same partition, so an append refused
    /// by the fence means "actualize and go on", not a bug.
    shared: bool,
    /// Repeated warnings of every partition, limited to one line per kind per interval.
    warnings: &'a WarnLimiter,
}

/// One partition's command processor at work.
struct Processor<'a> {
    w: &'a Workload<'a>,
    seq: &'a PartitionSequencer,
    t: Tally,
    commands: Commands,
    arrivals: Arrivals,
    /// Commands drawn and not yet started, oldest first.
    upcoming: VecDeque<Command>,
    /// The sequencer's cache is empty (at first, and after each actualization): wait until it
    /// is ready before reading ahead.
    cold: bool,
    /// Workspaces whose numbers were read ahead since the last actualization (so are in the
    /// sequencer's memory once started).
    known: HashSet<WsId>,
    batch: EventBatch,
    /// When each event of the batch was numbered.
    numbered: Vec<Instant>,
    /// Numbers the batch's events took, per sequence.
    batch_numbers: [u64; SEQS.len()],
    payload: Vec<u8>,
    values: Vec<SeqValue>,
    actualizing_since: Option<Instant>,
    /// A batch whose append failed in storage: how many of its events are durable is known
    /// once actualization has read the PLog (the next start's offset).
    unresolved: Option<(PLogOffset, u64)>,
    /// Appends that failed in storage since the last one that succeeded.
    failures_in_a_row: u32,
    /// The first of those failures: the cause (later ones may only say the store gave up).
    first_failure: Option<String>,
    /// The waits left before the next retries of a failing append ([`RetryPolicy::APPEND`]);
    /// `None` while appends succeed.
    retry_waits: Option<ExponentialBackoff>,
}

impl Workload<'_> {
    fn partition(&self, seq: &PartitionSequencer) -> Result<Tally, CliError> {
        let a = self.args;
        let mut p = Processor {
            w: self,
            seq,
            t: Tally::default(),
            commands: Commands::new(a, seq.partition()),
            arrivals: Arrivals::new(a),
            upcoming: VecDeque::with_capacity(a.batch_size as usize),
            cold: true,
            known: HashSet::new(),
            batch: EventBatch::new(0),
            numbered: Vec::with_capacity(a.batch_size as usize),
            batch_numbers: [0; SEQS.len()],
            payload: Vec::with_capacity(a.payload_bytes),
            values: Vec::with_capacity(MAX_NUMBERS),
            actualizing_since: None,
            unresolved: None,
            failures_in_a_row: 0,
            first_failure: None,
            retry_waits: None,
        };
        while p.t.events < a.events {
            let end = p.fill_batch()?;
            p.append_batch(end)?;
        }
        if let Some(since) = p.actualizing_since {
            p.t.actualizing += since.elapsed();
        }
        Ok(p.t)
    }
}

impl Processor<'_> {
    /// Numbers and stages events until the batch is full or must go.
    fn fill_batch(&mut self) -> Result<BatchEnd, CliError> {
        let a = self.w.args;
        let want = a.batch_size.min(a.events.saturating_sub(self.t.events));
        self.batch.reset(0);
        self.numbered.clear();
        self.batch_numbers = [0; SEQS.len()];
        self.read_ahead(want)?;
        self.number_batch(want)
    }

    /// Reads the numbers of the next `n` commands' workspaces that were not read since the
    /// last actualization with one storage read, instead of one per `start` on a workspace
    /// not in the sequencer's cache (after an actualization, every workspace).
    fn read_ahead(&mut self, n: u64) -> Result<(), CliError> {
        while (self.upcoming.len() as u64) < n {
            self.upcoming.push_back(self.commands.next());
        }
        let mut ws: Vec<WsId> = Vec::new();
        for c in self.upcoming.iter().take(n as usize) {
            if self.known.insert(c.ws) {
                ws.push(c.ws);
            }
        }
        if ws.is_empty() {
            return Ok(());
        }
        if self.cold {
            self.wait_ready()?;
        }
        let seqs: Vec<SeqId> = SEQS.iter().map(|s| s.id).collect();
        self.w
            .read_ahead
            .read_ahead(self.seq.partition(), &ws, &seqs)
            .map_err(|e| {
                let p = self.seq.partition();
                CliError(match self.w.storage.failure() {
                    Some(f) => format!(
                        "partition {p}: {e}; the store takes no writes since: {f}; stopping ({STOPPED})"
                    ),
                    None => format!("partition {p}: {e}"),
                })
            })?;
        Ok(())
    }

    /// Waits (bounded) until the sequencer has actualized.
    fn wait_ready(&mut self) -> Result<(), CliError> {
        let started = Instant::now();
        while self.seq.status() != Status::Ready {
            stop_if_stuck(self.w.storage.as_ref(), started, || {
                format!("partition {}", self.seq.partition())
            })?;
            std::thread::sleep(Duration::from_micros(100));
        }
        self.cold = false;
        Ok(())
    }

    /// Numbers and stages up to `want` events.
    fn number_batch(&mut self, want: u64) -> Result<BatchEnd, CliError> {
        let a = self.w.args;
        let max_wait = Duration::from_secs_f64(a.batch_wait_ms / 1000.0);
        while (self.batch.len() as u64) < want {
            if let Some(due) = self.arrivals.next_due() {
                let now = Instant::now();
                if due > now {
                    if self
                        .numbered
                        .first()
                        .is_some_and(|&first| due > first + max_wait)
                    {
                        return Ok(BatchEnd::Early);
                    }
                    std::thread::sleep(due - now);
                }
            }
            if self.upcoming.is_empty() {
                self.upcoming.push_back(self.commands.next());
            }
            let Some(cmd) = self.upcoming.front() else {
                continue;
            };
            let (outcome, numbers) = self
                .seq
                .start_next(KIND, cmd.ws, cmd.seqs())
                .map_err(host)?;
            let offset = match outcome {
                StartOutcome::Started(offset) => offset,
                StartOutcome::NotNow(reason) => {
                    if reason == NotNowReason::TooManyUnflushed {
                        self.t.not_now += 1;
                    }
                    if !self.batch.is_empty() {
                        return Ok(BatchEnd::Early);
                    }
                    std::thread::sleep(Duration::from_micros(100));
                    continue;
                }
            };
            self.started(offset);
            let Some(cmd) = self.upcoming.pop_front() else {
                continue;
            };
            self.arrivals.take();
            if cmd.fails {
                // The command failed after `start`: its offset and numbers go back.
                return Ok(BatchEnd::CommandFailed);
            }
            if self.batch.is_empty() {
                self.batch.reset(offset);
            }
            self.values.clear();
            self.values.extend(
                cmd.seqs()
                    .iter()
                    .zip(&numbers)
                    .map(|(&s, &n)| SeqValue::new(cmd.ws, s, n)),
            );
            fill_payload(
                &mut self.payload,
                a.payload_bytes,
                cmd.ws,
                offset,
                &self.values,
            );
            self.batch.push(&self.values, &self.payload);
            self.numbered.push(Instant::now());
            for &s in cmd.seqs() {
                if let Some(i) = SEQS.iter().position(|d| d.id == s) {
                    self.batch_numbers[i] += 1;
                }
            }
            if a.batch_size > 1 {
                self.seq.stage().map_err(host)?;
            }
        }
        Ok(BatchEnd::Full)
    }

    /// A start succeeded at `offset`: actualization, if any, is over.
    fn started(&mut self, offset: PLogOffset) {
        if let Some(since) = self.actualizing_since.take() {
            self.t.actualizing += since.elapsed();
        }
        if let Some((first, len)) = self.unresolved.take() {
            // Actualization replayed the PLog: the events of the failed append before this
            // offset are in it.
            self.durable_unacknowledged(offset.saturating_sub(first).min(len));
        }
    }

    /// Counts `n` events that are durable although their append reported a failure.
    fn durable_unacknowledged(&mut self, n: u64) {
        self.t.events += n;
        self.t.recovered += n;
        self.w.events_bar.inc(n);
    }

    /// Appends the batch with one durable write, then completes it (`flush`), or drops what
    /// is not in the PLog (`actualize`).
    fn append_batch(&mut self, end: BatchEnd) -> Result<(), CliError> {
        let p = self.seq.partition();
        let appended = if self.batch.is_empty() {
            Ok(())
        } else {
            self.w.storage.append_events(p, &self.batch)
        };
        let mut actualize = end == BatchEnd::CommandFailed;
        match appended {
            Ok(()) => {
                self.failures_in_a_row = 0;
                self.first_failure = None;
                self.retry_waits = None;
                let acked = Instant::now();
                let n = self.batch.len() as u64;
                if n > 0 {
                    self.t.appends += 1;
                }
                self.t.events += n;
                for (sum, k) in self.t.numbers.iter_mut().zip(self.batch_numbers) {
                    *sum += k;
                }
                self.t.latencies_us.extend(self.numbered.iter().map(|&at| {
                    u32::try_from(acked.duration_since(at).as_micros()).unwrap_or(u32::MAX)
                }));
                self.w.events_bar.inc(n);
            }
            Err(AppendError::Storage(e)) => {
                self.failures_in_a_row += 1;
                let first = self
                    .first_failure
                    .get_or_insert_with(|| e.to_string())
                    .clone();
                if let Some(failure) = self.w.storage.failure() {
                    // Retrying a store that takes no more writes would only loop.
                    return Err(CliError(format!(
                        "partition {p}: a PLog append failed and the store takes no more writes: {failure}; stopping ({STOPPED})"
                    )));
                }
                // The seed differs per partition and per failure, and leaves the workload's
                // own random choices alone.
                let seed = u64::from(p) << 32 | self.t.append_failures;
                let wait = self
                    .retry_waits
                    .get_or_insert_with(|| RetryPolicy::APPEND.waits(seed))
                    .next();
                let Some(wait) = wait else {
                    let last = e.to_string();
                    let also = if last == first {
                        String::new()
                    } else {
                        format!(" (the last: {last})")
                    };
                    return Err(CliError(format!(
                        "partition {p}: {} PLog appends in a row failed, the first: {first}{also}; stopping ({STOPPED})",
                        self.failures_in_a_row
                    )));
                };
                // Which parts of the batch are in the PLog is unknown: actualization finds out.
                self.w.warnings.warn("append failed", || {
                    format!(
                        "partition {p}: {e}; actualizing and trying again in {} ms ({} failures in a row)",
                        wait.as_millis(),
                        self.failures_in_a_row
                    )
                });
                std::thread::sleep(wait);
                self.t.append_failures += 1;
                self.unresolved = Some((self.batch.first(), self.batch.len() as u64));
                actualize = true;
            }
            Err(e @ AppendError::WrongOffset { offered, .. }) if self.w.shared => {
                // Another host committed at `offered`: the parts before it are ours. Catch up
                // from the PLog and go on.
                self.w
                    .warnings
                    .warn("fenced", || format!("partition {p}: {e}; actualizing"));
                self.t.fenced += 1;
                self.durable_unacknowledged(offered.saturating_sub(self.batch.first()));
                actualize = true;
            }
            Err(e @ AppendError::WrongOffset { .. }) => {
                return Err(CliError(format!("partition {p}: {e}")));
            }
        }
        if actualize {
            self.cold = true;
            self.known.clear();
            self.seq.actualize().map_err(host)?;
            self.t.actualizations += 1;
            self.w.actualizations.fetch_add(1, Ordering::Relaxed);
            self.actualizing_since = Some(Instant::now());
        } else if !self.batch.is_empty() {
            self.seq.flush().map_err(host)?;
        }
        Ok(())
    }
}

fn host(e: HostError) -> CliError {
    CliError(e.to_string())
}

/// A readable payload of about `size` bytes: the command as JSON, padded.
fn fill_payload(out: &mut Vec<u8>, size: usize, ws: WsId, offset: PLogOffset, values: &[SeqValue]) {
    use std::io::Write;
    out.clear();
    let _ = write!(
        out,
        r#"{{"cmd":"c.orders.Place","ws":{ws},"offset":{offset},"ids":["#
    );
    for (i, v) in values.iter().enumerate() {
        let _ = write!(out, "{}{}", if i == 0 { "" } else { "," }, v.value);
    }
    out.push(b']');
    let pad = size.saturating_sub(out.len() + 10);
    if pad > 0 {
        out.extend_from_slice(br#","pad":""#);
        out.resize(out.len() + pad, b'.');
        out.push(b'"');
    }
    out.push(b'}');
}

/// The shortest time between two warnings of one kind (the ones between are counted).
const WARN_INTERVAL: Duration = Duration::from_secs(5);

/// What a run that stops on a storage error tells the operator.
const STOPPED: &str = "every event acknowledged before is durable: `sequencer-host check` proves it, and a run resumes once the store takes writes again";

/// How long a wait for a sequencer to become ready may go without progress once the store
/// has met an error that cannot clear by itself (actualizing needs writes it will not take).
const STUCK_ON_FAILURE: Duration = Duration::from_secs(3);

/// Stops a wait that began (or last progressed) at `since` when it cannot end: the store met
/// an error that cannot clear by itself and `STUCK_ON_FAILURE` passed, or `READY_WITHIN`
/// passed. `who` names what is waited for.
fn stop_if_stuck(storage: &dyn Storage, since: Instant, who: impl Fn() -> String) -> CliResult<()> {
    let waited = since.elapsed();
    if waited > STUCK_ON_FAILURE
        && let Some(failure) = storage.failure()
    {
        return Err(CliError(format!(
            "{}: not ready after {:.0} s, and the store takes no writes since: {failure}; stopping ({STOPPED})",
            who(),
            waited.as_secs_f64()
        )));
    }
    if waited > READY_WITHIN {
        return Err(CliError(format!(
            "{}: not ready after {} s",
            who(),
            READY_WITHIN.as_secs()
        )));
    }
    Ok(())
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

/// Records `wanted` in a directory that has no layout yet: a new one, or one made before
/// layouts were recorded, whose store must then hold no partition this run would not serve
/// (a smaller count would move workspaces; a larger one cannot be told from the store).
fn record_layout(dir: &DataDir, wanted: &Layout) -> CliResult<()> {
    if !dir.created()
        && let Some(p) = (dir.store().partitions()?)
            .into_iter()
            .find(|&p| p >= wanted.partitions)
    {
        return Err(CliError(format!(
            "data directory {}: it holds partition {p}'s PLog, so it was numbered with more than {} partitions: workspaces would move to partitions that do not hold their numbers; resume it with its own --partitions, or start a new one with --data NEW_DIR",
            dir.path().display(),
            wanted.partitions
        )));
    }
    dir.record_layout(wanted)?;
    if !dir.created() {
        tracing::info!(
            "recorded the numbering layout ({} partitions) in {}, made before layouts were recorded",
            wanted.partitions,
            dir.path().display()
        );
    }
    Ok(())
}

/// Refuses to number `what` (a store whose recorded layout is `recorded`) by `wanted` if that
/// would move a workspace or change its numbering; `new_one` says how to start afresh.
fn refuse_another_layout(
    what: &str,
    recorded: &Layout,
    wanted: &Layout,
    new_one: &str,
) -> CliResult<()> {
    match recorded.difference(wanted) {
        None => Ok(()),
        Some(difference) => Err(CliError(format!(
            "{what}: {difference}; resume it with --partitions {}, or {new_one}",
            recorded.partitions
        ))),
    }
}

/// Records `wanted` in an etcd store that has no layout yet, unless its PLogs show another
/// partition count, or another run recorded a different layout at the same moment.
#[cfg(feature = "etcd")]
fn record_etcd_layout(store: &EtcdStorage, wanted: &Layout) -> CliResult<()> {
    let what = store.label().to_string();
    if store.read_layout()?.is_none()
        && let Some(p) = (store.partitions()?)
            .into_iter()
            .find(|&p| p >= wanted.partitions)
    {
        return Err(CliError(format!(
            "{what}: it holds partition {p}'s PLog, so it was numbered with more than {} partitions: workspaces would move to partitions that do not hold their numbers; resume it with its own --partitions, or use an empty etcd cluster",
            wanted.partitions
        )));
    }
    let recorded = store.record_layout(wanted)?;
    refuse_another_layout(&what, &recorded, wanted, "use an empty etcd cluster")
}

/// `run`, in its named steps: open the store, recover every partition from the PLog, run the
/// workload, check what was stored, report.
pub fn run(args: &RunArgs, progress: &Progress) -> CliResult<ExitCode> {
    let opened = open(args)?;
    let recovered = recover(args, &opened, progress)?;
    let ran = run_workload(args, &opened, &recovered, progress)?;
    let checked = check_stored(&opened, recovered.stop())?;
    report(args, &opened, &recovered, ran, checked);
    Ok(ExitCode::SUCCESS)
}

/// A run's store and component, opened after every option and the recorded layout were
/// validated (nothing is written before).
struct Opened {
    backend: Backend,
    runtime: Runtime,
    /// The numbering layout of this run (recorded, or found equal to the record).
    wanted: Layout,
    /// The storage as the driver and the command processors see it: the backend behind the
    /// read-ahead of numbers.
    read_ahead: Arc<ReadAhead>,
    storage: Arc<dyn Storage>,
    /// The store's archive of old PLog events, if it has one (written to with
    /// `--archive-every`).
    archive: Option<Archive>,
}

/// The step that opens: validates the options and the recorded layout, loads the component,
/// opens (or creates) the store.
fn open(args: &RunArgs) -> CliResult<Opened> {
    // Validate everything before writing anything.
    let batch_bytes = (args.payload_bytes as u64).saturating_mul(args.batch_size);
    if batch_bytes > MAX_BATCH_BYTES {
        return Err(CliError(format!(
            "--payload-bytes {} with --batch-size {} holds {batch_bytes} bytes of payload per batch in memory, more than {MAX_BATCH_BYTES}: give a smaller --batch-size or --payload-bytes",
            args.payload_bytes, args.batch_size
        )));
    }
    let dir_state = match &args.store {
        StoreKind::Embedded => Some(DataDir::validate(&args.data, OpenMode::OpenOrCreate)?),
        StoreKind::Memory | StoreKind::Etcd(_) | StoreKind::Objects(_) => None,
        #[cfg(not(feature = "s3"))]
        StoreKind::ObjectsS3(url) => return Err(super::no_s3(url)),
        #[cfg(feature = "s3")]
        StoreKind::ObjectsS3(_) => None,
    };
    let objects_root = args.store.objects_root(&args.data);
    let wanted = layout(args);
    let recorded = match (dir_state, &objects_root) {
        (Some(DirState::Existing), _) => DataDir::read_layout(&args.data)?,
        (_, Some(root)) if root.is_dir() => ObjectStorage::read_layout(root)?,
        _ => None,
    };
    if let Some(recorded) = &recorded {
        refuse_another_layout(
            &format!(
                "data directory {}",
                objects_root.as_deref().unwrap_or(&args.data).display()
            ),
            recorded,
            &wanted,
            "start a new one with --data NEW_DIR",
        )?;
    }
    // The archive: the recorded one (which must be there), or the one asked for.
    let embedded_record = match dir_state {
        Some(DirState::Existing) => ArchiveRecord::read(&args.data)?,
        _ => None,
    };
    let wants_archive = args.archive.is_some() || args.archive_every.is_some();
    let archive_root = match &args.store {
        StoreKind::Embedded if wants_archive || embedded_record.is_some() => {
            Some(archive::choose(embedded_record, args.archive.as_ref())?)
        }
        StoreKind::Embedded => None,
        #[cfg(feature = "etcd")]
        StoreKind::Etcd(_) => None,
        _ if wants_archive => {
            return Err(CliError(format!(
                "store {}: only the embedded and etcd stores are archived",
                args.store
            )));
        }
        _ => None,
    };
    // An archive that is there must line up with the store before anything is written.
    if let (Some(DirState::Existing), Some((root, _))) = (dir_state, &archive_root)
        && root.exists()
    {
        check_lines_up(&DataDir::open_read_only(&args.data)?, &Archive::open(root)?)?;
    }
    let loading = Instant::now();
    let runtime = component::load(&args.component, Limits::default())?;
    tracing::debug!(
        "loaded {} in {:.2} s",
        args.component.describe(),
        loading.elapsed().as_secs_f64()
    );
    let backend = match dir_state {
        Some(state) => {
            let dir = DataDir::open_validated(&args.data, state)?;
            if recorded.is_none() {
                record_layout(&dir, &wanted)?;
            }
            tracing::info!(
                "{} data directory {}",
                if state == DirState::New {
                    "created"
                } else {
                    "opened"
                },
                args.data.display()
            );
            Backend::Embedded(dir)
        }
        None => match &args.store {
            StoreKind::Objects(_) | StoreKind::ObjectsS3(_) => {
                let root = objects_root.as_deref().unwrap_or(&args.data);
                let store = match &args.store {
                    #[cfg(feature = "s3")]
                    StoreKind::ObjectsS3(url) => ObjectStorage::open_s3(
                        root,
                        url,
                        args.bundle_events,
                        Duration::from_secs(args.store_wait_s),
                    )?,
                    _ => ObjectStorage::open(root, args.bundle_events)?,
                };
                if let (Some(shared), Some(url)) = (store.shared_layout(&wanted)?, store.remote()) {
                    refuse_another_layout(
                        &format!("object store {url}"),
                        &shared,
                        &wanted,
                        "use another s3://BUCKET/PREFIX",
                    )?;
                }
                if recorded.is_none() {
                    store.record_layout(&wanted)?;
                }
                tracing::info!(
                    "{} object store {}",
                    if store.created() { "created" } else { "opened" },
                    store
                        .remote()
                        .map_or_else(|| root.display().to_string(), str::to_string)
                );
                Backend::Objects(store)
            }
            #[cfg(feature = "etcd")]
            StoreKind::Etcd(url) => {
                let unavailable = |e: sequencer_host::StorageError| {
                    CliError(format!(
                        "store {url}: the etcd cluster is not available: {e}"
                    ))
                };
                let mut config = EtcdConfig::from_url(url).map_err(unavailable)?;
                config.quorum_wait = Some(Duration::from_secs(args.store_wait_s));
                let store = EtcdStorage::connect(config).map_err(unavailable)?;
                store.probe(Duration::from_secs(5)).map_err(unavailable)?;
                if let Some(recorded) = store.read_layout()? {
                    refuse_another_layout(
                        &format!("etcd store {url}"),
                        &recorded,
                        &wanted,
                        "use an empty etcd cluster",
                    )?;
                }
                Backend::Etcd(store)
            }
            #[cfg(not(feature = "etcd"))]
            StoreKind::Etcd(url) => return Err(super::no_etcd(url)),
            _ => Backend::Memory(MemoryStorage::new()),
        },
    };
    let archive = open_archive(args, &backend, archive_root)?;
    let base: Arc<dyn Storage> = match &backend {
        Backend::Embedded(d) => Arc::new(WithArchive::new(d.store().clone(), archive.clone())?),
        #[cfg(feature = "etcd")]
        Backend::Etcd(e) if archive.is_some() => {
            Arc::new(WithArchive::new(e.clone(), archive.clone())?)
        }
        Backend::Objects(o) => Arc::new(o.clone()),
        Backend::Memory(m) => Arc::new(m.clone()),
        #[cfg(feature = "etcd")]
        Backend::Etcd(e) => Arc::new(e.clone()),
    };
    check_event_fits(args, base.append_limits())?;
    #[cfg(feature = "etcd")]
    if let Backend::Etcd(store) = &backend {
        record_etcd_layout(store, &wanted)?;
    }
    let read_ahead = Arc::new(ReadAhead::new(base));
    let storage: Arc<dyn Storage> = read_ahead.clone();

    Ok(Opened {
        backend,
        runtime,
        wanted,
        read_ahead,
        storage,
        archive,
    })
}

/// Opens the store's archive (`root`, and whether it is recorded; for etcd, read from the
/// cluster), checks that it lines up with the store, and records it if it is new. Written to
/// only with `--archive-every`.
fn open_archive(
    args: &RunArgs,
    backend: &Backend,
    root: Option<(PathBuf, bool)>,
) -> CliResult<Option<Archive>> {
    #[cfg(feature = "etcd")]
    let root = match backend {
        Backend::Etcd(e) if args.archive.is_some() || args.archive_every.is_some() => {
            Some(archive::choose(e.read_archive()?, args.archive.as_ref())?)
        }
        Backend::Etcd(e) => e.read_archive()?.map(|r| (r, true)),
        _ => root,
    };
    let Some((root, recorded)) = root else {
        return Ok(None);
    };
    let hot: &dyn Trim = match backend {
        Backend::Embedded(d) => d.store(),
        #[cfg(feature = "etcd")]
        Backend::Etcd(e) => e,
        _ => return Ok(None),
    };
    let opened = if args.archive_every.is_some() || !recorded {
        archive::open_for_writing(&root, args.archive_bundle_events, hot)?
    } else {
        let a = Archive::open(&root)?;
        check_lines_up(hot, &a)?;
        a
    };
    if !recorded {
        match backend {
            Backend::Embedded(_) => ArchiveRecord::write(&args.data, &root)?,
            #[cfg(feature = "etcd")]
            Backend::Etcd(e) => e.record_archive(&root)?,
            _ => {}
        }
    }
    Ok(Some(opened))
}

/// Every partition's sequencer, actualized from the PLog.
struct Recovered {
    driver: Driver,
    seqs: Vec<PartitionSequencer>,
    /// Events the store held before this run.
    resumed_events: u64,
    /// Events replayed to actualize.
    replayed_events: u64,
    actualize_time: Duration,
}

impl Recovered {
    /// Lets the flusher catch up, then closes every sequencer and stops the driver.
    fn stop(&self) -> &Self {
        self.driver.idle();
        for s in &self.seqs {
            s.cleanup();
        }
        self
    }
}

/// The step that recovers: opens every partition's sequencer and waits (with a progress bar,
/// bounded) until each has replayed its PLog from the stored next offset.
fn recover(args: &RunArgs, opened: &Opened, progress: &Progress) -> CliResult<Recovered> {
    let Opened {
        backend,
        runtime,
        read_ahead,
        storage,
        ..
    } = opened;
    // What a restart has to replay: from the stored next offset to the PLog's end.
    let mut to_replay = 0u64;
    let mut resumed_events = 0u64;
    let reader = backend.reader();
    for p in 0..args.partitions {
        if let Some((_, last)) = reader.plog_bounds(p)? {
            to_replay += (last + 1).saturating_sub(reader.stored_next_offset(p)?.max(1));
            resumed_events += last;
        }
    }

    let driver = Driver::spawn(
        storage.clone(),
        Arc::new(MonotonicClock::new()),
        DriverConfig::default(),
    )
    .with_min_write_interval(Duration::from_secs_f64(args.flush_interval_ms / 1000.0));
    let params = params();
    let actualize_started = Instant::now();
    let seqs = open_partitions(&driver, runtime, &params, args.partitions)?;
    let bar = progress.multi.add(ProgressBar::new(to_replay));
    bar.set_style(style(
        "{prefix:>12} [{bar:40}] {pos}/{len} events replayed ({elapsed})",
    ));
    bar.set_prefix("actualizing");
    let mut progress_at = (Instant::now(), read_ahead.counts().plog_events_read);
    loop {
        let replayed = read_ahead.counts().plog_events_read;
        bar.set_position(replayed.min(to_replay));
        if seqs.iter().all(|s| s.status() == Status::Ready) {
            break;
        }
        if replayed != progress_at.1 {
            progress_at = (Instant::now(), replayed);
        }
        stop_if_stuck(storage.as_ref(), progress_at.0, || {
            let waiting: Vec<String> = (seqs.iter())
                .filter(|s| s.status() != Status::Ready)
                .map(|s| s.partition().to_string())
                .collect();
            format!("partitions {} (actualizing)", waiting.join(", "))
        })?;
        if let Some(s) = seqs.iter().find(|s| s.status() == Status::CleanedUp) {
            return Err(CliError(format!(
                "partition {}: the sequencer closed while actualizing",
                s.partition()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bar.finish_and_clear();
    let actualize_time = actualize_started.elapsed();
    let replayed_events = read_ahead.counts().plog_events_read;
    if resumed_events > 0 {
        tracing::info!(
            "resumed {resumed_events} events: replayed {replayed_events} from the last flushed offsets in {:.3} s",
            actualize_time.as_secs_f64()
        );
    }

    Ok(Recovered {
        driver,
        seqs,
        resumed_events,
        replayed_events,
        actualize_time,
    })
}

/// What the workload did.
struct Ran {
    tally: Tally,
    elapsed: Duration,
    /// The store's counters during the workload.
    during: StoreSnapshot,
    reads: sequencer_host::ReadCounts,
    /// What `--archive-every` did: passes, and their totals.
    archived: Option<(u64, ArchivePass)>,
}

/// The step that runs the workload: one command-processor thread per partition.
fn run_workload(
    args: &RunArgs,
    opened: &Opened,
    recovered: &Recovered,
    progress: &Progress,
) -> CliResult<Ran> {
    let Opened {
        backend,
        read_ahead,
        storage,
        ..
    } = opened;
    let seqs = &recovered.seqs;
    // The workload.
    let total = u64::from(args.partitions) * args.events;
    let events_bar = progress.multi.add(ProgressBar::new(total));
    events_bar.set_style(style(
        "{prefix:>12} [{bar:40}] {pos}/{len} events ({elapsed}, eta {eta}) {msg}",
    ));
    events_bar.set_prefix("running");
    let merge_bar = MergeBar::new(backend, progress);
    let actualizations = AtomicU64::new(0);
    let warnings = WarnLimiter::new(WARN_INTERVAL);
    let workload = Workload {
        args,
        storage,
        read_ahead,
        events_bar: &events_bar,
        actualizations: &actualizations,
        shared: backend.shared(),
        warnings: &warnings,
    };
    let counts_before = StoreSnapshot::take(backend);
    let reads_before = read_ahead.counts();
    let started = Instant::now();
    let stop_archiving = AtomicBool::new(false);
    let (results, archived): (Vec<CliResult<Tally>>, _) = std::thread::scope(|scope| {
        let handles: Vec<_> = seqs
            .iter()
            .map(|seq| {
                let w = &workload;
                scope.spawn(move || w.partition(seq))
            })
            .collect();
        let archiver = match (args.archive_every, &opened.archive, backend.trimmable()) {
            (Some(every), Some(a), Some(hot)) => {
                let stop = &stop_archiving;
                Some(scope.spawn(move || archive_while_running(hot, a, every, stop)))
            }
            _ => None,
        };
        while !handles.iter().all(|h| h.is_finished()) {
            let rate = events_bar.position() as f64 / started.elapsed().as_secs_f64().max(1e-3);
            let mut msg = format!(
                "{rate:.0}/s, actualizations {}",
                actualizations.load(Ordering::Relaxed)
            );
            match StoreSnapshot::take(backend).since(&counts_before) {
                StoreSnapshot::Embedded(c) => {
                    msg.push_str(&format!(", flushes {}, commits {}", c.writes, c.commits));
                }
                StoreSnapshot::Objects(c) => msg.push_str(&format!(
                    ", flushes {}, bundles merged {}",
                    c.view.writes, c.bundles_written
                )),
                _ => {}
            }
            events_bar.set_message(msg);
            if let Some(m) = &merge_bar {
                m.update();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        stop_archiving.store(true, Ordering::Relaxed);
        let archived = archiver.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(CliError("the archive thread panicked".into())))
        });
        let results = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CliError("a partition thread panicked".into())))
            })
            .collect();
        (results, archived)
    });
    let archived = archived.transpose()?;
    let elapsed = started.elapsed();
    if let Some(m) = merge_bar {
        m.drain()?;
    }
    let during = StoreSnapshot::take(backend).since(&counts_before);
    let reads = read_ahead.counts().since(&reads_before);
    events_bar.finish_and_clear();
    let mut tally = Tally::default();
    for r in results {
        tally.add(r?);
    }

    Ok(Ran {
        tally,
        elapsed,
        during,
        reads,
        archived,
    })
}

/// The progress bar of an object store's merger: bundles written since the run began out
/// of those written plus those owed (complete ranges of one-event objects not yet merged).
struct MergeBar<'a> {
    plog: &'a sequencer_host::ObjectPlog,
    bar: ProgressBar,
    written_before: u64,
}

impl<'a> MergeBar<'a> {
    /// A bar for an object store's merger; `None` for other stores.
    fn new(backend: &'a Backend, progress: &Progress) -> Option<Self> {
        let Backend::Objects(o) = backend else {
            return None;
        };
        let plog = o.plog();
        let bar = progress.multi.add(ProgressBar::new(0));
        bar.set_style(style(
            "{prefix:>12} [{bar:40}] {pos}/{len} bundles written ({elapsed}) {msg}",
        ));
        bar.set_prefix("merging");
        let merge = Self {
            written_before: plog.stats().bundles_written.load(Ordering::Relaxed),
            plog,
            bar,
        };
        merge.update();
        Some(merge)
    }

    /// Draws what the merger has done and owes now.
    fn update(&self) {
        let written =
            self.plog.stats().bundles_written.load(Ordering::Relaxed) - self.written_before;
        self.bar.set_length(written + self.plog.merge_backlog());
        self.bar.set_position(written);
    }

    /// Merges what the merger still owes, the bar showing it, before the run checks the
    /// store: a run ends with every complete range in a bundle. A merge that fails (a hole,
    /// a broken link, a conflicting object) stops the run with the merger's error.
    fn drain(self) -> CliResult<()> {
        if self.plog.merge_backlog() > 0 {
            self.bar.set_message("finishing the merge before the check");
        }
        let merged = std::thread::scope(|scope| {
            let merging = scope.spawn(|| self.plog.merge_now());
            while !merging.is_finished() {
                self.update();
                std::thread::sleep(Duration::from_millis(100));
            }
            merging
                .join()
                .unwrap_or_else(|_| Err(sequencer_host::StorageError("the merge panicked".into())))
        });
        self.update();
        self.bar.finish_and_clear();
        merged
            .map(drop)
            .map_err(|e| CliError(format!("the merger stopped: {e}")))
    }
}

/// `--archive-every`: an archive pass every `every` seconds until `stop`; returns how many
/// passes ran and their totals. A failed pass stops the archiving and, after the workload,
/// the run (the store and the archive stay consistent: a pass interrupted anywhere is
/// finished by the next).
fn archive_while_running(
    hot: &dyn Trim,
    archive: &Archive,
    every: f64,
    stop: &AtomicBool,
) -> CliResult<(u64, ArchivePass)> {
    let mut totals = ArchivePass::default();
    let mut passes = 0;
    loop {
        let due = Instant::now() + Duration::from_secs_f64(every);
        while Instant::now() < due {
            if stop.load(Ordering::Relaxed) {
                return Ok((passes, totals));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let pass = archive_pass(hot, archive, |_| {})
            .map_err(|e| CliError(format!("archiving during the run failed: {e}")))?;
        tracing::debug!(
            "archive pass: {} events archived, {} trimmed",
            pass.archived,
            pass.trimmed
        );
        passes += 1;
        totals.partitions = pass.partitions;
        totals.bundles += pass.bundles;
        totals.archived += pass.archived;
        totals.trimmed += pass.trimmed;
        totals.after = pass.after.or(totals.after);
    }
}

/// The step that checks: proves the whole store (every partition, and across partitions)
/// against the run's layout once every sequencer has stopped; returns the events checked.
fn check_stored(opened: &Opened, _stopped: &Recovered) -> CliResult<u64> {
    if let Backend::Objects(o) = &opened.backend
        && let Some(e) = o.plog().merge_error()
    {
        return Err(CliError(format!("the merger stopped: {e}")));
    }
    let hot = opened.backend.reader();
    // Opened again: another process (etcd) may have archived more since the run began.
    let archive = (opened.archive.as_ref())
        .map(|a| Archive::open(a.root()))
        .transpose()?;
    let reader = WithArchive::new(hot, archive)?;
    let (_, checked) = check::check_store(&reader, Some(&opened.wanted), |_, _| {})?;
    Ok(checked)
}

/// The step that reports: the summary table.
fn report(args: &RunArgs, opened: &Opened, recovered: &Recovered, ran: Ran, checked: u64) {
    let backend = &opened.backend;
    let Recovered {
        resumed_events,
        replayed_events,
        actualize_time,
        ..
    } = *recovered;
    let Ran {
        mut tally,
        elapsed,
        during,
        reads,
        archived,
    } = ran;
    let store_line = match backend {
        Backend::Embedded(d) => format!("embedded redb, {}", d.store().path().display()),
        Backend::Objects(o) => match o.remote() {
            Some(url) => format!(
                "object store {url} (one object per event, bundles of {}; view in redb in {})",
                o.plog().bundle_events(),
                o.root().display()
            ),
            None => format!(
                "object store {} (one object per event, bundles of {}; view in redb)",
                o.root().display(),
                o.plog().bundle_events()
            ),
        },
        Backend::Memory(_) => "memory (nothing kept)".to_string(),
        #[cfg(feature = "etcd")]
        Backend::Etcd(e) => format!("{} (3-way replicated, fenced appends)", e.label()),
    };
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mut rows: Vec<(String, String)> = vec![
        ("store".into(), store_line),
        (
            "archive".into(),
            match (&opened.archive, archived) {
                (Some(a), Some((passes, t))) => format!(
                    "{}: {passes} passes during the run archived {} events in {} bundles, trimmed {}",
                    a.root().display(),
                    t.archived,
                    t.bundles,
                    t.trimmed
                ),
                (Some(a), None) => {
                    format!("{} (old PLog events read from there)", a.root().display())
                }
                (None, _) => "none".into(),
            },
        ),
        (
            "started from".into(),
            if resumed_events == 0 {
                "an empty store".into()
            } else {
                format!(
                    "{resumed_events} events: replayed {replayed_events} from the last flushed offsets in {}",
                    ms(actualize_time)
                )
            },
        ),
        (
            "partitions".into(),
            format!(
                "{} ({} workspaces, fail rate {})",
                args.partitions, args.workspaces, args.fail_rate
            ),
        ),
        (
            "batches".into(),
            if args.batch_size == 1 {
                "one event per durable append".into()
            } else {
                format!(
                    "up to {} events, first event waits at most {} ms{}",
                    args.batch_size,
                    args.batch_wait_ms,
                    if args.rate > 0.0 {
                        format!(", {} commands/s offered", args.rate)
                    } else {
                        ", commands always waiting".into()
                    }
                )
            },
        ),
        ("events".into(), tally.events.to_string()),
        ("elapsed".into(), format!("{secs:.2} s")),
        (
            "durable events/s".into(),
            format!("{:.0}", tally.events as f64 / secs),
        ),
        (
            "durable appends".into(),
            format!(
                "{} ({:.1} events each{})",
                tally.appends,
                (tally.events - tally.recovered) as f64 / tally.appends.max(1) as f64,
                if tally.recovered > 0 {
                    format!(
                        "; {} more events of failed appends found in the PLog",
                        tally.recovered
                    )
                } else {
                    String::new()
                }
            ),
        ),
        ("ack latency".into(), latency_line(&mut tally.latencies_us)),
    ];
    for (d, n) in SEQS.iter().zip(tally.numbers) {
        rows.push((format!("numbers {}", d.name), n.to_string()));
    }
    match during {
        StoreSnapshot::Embedded(c) => {
            rows.push((
                "flushes (view writes)".into(),
                format!("{} ({} view rows)", c.writes, c.values_written),
            ));
            rows.push((
                "commits (1 fsync each)".into(),
                format!(
                    "{} ({:.1} events per fsync, mean {})",
                    c.commits,
                    tally.events as f64 / c.commits.max(1) as f64,
                    ms(Duration::from_nanos(c.commit_nanos / c.commits.max(1)))
                ),
            ));
        }
        StoreSnapshot::Objects(c) => {
            rows.push((
                "flushes (view writes)".into(),
                format!(
                    "{} ({} view rows, {} redb commits)",
                    c.view.writes, c.view.values_written, c.view.commits
                ),
            ));
            rows.push((
                "event objects".into(),
                format!(
                    "{} created in {} appends ({} syncs of files and directories: {:.1} per event; {} appends refused by the fence)",
                    c.events_written,
                    c.appends,
                    c.syncs,
                    c.syncs as f64 / c.events_written.max(1) as f64,
                    c.fenced
                ),
            ));
            rows.push((
                "merger".into(),
                format!(
                    "{} bundles written, {} one-event objects merged and deleted; {} leftovers of an interrupted merge removed at open",
                    c.bundles_written, c.merged_events, c.leftovers_removed
                ),
            ));
        }
        #[cfg(feature = "etcd")]
        StoreSnapshot::Etcd(e) => {
            rows.push(("flushes (view writes)".into(), e.writes.to_string()));
            rows.push((
                "etcd transactions".into(),
                format!(
                    "{} ({:.1} events per transaction; {} appends: {:.1} events each; {} retried, {} appends decided by read-back, {} refused by the fence, {} view writes tried again)",
                    e.txns,
                    tally.events as f64 / e.txns.max(1) as f64,
                    e.append_txns,
                    tally.events as f64 / e.append_txns.max(1) as f64,
                    e.retries,
                    e.read_backs,
                    e.fenced,
                    e.view_conflicts
                ),
            ));
        }
        _ => rows.push(("flushes (view writes)".into(), "n/a in memory".into())),
    }
    rows.push((
        "actualizations".into(),
        format!(
            "{} ({} after failed appends, {} after appends refused by the fence)",
            tally.actualizations, tally.append_failures, tally.fenced
        ),
    ));
    rows.push((
        "time actualizing".into(),
        format!(
            "{} total over all partitions, {} mean",
            ms(tally.actualizing),
            ms(tally.actualizing / u32::try_from(tally.actualizations.max(1)).unwrap_or(u32::MAX))
        ),
    ));
    rows.push((
        "numbers reads".into(),
        format!(
            "{} storage reads of {} workspaces ({} total, {} mean); {} starts served by reads ahead, {} read on their own",
            reads.storage_reads,
            reads.workspaces_read,
            ms(Duration::from_nanos(reads.read_nanos)),
            ms(Duration::from_nanos(reads.read_nanos / reads.storage_reads.max(1))),
            reads.served,
            reads.missed
        ),
    ));
    rows.push(("start \"not now\"".into(), tally.not_now.to_string()));
    rows.push((
        "check".into(),
        format!("ok: {checked} PLog events, dense offsets, no number issued twice"),
    ));
    print_table(&rows);
}

/// What the store did, as counters (those of the backend in use).
enum StoreSnapshot {
    Embedded(sequencer_host::StoreCounts),
    Objects(ObjectCounts),
    #[cfg(feature = "etcd")]
    Etcd(EtcdCounts),
    Memory,
}

/// A snapshot of [`sequencer_host::ObjectStats`] and the view store's counts.
#[derive(Clone, Copy)]
struct ObjectCounts {
    view: sequencer_host::StoreCounts,
    events_written: u64,
    appends: u64,
    syncs: u64,
    bundles_written: u64,
    merged_events: u64,
    leftovers_removed: u64,
    fenced: u64,
}

/// A snapshot of [`sequencer_host::EtcdStats`].
#[cfg(feature = "etcd")]
#[derive(Clone, Copy)]
struct EtcdCounts {
    writes: u64,
    txns: u64,
    append_txns: u64,
    retries: u64,
    read_backs: u64,
    fenced: u64,
    view_conflicts: u64,
}

impl StoreSnapshot {
    fn take(backend: &Backend) -> Self {
        match backend {
            Backend::Embedded(d) => Self::Embedded(d.store().counts()),
            Backend::Objects(o) => {
                let s = o.plog().stats();
                let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
                Self::Objects(ObjectCounts {
                    view: o.view_store().counts(),
                    events_written: get(&s.events_written),
                    appends: get(&s.appends),
                    syncs: get(&s.syncs),
                    bundles_written: get(&s.bundles_written),
                    merged_events: get(&s.merged_events),
                    leftovers_removed: get(&s.leftovers_removed),
                    fenced: get(&s.fenced),
                })
            }
            #[cfg(feature = "etcd")]
            Backend::Etcd(e) => {
                let s = e.stats();
                let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
                Self::Etcd(EtcdCounts {
                    writes: get(&s.writes),
                    txns: get(&s.txns),
                    append_txns: get(&s.append_txns),
                    retries: get(&s.retries),
                    read_backs: get(&s.read_backs),
                    fenced: get(&s.fenced),
                    view_conflicts: get(&s.view_conflicts),
                })
            }
            Backend::Memory(_) => Self::Memory,
        }
    }

    /// What was done between `before` and this snapshot.
    fn since(self, before: &Self) -> Self {
        match (self, before) {
            (Self::Embedded(a), Self::Embedded(b)) => Self::Embedded(sequencer_host::StoreCounts {
                commits: a.commits - b.commits,
                appends: a.appends - b.appends,
                append_writes: a.append_writes - b.append_writes,
                writes: a.writes - b.writes,
                values_written: a.values_written - b.values_written,
                commit_nanos: a.commit_nanos - b.commit_nanos,
            }),
            (Self::Objects(a), Self::Objects(b)) => Self::Objects(ObjectCounts {
                view: sequencer_host::StoreCounts {
                    commits: a.view.commits - b.view.commits,
                    writes: a.view.writes - b.view.writes,
                    values_written: a.view.values_written - b.view.values_written,
                    commit_nanos: a.view.commit_nanos - b.view.commit_nanos,
                    ..a.view
                },
                events_written: a.events_written - b.events_written,
                appends: a.appends - b.appends,
                syncs: a.syncs - b.syncs,
                bundles_written: a.bundles_written - b.bundles_written,
                merged_events: a.merged_events - b.merged_events,
                leftovers_removed: a.leftovers_removed,
                fenced: a.fenced - b.fenced,
            }),
            #[cfg(feature = "etcd")]
            (Self::Etcd(a), Self::Etcd(b)) => Self::Etcd(EtcdCounts {
                writes: a.writes - b.writes,
                txns: a.txns - b.txns,
                append_txns: a.append_txns - b.append_txns,
                retries: a.retries - b.retries,
                read_backs: a.read_backs - b.read_backs,
                fenced: a.fenced - b.fenced,
                view_conflicts: a.view_conflicts - b.view_conflicts,
            }),
            (now, _) => now,
        }
    }
}

/// Refuses a workload whose largest event the store cannot take in one write.
fn check_event_fits(args: &RunArgs, limits: AppendLimits) -> CliResult<()> {
    // The payload is the command as JSON (at most ~160 bytes), padded to --payload-bytes.
    let largest = encoded_len(MAX_NUMBERS, args.payload_bytes.max(160));
    if largest > limits.max_bytes {
        return Err(CliError(format!(
            "--payload-bytes {}: an event of up to {largest} bytes does not fit in one write of this store (at most {} bytes)",
            args.payload_bytes, limits.max_bytes
        )));
    }
    Ok(())
}

/// "p50 …, p99 …, max …" of latencies in microseconds (sorts them).
fn latency_line(us: &mut [u32]) -> String {
    if us.is_empty() {
        return "n/a (no event acknowledged)".into();
    }
    us.sort_unstable();
    let at = |q: f64| {
        let i = ((us.len() as f64 * q).ceil() as usize).clamp(1, us.len()) - 1;
        ms(Duration::from_micros(u64::from(us[i])))
    };
    format!(
        "p50 {}, p99 {}, max {} (numbering to durable acknowledgement, {} events)",
        at(0.50),
        at(0.99),
        at(1.0),
        us.len()
    )
}

fn open_partitions(
    driver: &Driver,
    runtime: &Runtime,
    params: &Params,
    partitions: u32,
) -> CliResult<Vec<PartitionSequencer>> {
    (0..partitions)
        .map(|p| driver.open(runtime, p, params).map_err(host))
        .collect()
}

/// The style of the CLI's progress bars, from an indicatif template.
pub fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn print_table(rows: &[(String, String)]) {
    let w = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let line = "-".repeat(w + 2 + rows.iter().map(|(_, v)| v.len()).max().unwrap_or(0));
    println!("{:<w$}  value", "metric");
    println!("{line}");
    for (k, v) in rows {
        println!("{k:<w$}  {v}");
    }
}
