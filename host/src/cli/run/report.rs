//! The summary table a run prints at its end.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use sequencer_host::store::layers::archive::ArchivePass;
use sequencer_host::store::layers::{ReadCounts, TailCounts};
use sequencer_host::store::{Counter, Store, StoreStats};

use super::super::common::{CliError, CliResult, SEQS};
use super::args::RunArgs;
use super::workload::Tally;

/// What recovery found: the events the store held before the run, those replayed to
/// actualize, and how long that took.
pub(super) struct Resumed {
    pub(super) events: u64,
    pub(super) replayed: u64,
    pub(super) took: Duration,
}

/// What the workload did.
pub(super) struct Ran {
    pub(super) tally: Tally,
    pub(super) elapsed: Duration,
    /// The store's counters during the workload.
    pub(super) during: StoreStats,
    pub(super) reads: ReadCounts,
    /// What the layer serving actualizations from the host's own tail did, if the store has
    /// it.
    pub(super) tail: Option<TailCounts>,
    /// What `--archive-every` did: passes, and their totals.
    pub(super) archived: Option<(u64, ArchivePass)>,
}

/// The step that reports: the summary table.
pub(super) fn report(args: &RunArgs, store: &Store, resumed: &Resumed, ran: Ran, checked: u64) {
    let Ran {
        mut tally,
        elapsed,
        during,
        reads,
        tail,
        archived,
    } = ran;
    let mut rows: Vec<(String, String)> = vec![
        ("store".into(), store.describe()),
        ("archive".into(), archive_line(store, archived)),
        ("started from".into(), started_line(resumed)),
    ];
    rows.extend(workload_rows(args));
    rows.extend(throughput_rows(&mut tally, elapsed));
    store_rows(&mut rows, &during, tally.events);
    rows.extend(actualization_rows(&tally, &reads));
    rows.push(("own tail".into(), own_tail_line(args, tail)));
    rows.push(("start \"not now\"".into(), tally.not_now.to_string()));
    rows.push((
        "check".into(),
        format!("ok: {checked} PLog events, dense offsets, no number issued twice"),
    ));
    print_table(&rows);
}

/// The store's archive, and what `--archive-every` did with it.
fn archive_line(store: &Store, archived: Option<(u64, ArchivePass)>) -> String {
    match (store.archive(), archived) {
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
    }
}

/// What the run started from.
fn started_line(resumed: &Resumed) -> String {
    if resumed.events == 0 {
        "an empty store".into()
    } else {
        format!(
            "{} events: replayed {} from the last flushed offsets in {}",
            resumed.events,
            resumed.replayed,
            ms(resumed.took)
        )
    }
}

/// The workload asked for: its partitions and batches.
fn workload_rows(args: &RunArgs) -> [(String, String); 2] {
    let batches = if args.batch_size == 1 {
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
    };
    [
        (
            "partitions".into(),
            format!(
                "{} ({} workspaces, fail rate {})",
                args.partitions, args.workspaces, args.fail_rate
            ),
        ),
        ("batches".into(), batches),
    ]
}

/// What the workload appended in `elapsed`, how fast, and the numbers it handed out.
fn throughput_rows(tally: &mut Tally, elapsed: Duration) -> Vec<(String, String)> {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let recovered = if tally.recovered > 0 {
        format!(
            "; {} more events of failed appends found in the PLog",
            tally.recovered
        )
    } else {
        String::new()
    };
    let mut rows: Vec<(String, String)> = vec![
        ("events".into(), tally.events.to_string()),
        ("elapsed".into(), format!("{secs:.2} s")),
        (
            "durable events/s".into(),
            format!("{:.0}", tally.events as f64 / secs),
        ),
        (
            "durable appends".into(),
            format!(
                "{} ({:.1} events each{recovered})",
                tally.appends,
                (tally.events - tally.recovered) as f64 / tally.appends.max(1) as f64,
            ),
        ),
        ("ack latency".into(), latency_line(&mut tally.latencies_us)),
    ];
    for (d, n) in SEQS.iter().zip(tally.numbers) {
        rows.push((format!("numbers {}", d.name), n.to_string()));
    }
    rows
}

/// The actualizations and the numbers reads of the run.
fn actualization_rows(tally: &Tally, reads: &ReadCounts) -> [(String, String); 3] {
    [
        (
            "actualizations".into(),
            format!(
                "{} ({} after failed appends, {} after appends refused by the fence)",
                tally.actualizations, tally.append_failures, tally.fenced
            ),
        ),
        (
            "time actualizing".into(),
            format!(
                "{} total over all partitions, {} mean",
                ms(tally.actualizing),
                ms(tally.actualizing
                    / u32::try_from(tally.actualizations.max(1)).unwrap_or(u32::MAX))
            ),
        ),
        (
            "numbers reads".into(),
            format!(
                "{} storage reads of {} workspaces ({} total, {} mean); {} starts served by reads ahead, {} read on their own",
                reads.storage_reads,
                reads.workspaces_read,
                ms(Duration::from_nanos(reads.read_nanos)),
                ms(Duration::from_nanos(
                    reads.read_nanos / reads.storage_reads.max(1)
                )),
                reads.served,
                reads.missed
            ),
        ),
    ]
}

/// The store's rows: what the counters the backend keeps say about the run.
fn store_rows(rows: &mut Vec<(String, String)>, s: &StoreStats, events: u64) {
    let per = |n: u64, of: u64| n as f64 / of.max(1) as f64;
    let views = s.count(Counter::ViewWrites);
    if let Some(txns) = s.get(Counter::Transactions) {
        // etcd
        let appends = s.count(Counter::Appends);
        rows.push(("flushes (view writes)".into(), views.to_string()));
        rows.push((
            "etcd transactions".into(),
            format!(
                "{txns} ({:.1} events per transaction; {appends} appends: {:.1} events each, in {} transactions, {} of them several partitions' together; {} retried, {} appends decided by read-back, {} refused by the fence, {} view writes tried again)",
                per(events, txns),
                per(events, appends),
                s.count(Counter::AppendTransactions),
                s.count(Counter::CombinedTransactions),
                s.count(Counter::Retries),
                s.count(Counter::ReadBacks),
                s.count(Counter::Fenced),
                s.count(Counter::ViewConflicts)
            ),
        ));
    } else if let Some(bundles) = s.get(Counter::BundlesWritten) {
        // objects
        let written = s.count(Counter::EventsAppended);
        let syncs = s.count(Counter::Syncs);
        rows.push((
            "flushes (view writes)".into(),
            format!(
                "{views} ({} view rows, {} redb commits)",
                s.count(Counter::ViewRows),
                s.count(Counter::Commits)
            ),
        ));
        let appends = s.count(Counter::Appends);
        rows.push((
            "event objects".into(),
            format!(
                "{} for {written} events in {appends} appends ({:.1} events per object; {syncs} syncs of files and directories: {:.1} per append; {} appends refused by the fence)",
                s.count(Counter::ObjectsWritten),
                per(written, s.count(Counter::ObjectsWritten)),
                per(syncs, appends),
                s.count(Counter::Fenced)
            ),
        ));
        rows.push((
            "merger".into(),
            format!(
                "{bundles} bundles written, {} events merged (their objects deleted); {} leftovers of interrupted merges removed (at open, or swept)",
                s.count(Counter::MergedEvents),
                s.count(Counter::LeftoversRemoved)
            ),
        ));
    } else if let Some(commits) = s.get(Counter::Commits) {
        // redb
        rows.push((
            "flushes (view writes)".into(),
            format!("{views} ({} view rows)", s.count(Counter::ViewRows)),
        ));
        rows.push((
            "commits (1 fsync each)".into(),
            format!(
                "{commits} ({:.1} events per fsync, mean {})",
                per(events, commits),
                ms(Duration::from_nanos(
                    s.count(Counter::CommitNanos) / commits.max(1)
                ))
            ),
        ));
    } else {
        rows.push(("flushes (view writes)".into(), "n/a in memory".into()));
    }
}

/// What the actualizations from the host's own tail did, or why there were none.
fn own_tail_line(args: &RunArgs, tail: Option<TailCounts>) -> String {
    match tail {
        Some(t) => format!(
            "{} offset reads answered from memory, {} of {} read from the store proved the tail: {} PLog pages ({} events) served from memory, {} read from the store; numbers of {} workspaces served from memory, {} read from the store",
            t.vouched,
            t.proofs_held,
            t.proofs_held + t.proofs_failed,
            t.pages_served,
            t.events_served,
            t.pages_read,
            t.workspaces_served,
            t.workspaces_read
        ),
        None if !args.own_tail => "off (--own-tail off)".into(),
        None => "not used on this store (only etcd, where other hosts may append, has it; other stores read their PLog)".into(),
    }
}

/// `--latency-log`: every acknowledged event's acknowledgement time (Unix ms) and latency
/// (µs), one line each.
pub(super) fn write_latency_log(path: &Path, tally: &Tally) -> CliResult<()> {
    let fail = |e: std::io::Error| {
        CliError(format!(
            "{}: cannot write the latency log: {e}",
            path.display()
        ))
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(fail)?);
    for (ms, us) in tally.acked_unix_ms.iter().zip(&tally.latencies_us) {
        writeln!(out, "{ms} {us}").map_err(fail)?;
    }
    out.flush().map_err(fail)
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

pub(super) fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

pub(super) fn print_table(rows: &[(String, String)]) {
    let w = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let line = "-".repeat(w + 2 + rows.iter().map(|(_, v)| v.len()).max().unwrap_or(0));
    println!("{:<w$}  value", "metric");
    println!("{line}");
    for (k, v) in rows {
        println!("{k:<w$}  {v}");
    }
}
