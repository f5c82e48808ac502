//! `run`: the command-processor workload.
//!
//! One thread per partition plays a command processor: each event picks a workspace, takes its
//! PLog offset with `start` and its numbers with `next` (one WLog offset, one to three record
//! ids, zero to two C-record ids, as spec 002's system sequences), appends itself with a payload
//! to the PLog (durable on return), then flushes. A share of events fail after `start` and take
//! the `actualize` path instead; so does an event whose append fails in storage.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use futures::future::{BoxFuture, FutureExt};
use indicatif::{ProgressBar, ProgressStyle};
use sequencer::{Number, PLogOffset, Params, SeqId, SeqValue, WsId};
#[cfg(feature = "etcd")]
use sequencer_host::EtcdStorage;
use sequencer_host::bindings::{NotNowReason, StartOutcome, Status};
use sequencer_host::{
    AppendError, DataDir, DirState, Driver, DriverConfig, HostError, Limits, MemoryStorage,
    MonotonicClock, OpenMode, PartitionId, PartitionSequencer, PlogChecker, PlogPage, Runtime,
    Storage, StorageError,
};

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

fn params() -> Params {
    SEQS.iter()
        .fold(Params::new(), |p, s| p.with_seq(KIND, s.id, s.initial))
}

/// Options of `run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// The data directory (created if missing; resumed if it exists).
    #[arg(long, env = "SEQUENCER_DATA", default_value = DEFAULT_DATA_DIR)]
    pub data: PathBuf,
    /// Storage backend: embedded (redb in --data), memory, or etcd://HOST:PORT,HOST:PORT,... (an
    /// etcd cluster shared by many hosts; --data is not used).
    #[arg(long, default_value = "embedded")]
    pub store: StoreKind,
    /// The sequencer component (.wasm), as scripts/build-component.sh prints it.
    #[arg(long, env = "SEQUENCER_COMPONENT")]
    pub component: PathBuf,
    /// Partitions, each with its own sequencer and command-processor thread.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub partitions: u32,
    /// Workspaces, spread over the partitions.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub workspaces: u64,
    /// Events per partition.
    #[arg(long, default_value_t = 2500)]
    pub events: u64,
    /// Share of events that fail after `start` and take the `actualize` path (0 to 1).
    #[arg(long, default_value_t = 0.01, value_parser = parse_share)]
    pub fail_rate: f64,
    /// Bytes of payload per PLog event.
    #[arg(long, default_value_t = 128)]
    pub payload_bytes: usize,
    /// Seed of the workload's choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a share between 0 and 1")),
    }
}

/// Counts PLog events replayed, for the actualization progress bar.
struct CountingStorage {
    inner: Arc<dyn Storage>,
    replayed: Arc<AtomicU64>,
}

impl Storage for CountingStorage {
    fn read_numbers(
        &self,
        partition: PartitionId,
        ws: WsId,
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.inner.read_numbers(partition, ws, seqs)
    }

    fn read_next_offset(
        &self,
        partition: PartitionId,
    ) -> BoxFuture<'static, Result<PLogOffset, StorageError>> {
        self.inner.read_next_offset(partition)
    }

    fn write(
        &self,
        partition: PartitionId,
        values: Vec<SeqValue>,
        next_offset: PLogOffset,
    ) -> BoxFuture<'static, Result<(), StorageError>> {
        self.inner.write(partition, values, next_offset)
    }

    fn read_plog(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max_events: usize,
    ) -> BoxFuture<'static, Result<PlogPage, StorageError>> {
        let replayed = self.replayed.clone();
        self.inner
            .read_plog(partition, from, max_events)
            .map(move |r| {
                if let Ok(page) = &r {
                    replayed.fetch_add(page.next.saturating_sub(from), Ordering::Relaxed);
                }
                r
            })
            .boxed()
    }

    fn append_event(
        &self,
        partition: PartitionId,
        offset: PLogOffset,
        values: &[SeqValue],
        payload: &[u8],
    ) -> Result<(), AppendError> {
        self.inner.append_event(partition, offset, values, payload)
    }
}

/// The store a run works on.
enum Backend {
    Embedded(DataDir),
    Memory(MemoryStorage),
    #[cfg(feature = "etcd")]
    Etcd(EtcdStorage),
}

impl Backend {
    /// Another host may hold the same partition (etcd), so an append refused by the fence
    /// means "actualize and go on", not a bug.
    fn shared(&self) -> bool {
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
    events: u64,
    numbers: [u64; SEQS.len()],
    actualizations: u64,
    append_failures: u64,
    fenced: u64,
    actualizing: Duration,
    not_now: u64,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn share(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Workload<'a> {
    args: &'a RunArgs,
    storage: &'a Arc<dyn Storage>,
    events_bar: &'a ProgressBar,
    actualizations: &'a AtomicU64,
    /// A shared store (etcd): another host may hold the same partition, so an append refused
    /// by the fence means "actualize and go on", not a bug.
    shared: bool,
}

impl Workload<'_> {
    fn partition(&self, seq: &PartitionSequencer) -> Result<Tally, CliError> {
        let a = self.args;
        let p = seq.partition();
        let mut t = Tally::default();
        let mut rng = Rng((a.seed ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(u64::from(p) + 1) | 1);
        let per_partition = a.workspaces.div_ceil(u64::from(a.partitions));
        let mut actualizing_since: Option<Instant> = None;
        let mut seqs: Vec<SeqId> = Vec::with_capacity(6);
        let mut payload = Vec::with_capacity(a.payload_bytes);
        while t.events < a.events {
            let ws = (rng.next() % per_partition) * u64::from(a.partitions) + u64::from(p) + 1;
            seqs.clear();
            seqs.push(SEQS[0].id);
            seqs.extend(std::iter::repeat_n(
                SEQS[1].id,
                1 + (rng.next() % 3) as usize,
            ));
            seqs.extend(std::iter::repeat_n(SEQS[2].id, (rng.next() % 3) as usize));
            let (outcome, numbers) = seq.start_next(KIND, ws, &seqs).map_err(host)?;
            let offset = match outcome {
                StartOutcome::Started(offset) => offset,
                StartOutcome::NotNow(reason) => {
                    if reason == NotNowReason::TooManyUnflushed {
                        t.not_now += 1;
                    }
                    std::thread::sleep(Duration::from_micros(100));
                    continue;
                }
            };
            if let Some(since) = actualizing_since.take() {
                t.actualizing += since.elapsed();
            }
            if rng.share() < a.fail_rate {
                // The command failed after `start`: its offset and numbers go back.
                seq.actualize().map_err(host)?;
                t.actualizations += 1;
                self.actualizations.fetch_add(1, Ordering::Relaxed);
                actualizing_since = Some(Instant::now());
                continue;
            }
            let values: Vec<SeqValue> = seqs
                .iter()
                .zip(&numbers)
                .map(|(&s, &n)| SeqValue::new(ws, s, n))
                .collect();
            fill_payload(&mut payload, a.payload_bytes, ws, offset, &values);
            match self.storage.append_event(p, offset, &values, &payload) {
                Ok(()) => {}
                Err(AppendError::Storage(e)) => {
                    // Whether the event is in the PLog is unknown: actualization finds out.
                    tracing::warn!("partition {p}: {e}; actualizing");
                    seq.actualize().map_err(host)?;
                    t.append_failures += 1;
                    t.actualizations += 1;
                    self.actualizations.fetch_add(1, Ordering::Relaxed);
                    actualizing_since = Some(Instant::now());
                    continue;
                }
                Err(e @ AppendError::WrongOffset { .. }) if self.shared => {
                    // Another host committed this offset: catch up from the PLog and go on.
                    tracing::warn!("partition {p}: {e}; actualizing");
                    seq.actualize().map_err(host)?;
                    t.fenced += 1;
                    t.actualizations += 1;
                    self.actualizations.fetch_add(1, Ordering::Relaxed);
                    actualizing_since = Some(Instant::now());
                    continue;
                }
                Err(e @ AppendError::WrongOffset { .. }) => {
                    return Err(CliError(format!("partition {p}: {e}")));
                }
            }
            seq.flush().map_err(host)?;
            for &s in &seqs {
                if let Some(i) = SEQS.iter().position(|d| d.id == s) {
                    t.numbers[i] += 1;
                }
            }
            t.events += 1;
            self.events_bar.inc(1);
        }
        if let Some(since) = actualizing_since {
            t.actualizing += since.elapsed();
        }
        Ok(t)
    }
}

fn host(e: HostError) -> CliError {
    CliError(e.to_string())
}

/// A readable payload of about `size` bytes: the command as JSON, padded.
fn fill_payload(out: &mut Vec<u8>, size: usize, ws: WsId, offset: PLogOffset, values: &[SeqValue]) {
    use std::io::Write;
    out.clear();
    let ids: Vec<String> = values.iter().map(|v| v.value.to_string()).collect();
    let _ = write!(
        out,
        r#"{{"cmd":"c.orders.Place","ws":{ws},"offset":{offset},"ids":[{}]"#,
        ids.join(",")
    );
    let pad = size.saturating_sub(out.len() + 10);
    if pad > 0 {
        let _ = write!(out, r#","pad":"{}""#, ".".repeat(pad));
    }
    out.push(b'}');
}

/// `run`.
pub fn run(args: &RunArgs, progress: &Progress) -> CliResult<ExitCode> {
    // Validate everything before writing anything.
    let dir_state = match &args.store {
        StoreKind::Embedded => Some(DataDir::validate(&args.data, OpenMode::OpenOrCreate)?),
        StoreKind::Memory => None,
        StoreKind::Etcd(_) => None,
    };
    let loading = Instant::now();
    let runtime = component::load(&args.component, Limits::default())?;
    tracing::debug!(
        "compiled component {} in {:.2} s",
        args.component.display(),
        loading.elapsed().as_secs_f64()
    );
    let backend = match dir_state {
        Some(state) => {
            let dir = DataDir::open_validated(&args.data, state)?;
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
            #[cfg(feature = "etcd")]
            StoreKind::Etcd(url) => {
                let unavailable = |e: StorageError| {
                    CliError(format!(
                        "store {url}: the etcd cluster is not available: {e}"
                    ))
                };
                let store = EtcdStorage::connect_url(url).map_err(unavailable)?;
                store.probe(Duration::from_secs(5)).map_err(unavailable)?;
                Backend::Etcd(store)
            }
            #[cfg(not(feature = "etcd"))]
            StoreKind::Etcd(url) => return Err(super::no_etcd(url)),
            _ => Backend::Memory(MemoryStorage::new()),
        },
    };
    let base: Arc<dyn Storage> = match &backend {
        Backend::Embedded(d) => Arc::new(d.store().clone()),
        Backend::Memory(m) => Arc::new(m.clone()),
        #[cfg(feature = "etcd")]
        Backend::Etcd(e) => Arc::new(e.clone()),
    };
    let replayed = Arc::new(AtomicU64::new(0));
    let storage: Arc<dyn Storage> = Arc::new(CountingStorage {
        inner: base,
        replayed: replayed.clone(),
    });

    // What a restart has to replay: from the stored next offset to the PLog's end.
    let mut to_replay = 0u64;
    let mut resumed_events = 0u64;
    for p in 0..args.partitions {
        let (bounds, stored) = match &backend {
            Backend::Embedded(d) => (d.store().plog_bounds(p)?, d.store().stored_next_offset(p)?),
            #[cfg(feature = "etcd")]
            Backend::Etcd(e) => (e.plog_bounds(p)?, e.stored_next_offset(p)?),
            Backend::Memory(_) => (None, 0),
        };
        if let Some((_, last)) = bounds {
            to_replay += (last + 1).saturating_sub(stored.max(1));
            resumed_events += last;
        }
    }

    let driver = Driver::spawn(
        storage.clone(),
        Arc::new(MonotonicClock::new()),
        DriverConfig::default(),
    );
    let params = params();
    let actualize_started = Instant::now();
    let seqs = open_partitions(&driver, &runtime, &params, args.partitions)?;
    let bar = progress.multi.add(ProgressBar::new(to_replay));
    bar.set_style(style(
        "{prefix:>12} [{bar:40}] {pos}/{len} events replayed ({elapsed})",
    ));
    bar.set_prefix("actualizing");
    loop {
        bar.set_position(replayed.load(Ordering::Relaxed).min(to_replay));
        if seqs.iter().all(|s| s.status() == Status::Ready) {
            break;
        }
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
    let replayed_events = replayed.load(Ordering::Relaxed);
    if resumed_events > 0 {
        tracing::info!(
            "resumed {resumed_events} events: replayed {replayed_events} from the last flushed offsets in {:.3} s",
            actualize_time.as_secs_f64()
        );
    }

    // The workload.
    let total = u64::from(args.partitions) * args.events;
    let events_bar = progress.multi.add(ProgressBar::new(total));
    events_bar.set_style(style(
        "{prefix:>12} [{bar:40}] {pos}/{len} events ({elapsed}, eta {eta}) {msg}",
    ));
    events_bar.set_prefix("running");
    let actualizations = AtomicU64::new(0);
    let workload = Workload {
        args,
        storage: &storage,
        events_bar: &events_bar,
        actualizations: &actualizations,
        shared: backend.shared(),
    };
    let counts_before = match &backend {
        Backend::Embedded(d) => d.store().counts(),
        _ => Default::default(),
    };
    let started = Instant::now();
    let results: Vec<CliResult<Tally>> = std::thread::scope(|scope| {
        let handles: Vec<_> = seqs
            .iter()
            .map(|seq| {
                let w = &workload;
                scope.spawn(move || w.partition(seq))
            })
            .collect();
        while !handles.iter().all(|h| h.is_finished()) {
            let rate = events_bar.position() as f64 / started.elapsed().as_secs_f64().max(1e-3);
            let mut msg = format!(
                "{rate:.0}/s, actualizations {}",
                actualizations.load(Ordering::Relaxed)
            );
            if let Backend::Embedded(d) = &backend {
                let c = d.store().counts();
                msg.push_str(&format!(
                    ", flushes {}, commits {}",
                    c.writes - counts_before.writes,
                    c.commits - counts_before.commits
                ));
            }
            events_bar.set_message(msg);
            std::thread::sleep(Duration::from_millis(100));
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CliError("a partition thread panicked".into())))
            })
            .collect()
    });
    let elapsed = started.elapsed();
    events_bar.finish_and_clear();
    let mut tally = Tally::default();
    for r in results {
        let t = r?;
        tally.events += t.events;
        for (sum, n) in tally.numbers.iter_mut().zip(t.numbers) {
            *sum += n;
        }
        tally.actualizations += t.actualizations;
        tally.append_failures += t.append_failures;
        tally.fenced += t.fenced;
        tally.actualizing += t.actualizing;
        tally.not_now += t.not_now;
    }

    // Let the flusher catch up, then stop.
    driver.idle();
    for s in &seqs {
        s.cleanup();
    }
    drop(driver);
    let counts = match &backend {
        Backend::Embedded(d) => {
            let c = d.store().counts();
            Some((
                c.writes - counts_before.writes,
                c.commits - counts_before.commits,
                c,
            ))
        }
        _ => None,
    };

    // Prove what is stored.
    let checked = match &backend {
        Backend::Embedded(d) => check::check_store(d.store())?,
        Backend::Memory(m) => check_memory(m, args.partitions)?,
        #[cfg(feature = "etcd")]
        Backend::Etcd(e) => check::check_etcd(e)?,
    };

    let store_line = match &backend {
        Backend::Embedded(d) => format!("embedded redb, {}", d.store().path().display()),
        Backend::Memory(_) => "memory (nothing kept)".to_string(),
        #[cfg(feature = "etcd")]
        Backend::Etcd(e) => format!("{} (3-way replicated, fenced appends)", e.label()),
    };
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mut rows: Vec<(String, String)> = vec![
        ("store".into(), store_line),
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
        ("events".into(), tally.events.to_string()),
        ("elapsed".into(), format!("{secs:.2} s")),
        (
            "events/s".into(),
            format!("{:.0}", tally.events as f64 / secs),
        ),
    ];
    for (d, n) in SEQS.iter().zip(tally.numbers) {
        rows.push((format!("numbers {}", d.name), n.to_string()));
    }
    match counts {
        Some((writes, commits, c)) => {
            rows.push(("flushes (view writes)".into(), writes.to_string()));
            rows.push((
                "commits (1 fsync each)".into(),
                format!(
                    "{commits} ({:.2} per event, mean {})",
                    commits as f64 / tally.events.max(1) as f64,
                    ms(Duration::from_nanos(c.commit_nanos / c.commits.max(1)))
                ),
            ));
        }
        None => match &backend {
            #[cfg(feature = "etcd")]
            Backend::Etcd(e) => {
                let s = e.stats();
                rows.push((
                    "flushes (view writes)".into(),
                    s.writes.load(Ordering::Relaxed).to_string(),
                ));
                rows.push((
                    "etcd transactions".into(),
                    format!(
                        "{} ({} retried, {} appends decided by read-back, {} refused by the fence)",
                        s.txns.load(Ordering::Relaxed),
                        s.retries.load(Ordering::Relaxed),
                        s.read_backs.load(Ordering::Relaxed),
                        s.fenced.load(Ordering::Relaxed)
                    ),
                ));
            }
            _ => rows.push(("flushes (view writes)".into(), "n/a in memory".into())),
        },
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
    rows.push(("start \"not now\"".into(), tally.not_now.to_string()));
    rows.push((
        "check".into(),
        format!("ok: {checked} PLog events, dense offsets, no number issued twice"),
    ));
    print_table(&rows);
    Ok(ExitCode::SUCCESS)
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

fn check_memory(m: &MemoryStorage, partitions: u32) -> CliResult<u64> {
    let mut events = 0;
    for p in 0..partitions {
        let mut c = PlogChecker::new(p, m.stored_next_offset(p), initial);
        let mut keys = std::collections::BTreeSet::new();
        for (offset, values) in m.plog(p) {
            c.event(offset, &values)?;
            keys.extend(values.iter().map(|v| (v.key.ws, v.key.seq)));
        }
        let view: Vec<(WsId, SeqId, Number)> = keys
            .into_iter()
            .map(|(ws, seq)| (ws, seq, m.view_value(p, ws, seq)))
            .filter(|&(_, _, last)| last > 0)
            .collect();
        events += c.finish(&view)?.events;
    }
    Ok(events)
}

fn style(template: &str) -> ProgressStyle {
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
