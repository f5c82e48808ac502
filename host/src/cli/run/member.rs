//! `run --host-name NAME`: one host among many on an etcd cluster. It joins the hosts
//! ([`Membership`]), runs a command processor on each partition it acquires for as long as it
//! owns it, and stops once every partition's PLog holds `--events` events (or on SIGTERM);
//! then it hands its partitions over and prints what it did: partitions owned, takeovers,
//! handovers and their times, appends refused for the epoch.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use sequencer_host::membership::{
    Membership, MembershipConfig, MembershipEvent, MembershipParts, MembershipStats, margin,
};
use sequencer_host::store::WarnLimiter;
use sequencer_host::{Clock, MonotonicClock, PartitionId, StoreReader};

use super::super::common::{CliError, CliResult, style};
use super::super::logging::Progress;
use super::args::{RunArgs, params};
use super::open::{Opened, open_store};
use super::report::{ms, print_table};
use super::workload::{Tally, WARN_INTERVAL, Workload};

/// One tenure's end: the partition, what its processor did, and whether it was a takeover.
struct TenureEnd {
    partition: PartitionId,
    tally: Tally,
    takeover: bool,
}

/// `run --host-name NAME` (see the module's doc).
pub(super) fn run_member(args: &RunArgs, name: &str, progress: &Progress) -> CliResult<ExitCode> {
    let opened = open_store(args)?;
    let etcd = (opened.store.etcd().cloned()).ok_or_else(|| {
        CliError("--host-name: many hosts share an etcd store only (--store etcd://...)".into())
    })?;
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Arc::new(args.driver(
        opened.storage.clone(),
        clock.clone(),
        opened.metrics.as_ref(),
    ));
    let mut config = MembershipConfig::new(name, args.partitions);
    config.lease_ttl = Duration::from_secs(args.lease_ttl_s);
    config.register_within = Duration::from_secs(args.store_wait_s);
    let parts = MembershipParts {
        store: etcd.clone(),
        driver: driver.clone(),
        runtime: opened.runtime.clone(),
        params: params(),
        clock,
    };
    let (membership, events) =
        Membership::open(parts, config).map_err(|e| CliError(e.to_string()))?;
    // Ready as soon as what it owns is: a host of many may own nothing for a while.
    opened.metrics.iter().for_each(|m| m.set_opening(false));
    tracing::info!(
        "host {name}: joined with a {} s lease (lease id {:x})",
        args.lease_ttl_s,
        etcd.owners(Duration::from_secs(2))
            .ok()
            .and_then(|o| o.hosts.get(name).copied())
            .unwrap_or_default()
    );
    let started = Instant::now();
    let terminated = on_sigterm();
    let (ends, stats) = serve(args, &opened, membership, events, &terminated, progress)?;
    let elapsed = started.elapsed();
    driver.idle();
    report(args, name, &opened, &etcd, ends, &stats, elapsed);
    Ok(ExitCode::SUCCESS)
}

/// Serves the partitions as they are acquired and lost, until every partition is complete;
/// then leaves. Returns every tenure's end and the membership's stats.
fn serve(
    args: &RunArgs, opened: &Opened, membership: Membership,
    mut events: futures::channel::mpsc::UnboundedReceiver<MembershipEvent>,
    terminated: &AtomicBool, progress: &Progress,
) -> CliResult<(Vec<TenureEnd>, MembershipStats)> {
    let total = u64::from(args.partitions) * args.events;
    let bar = progress.multi.add(ProgressBar::new(total));
    bar.set_style(style(
        "{prefix:>12} [{bar:40}] {pos}/{len} events in the deployment ({elapsed}) {msg}",
    ));
    bar.set_prefix("running");
    let appended_here = ProgressBar::hidden();
    let actualizations = AtomicU64::new(0);
    let warnings = WarnLimiter::new(WARN_INTERVAL);
    let workload = Workload {
        args,
        storage: &opened.storage,
        read_ahead: &opened.read_ahead,
        events_bar: &appended_here,
        actualizations: &actualizations,
        shared: true,
        warnings: &warnings,
    };
    let reader = opened.store.reader();
    std::thread::scope(|scope| {
        let mut running = Vec::new();
        let mut ends = Vec::new();
        let mut failed: Option<CliError> = None;
        let mut checked_at: Option<Instant> = None;
        loop {
            while let Ok(event) = events.try_recv() {
                if let Some(tenure) = begin_tenure(scope, &workload, reader, event)? {
                    running.push(tenure);
                }
            }
            let (finished, still): (Vec<_>, Vec<_>) =
                running.into_iter().partition(|(_, _, h)| h.is_finished());
            running = still;
            for (partition, takeover, h) in finished {
                ended(h.join(), partition, takeover, &mut ends, &mut failed);
            }
            if let Some(f) = membership.failure() {
                failed.get_or_insert(CliError(f));
            }
            if failed.is_some() {
                break;
            }
            if terminated.load(Ordering::Relaxed) {
                tracing::info!("SIGTERM: handing every partition over");
                break;
            }
            if checked_at.is_none_or(|at| at.elapsed() > Duration::from_millis(300)) {
                checked_at = Some(Instant::now());
                let in_plogs = in_plogs(reader, args)?;
                bar.set_position(in_plogs);
                if in_plogs >= total {
                    break;
                }
            }
            bar.set_message(format!(
                "owned {:?}, {} appended here",
                membership.owned(),
                appended_here.position()
            ));
            std::thread::sleep(Duration::from_millis(20));
        }
        // Every processor ends its tenure once asked to hand over: leaving asks them all.
        let stats = membership.leave();
        for (partition, takeover, h) in running {
            ended(h.join(), partition, takeover, &mut ends, &mut failed);
        }
        bar.finish_and_clear();
        match failed {
            Some(e) => Err(e),
            None => Ok((ends, stats)),
        }
    })
}

/// A partition's processor being run: the partition, whether it was taken over, its thread.
type Tenure<'scope> = (
    PartitionId,
    bool,
    std::thread::ScopedJoinHandle<'scope, CliResult<Tally>>,
);

/// What a membership event starts: for a partition acquired, its processor's tenure on a
/// thread of `scope`, numbering up to the events the partition still lacks (its PLog read
/// through `reader`); nothing for a partition lost (its processor ends on its own).
fn begin_tenure<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>, workload: &'scope Workload<'_>,
    reader: &dyn StoreReader, event: MembershipEvent,
) -> CliResult<Option<Tenure<'scope>>> {
    match event {
        MembershipEvent::Acquired {
            partition,
            sequencer,
            epoch,
            previous,
            claim,
        } => {
            let acquired = Instant::now();
            tracing::info!(
                "partition {partition}: acquired at epoch {epoch}{}",
                previous
                    .as_ref()
                    .map(|h| format!(", taken over from host {h}"))
                    .unwrap_or_default()
            );
            let done = reader.plog_bounds(partition)?.map_or(0, |b| b.1);
            let goal = workload.args.events.saturating_sub(done);
            let thread = scope.spawn(move || workload.tenure(&sequencer, &claim, goal, acquired));
            Ok(Some((partition, previous.is_some(), thread)))
        }
        MembershipEvent::Lost { partition, why } => {
            tracing::info!("partition {partition}: lost ({why})");
            Ok(None)
        }
    }
}

/// The events of the deployment's PLogs (each partition's counted up to `--events`).
fn in_plogs(reader: &dyn StoreReader, args: &RunArgs) -> CliResult<u64> {
    let mut events = 0;
    for p in 0..args.partitions {
        events += reader.plog_bounds(p)?.map_or(0, |b| b.1).min(args.events);
    }
    Ok(events)
}

/// The summary of one host among many.
fn report(
    args: &RunArgs, name: &str, opened: &Opened, etcd: &sequencer_host::store::etcd::EtcdStorage,
    ends: Vec<TenureEnd>, stats: &MembershipStats, elapsed: Duration,
) {
    let ttl = Duration::from_secs(args.lease_ttl_s);
    let mut tally = Tally::default();
    let mut served: Vec<PartitionId> = ends.iter().map(|e| e.partition).collect();
    served.sort_unstable();
    served.dedup();
    let first_appends = first_appends(&ends);
    let tenures = ends.len();
    for e in ends {
        tally.add(e.tally);
    }
    let s = etcd.stats();
    let secs = elapsed.as_secs_f64().max(1e-9);
    let rows: Vec<(String, String)> = vec![
        ("store".into(), opened.store.describe()),
        (
            "host".into(),
            format!(
                "{name}: lease TTL {} s, stops numbering {} before it can expire",
                args.lease_ttl_s,
                ms(margin(ttl))
            ),
        ),
        (
            "partitions".into(),
            format!(
                "{} in the deployment, {} events each; served here: {served:?} ({tenures} tenures)",
                args.partitions, args.events
            ),
        ),
        ("events appended here".into(), tally.events.to_string()),
        ("elapsed".into(), format!("{secs:.2} s")),
        (
            "durable events/s here".into(),
            format!("{:.0}", tally.events as f64 / secs),
        ),
        ("takeovers".into(), transfers(&stats.takeovers, "from")),
        ("first append after a takeover".into(), first_appends),
        ("handovers".into(), transfers(&stats.handovers, "to")),
        (
            "partitions lost".into(),
            format!(
                "{} refused by the epoch, {} to the lease; {} leases registered again",
                stats.epoch_losses, stats.lease_losses, stats.reregistrations
            ),
        ),
        (
            "appends refused by the epoch".into(),
            format!(
                "{} (cluster: {} appends and view writes refused for their epoch; {} not sent: not owned, or the lease may have expired)",
                tally.not_owner,
                s.epoch_refused.load(Ordering::Relaxed),
                s.not_sent.load(Ordering::Relaxed)
            ),
        ),
        (
            "actualizations".into(),
            format!(
                "{} ({} after failed appends, {} after appends refused by the offset fence)",
                tally.actualizations, tally.append_failures, tally.fenced
            ),
        ),
        (
            "check".into(),
            "run `sequencer-host check --store …` once every host has stopped".into(),
        ),
    ];
    print_table(&rows);
}

/// How long each partition taken over took to its first append, or "n/a".
fn first_appends(ends: &[TenureEnd]) -> String {
    let each: Vec<String> = (ends.iter())
        .filter(|e| e.takeover)
        .filter_map(|e| {
            (e.tally.first_append).map(|d| format!("partition {} {}", e.partition, ms(d)))
        })
        .collect();
    if each.is_empty() {
        "n/a".into()
    } else {
        each.join(", ")
    }
}

/// How many transfers `list` holds, each with its partition, the other host (`dir`: "from"
/// or "to") and how long it took.
fn transfers(list: &[sequencer_host::membership::Transfer], dir: &str) -> String {
    if list.is_empty() {
        return "0".to_string();
    }
    let each: Vec<String> = (list.iter())
        .map(|t| {
            format!(
                "partition {} {dir} {} in {}",
                t.partition,
                t.other.as_deref().unwrap_or("?"),
                ms(t.took)
            )
        })
        .collect();
    format!("{} ({})", list.len(), each.join(", "))
}

/// A flag raised by SIGTERM: the host then hands its partitions over and ends (its summary
/// printed, exit 0). Without a signal handler (it could not be installed) the flag stays
/// down and SIGTERM ends the process as before.
fn on_sigterm() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let raised = flag.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let handler = runtime.and_then(|rt| {
        let signal = rt.block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        })?;
        Ok((rt, signal))
    });
    match handler {
        Ok((rt, mut signal)) => {
            let _ = std::thread::Builder::new()
                .name("sigterm".into())
                .spawn(move || {
                    rt.block_on(signal.recv());
                    raised.store(true, Ordering::Relaxed);
                });
        }
        Err(e) => tracing::warn!(
            "cannot handle SIGTERM ({e}): a SIGTERM ends the host without handing over"
        ),
    }
    flag
}

/// Records a tenure's end: its tally, or the first error of the run.
fn ended(
    joined: std::thread::Result<CliResult<Tally>>, partition: PartitionId, takeover: bool,
    ends: &mut Vec<TenureEnd>, failed: &mut Option<CliError>,
) {
    match joined {
        Ok(Ok(tally)) => ends.push(TenureEnd {
            partition,
            tally,
            takeover,
        }),
        Ok(Err(e)) => {
            failed.get_or_insert(e);
        }
        Err(_) => {
            failed.get_or_insert(CliError("a partition thread panicked".into()));
        }
    }
}
