//! The workload: one command processor per partition, numbering its commands' events with
//! `start_next`, staging them into batches, appending each batch to the PLog with one durable
//! write, then `flush` (or `actualize` after a failed command or append). Failed appends are
//! retried under the store's append policy, never endlessly.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use backon::ExponentialBackoff;
use indicatif::ProgressBar;
use sequencer::{PLogOffset, SeqId, SeqValue, WsId};
#[cfg(feature = "etcd")]
use sequencer_host::membership::Claim;
use sequencer_host::rng::Rng;
use sequencer_host::store::layers::ReadAhead;
use sequencer_host::store::{RetryPolicy, WarnLimiter};
use sequencer_host::{
    AppendError, EventBatch, HostError, NotNowReason, PartitionId, PartitionSequencer,
    StartOutcome, Status, Storage, StorageError,
};

use super::super::common::{CliError, CliResult, KIND, SEQS};
use super::args::{MAX_NUMBERS, READY_WITHIN, RunArgs};

/// What one partition's command processor did.
#[derive(Default, Clone)]
pub(super) struct Tally {
    /// Events durable in the PLog (acknowledged, or found there by actualization).
    pub(super) events: u64,
    pub(super) numbers: [u64; SEQS.len()],
    /// Durable appends that succeeded (one per batch).
    pub(super) appends: u64,
    /// Events of failed appends that actualization found in the PLog after all.
    pub(super) recovered: u64,
    pub(super) actualizations: u64,
    pub(super) append_failures: u64,
    pub(super) fenced: u64,
    pub(super) actualizing: Duration,
    pub(super) not_now: u64,
    /// Appends refused because this host did not own the partition (any more): by the
    /// cluster's epoch compare, or before they were sent (the lease may have expired).
    pub(super) not_owner: u64,
    /// From acquiring the partition to this host's first durable append there (a tenure).
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(super) first_append: Option<Duration>,
    /// Microseconds from numbering each acknowledged event to its append's acknowledgement.
    pub(super) latencies_us: Vec<u32>,
    /// With `--latency-log` only: when each of `latencies_us` was acknowledged (Unix ms).
    pub(super) acked_unix_ms: Vec<u64>,
}

impl Tally {
    pub(super) fn add(&mut self, t: Tally) {
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
        self.not_owner += t.not_owner;
        self.latencies_us.extend(t.latencies_us);
        self.acked_unix_ms.extend(t.acked_unix_ms);
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

pub(super) struct Workload<'a> {
    pub(super) args: &'a RunArgs,
    pub(super) storage: &'a Arc<dyn Storage>,
    pub(super) read_ahead: &'a ReadAhead,
    pub(super) events_bar: &'a ProgressBar,
    pub(super) actualizations: &'a AtomicU64,
    /// A shared store (etcd): another host may hold the same partition, so an append refused
    /// by the fence means "actualize and go on", not a bug.
    pub(super) shared: bool,
    /// Repeated warnings of every partition, limited to one line per kind per interval.
    pub(super) warnings: &'a WarnLimiter,
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
    /// An append was refused because this host does not own the partition (any more).
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    not_owner: bool,
    /// How many events this processor appends (the run's --events, or a tenure's share).
    goal: u64,
    /// Whether a tenure is to end: its partition is to be handed over or is lost (never in a
    /// run of one host). A wait for "not now" ends then.
    letting_go: &'a dyn Fn() -> bool,
    /// Since when the sequencer has said "not now" with no event staged: such a wait stops
    /// the partition as a wait for readiness does ([`stop_if_stuck`]).
    not_now_since: Option<Instant>,
}

impl Workload<'_> {
    pub(super) fn partition(&self, seq: &PartitionSequencer) -> Result<Tally, CliError> {
        let a = self.args;
        let mut p = self.processor(seq, a.events, &|| false);
        while p.t.events < a.events {
            let end = p.fill_batch()?;
            p.append_batch(end)?;
        }
        if let Some(since) = p.actualizing_since {
            p.t.actualizing += since.elapsed();
        }
        Ok(p.t)
    }

    #[cfg(feature = "etcd")]
    /// One tenure of an owned partition (a host among many): appends until this host has
    /// appended `goal` events there, a handover is asked for (the batch in flight is
    /// finished first), or the partition is lost; then lets go of it (`claim.release`). A
    /// partition lost ends the tenure, not the run.
    pub(super) fn tenure(
        &self, seq: &PartitionSequencer, claim: &Claim, goal: u64, acquired: Instant,
    ) -> Result<Tally, CliError> {
        let letting_go = || claim.handover_requested() || claim.is_lost();
        let mut p = self.processor(seq, goal, &letting_go);
        let mut run = || -> Result<(), CliError> {
            while p.t.events < goal && !letting_go() {
                let end = p.fill_batch()?;
                p.append_batch(end)?;
                if p.t.appends > 0 && p.t.first_append.is_none() {
                    p.t.first_append = Some(acquired.elapsed());
                }
            }
            Ok(())
        };
        let ran = run();
        claim.release();
        if let Some(since) = p.actualizing_since {
            p.t.actualizing += since.elapsed();
        }
        match ran {
            Err(e) if !(p.not_owner || claim.is_lost()) => Err(e),
            _ => Ok(p.t),
        }
    }

    /// A command processor of `seq` that appends `goal` events.
    fn processor<'b>(
        &'b self, seq: &'b PartitionSequencer, goal: u64, letting_go: &'b dyn Fn() -> bool,
    ) -> Processor<'b> {
        let a = self.args;
        Processor {
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
            not_owner: false,
            goal,
            letting_go,
            not_now_since: None,
        }
    }
}

impl Processor<'_> {
    /// Numbers and stages events until the batch is full or must go.
    fn fill_batch(&mut self) -> Result<BatchEnd, CliError> {
        let a = self.w.args;
        let want = a.batch_size.min(self.goal.saturating_sub(self.t.events));
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

    /// Waits (bounded) until the sequencer has actualized, or its tenure is to end.
    fn wait_ready(&mut self) -> Result<(), CliError> {
        let started = Instant::now();
        while self.seq.status() != Status::Ready {
            if (self.letting_go)() {
                // The tenure ends: its next start says "not now" and nothing is numbered.
                return Ok(());
            }
            if self.seq.status() == Status::CleanedUp {
                return Err(CliError(format!(
                    "partition {}: the sequencer closed while actualizing",
                    self.seq.partition()
                )));
            }
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
                    if !self.batch.is_empty() || (self.letting_go)() {
                        return Ok(BatchEnd::Early);
                    }
                    let since = *self.not_now_since.get_or_insert_with(Instant::now);
                    stop_if_stuck(self.w.storage.as_ref(), since, || {
                        format!(
                            "partition {}: still not now ({reason:?})",
                            self.seq.partition()
                        )
                    })?;
                    std::thread::sleep(Duration::from_micros(100));
                    continue;
                }
            };
            self.not_now_since = None;
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

    /// The batch is durable: counted, its latencies taken.
    fn appended(&mut self) {
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
        self.t.latencies_us.extend(
            self.numbered
                .iter()
                .map(|&at| u32::try_from(acked.duration_since(at).as_micros()).unwrap_or(u32::MAX)),
        );
        if self.w.args.latency_log.is_some() {
            let unix_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            let acked_now = self.numbered.len();
            self.t
                .acked_unix_ms
                .extend(std::iter::repeat_n(unix_ms, acked_now));
        }
        self.w.events_bar.inc(n);
    }

    /// The batch's append failed with `e`: waits before the next try (which an actualization
    /// precedes), or stops the partition once the failure policy gives up or the store takes
    /// no more writes.
    fn append_failed(&mut self, e: &StorageError) -> Result<(), CliError> {
        let p = self.seq.partition();
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
        // The seed differs per partition and per failure, and leaves the workload's own
        // random choices alone.
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
        Ok(())
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
            Ok(()) => self.appended(),
            Err(AppendError::Storage(e)) => {
                self.append_failed(&e)?;
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
            Err(e @ AppendError::NotOwner { .. }) => {
                // Another host owns it now (or may): this host stops numbering it.
                self.t.not_owner += 1;
                self.not_owner = true;
                self.w
                    .warnings
                    .warn("not owner", || format!("partition {p}: {e}; letting it go"));
                return Err(CliError(format!("partition {p}: {e}")));
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

pub(super) fn host(e: HostError) -> CliError {
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
pub(super) const WARN_INTERVAL: Duration = Duration::from_secs(5);

/// What a run that stops on a storage error tells the operator.
pub(super) const STOPPED: &str = "every event acknowledged before is durable: `sequencer-host check` proves it, and a run resumes once the store takes writes again";

/// How long a wait for a sequencer to become ready may go without progress once the store
/// has met an error that cannot clear by itself (actualizing needs writes it will not take).
const STUCK_ON_FAILURE: Duration = Duration::from_secs(3);

/// Stops a wait that began (or last progressed) at `since` when it cannot end: a replay met an
/// event that fails its checksum (at once: it is never replayed, and reading again will not
/// mend it), the store met an error that cannot clear by itself and `STUCK_ON_FAILURE`
/// passed, or `READY_WITHIN` passed. `who` names what is waited for.
pub(super) fn stop_if_stuck(
    storage: &dyn Storage, since: Instant, who: impl Fn() -> String,
) -> CliResult<()> {
    if let Some(damaged) = storage.damaged() {
        return Err(CliError(damaged.to_string()));
    }
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
