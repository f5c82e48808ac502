//! `run`: the command-processor workload, in five named steps: open the store (`open`),
//! recover every partition from the PLog, run the workload, check what was stored, report.
//! With `--host-name` (etcd) the host serves only the partitions it owns (`member`).
//!
//! One thread per partition plays a command processor that appends its events in batches
//! (see `workload`); the store, its layout and its archive are the library's
//! (`sequencer_host::store::open`).

mod args;
mod endpoint;
#[cfg(feature = "etcd")]
mod member;
mod open;
mod report;
mod workload;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use sequencer::Params;
use sequencer_host::store::Trim;
use sequencer_host::store::layers::archive::{Archive, ArchivePass, archive_pass};
use sequencer_host::store::{Counter, Store, StoreStats, WarnLimiter};
use sequencer_host::{Driver, MonotonicClock, PartitionSequencer, Runtime, Status};

pub use args::RunArgs;

use super::common::{CliError, CliResult, initial, style};
use super::logging::Progress;
use args::params;
use open::{Opened, open_store};
use report::{Ran, Resumed, report, write_latency_log};
use workload::{Tally, WARN_INTERVAL, Workload, host, stop_if_stuck};

/// `run`, in its named steps: open the store, recover every partition from the PLog, run the
/// workload, check what was stored, report.
pub fn run(args: &RunArgs, progress: &Progress) -> CliResult<ExitCode> {
    #[cfg(feature = "etcd")]
    if let Some(name) = &args.host_name {
        return member::run_member(args, name, progress);
    }
    let opened = open_store(args)?;
    let recovered = recover(args, &opened, progress)?;
    let ran = run_workload(args, &opened, &recovered, progress)?;
    if let Some(path) = &args.latency_log {
        write_latency_log(path, &ran.tally)?;
    }
    let checked = check_stored(&opened, recovered.stop())?;
    report(args, &opened.store, &recovered.resumed, ran, checked);
    Ok(ExitCode::SUCCESS)
}

/// Every partition's sequencer, actualized from the PLog.
struct Recovered {
    driver: Driver,
    seqs: Vec<PartitionSequencer>,
    resumed: Resumed,
}

impl Recovered {
    /// Lets the flusher catch up, then closes every sequencer and stops the driver.
    fn stop(&self) -> &Self {
        self.driver.shutdown(&self.seqs);
        self
    }
}

/// The step that recovers: opens every partition's sequencer and waits (with a progress bar,
/// bounded) until each has replayed its PLog from the stored next offset.
fn recover(args: &RunArgs, opened: &Opened, progress: &Progress) -> CliResult<Recovered> {
    let Opened {
        store,
        runtime,
        read_ahead,
        storage,
        ..
    } = opened;
    // What a restart has to replay: from the stored next offset to the PLog's end.
    let mut to_replay = 0u64;
    let mut resumed_events = 0u64;
    let reader = store.reader();
    for p in 0..args.partitions {
        if let Some((_, last)) = reader.plog_bounds(p)? {
            to_replay += (last + 1).saturating_sub(reader.stored_next_offset(p)?.max(1));
            resumed_events += last;
        }
    }

    let clock = Arc::new(MonotonicClock::new());
    let driver = args.driver(storage.clone(), clock, opened.metrics.as_ref());
    let params = params();
    let actualize_started = Instant::now();
    let seqs = open_partitions(&driver, runtime, &params, args.partitions)?;
    opened.metrics.iter().for_each(|m| m.set_opening(false));
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
        resumed: Resumed {
            events: resumed_events,
            replayed: replayed_events,
            took: actualize_time,
        },
    })
}

/// The step that runs the workload: one command-processor thread per partition.
fn run_workload(
    args: &RunArgs, opened: &Opened, recovered: &Recovered, progress: &Progress,
) -> CliResult<Ran> {
    let Opened {
        store,
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
    let merge_bar = MergeBar::new(store, progress);
    let actualizations = AtomicU64::new(0);
    let warnings = WarnLimiter::new(WARN_INTERVAL);
    let workload = Workload {
        args,
        storage,
        read_ahead,
        events_bar: &events_bar,
        actualizations: &actualizations,
        shared: store.shared(),
        warnings: &warnings,
    };
    let counts_before = store.stats();
    let reads_before = read_ahead.counts();
    let tail_before = store.own_tail().map(|t| t.counts());
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
        let archiver = match (args.archive_every, store.archive(), store.trim()) {
            (Some(every), Some(a), Some(hot)) => {
                let stop = &stop_archiving;
                Some(scope.spawn(move || archive_while_running(hot, a, every, stop)))
            }
            _ => None,
        };
        while !handles.iter().all(|h| h.is_finished()) {
            let rate = events_bar.position() as f64 / started.elapsed().as_secs_f64().max(1e-3);
            let now = store.stats().since(&counts_before);
            events_bar.set_message(running_message(rate, &actualizations, &now));
            if let Some(m) = &merge_bar {
                m.update();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        stop_archiving.store(true, Ordering::Relaxed);
        let archived = archiver.map(|h| joined(h, "the archive thread"));
        let results = handles
            .into_iter()
            .map(|h| joined(h, "a partition thread"))
            .collect();
        (results, archived)
    });
    let archived = archived.transpose()?;
    let elapsed = started.elapsed();
    // A partition's failure is the run's cause: it goes out before the merger is drained
    // (which fails too when the store went away).
    let results: Vec<_> = results.into_iter().collect::<CliResult<_>>()?;
    if let Some(m) = merge_bar {
        m.drain()?;
    }
    let during = store.stats().since(&counts_before);
    let reads = read_ahead.counts().since(&reads_before);
    let tail = (store.own_tail().zip(tail_before)).map(|(t, before)| t.counts().since(&before));
    events_bar.finish_and_clear();
    let mut tally = Tally::default();
    for r in results {
        tally.add(r);
    }

    Ok(Ran {
        tally,
        elapsed,
        during,
        reads,
        tail,
        archived,
    })
}

/// The running bar's message: events per second, actualizations, and the store's flushes and
/// commits or merged bundles so far.
fn running_message(rate: f64, actualizations: &AtomicU64, now: &StoreStats) -> String {
    let mut msg = format!(
        "{rate:.0}/s, actualizations {}",
        actualizations.load(Ordering::Relaxed)
    );
    if let Some(views) = now.get(Counter::ViewWrites) {
        msg.push_str(&format!(", flushes {views}"));
    }
    match (now.get(Counter::BundlesWritten), now.get(Counter::Commits)) {
        (Some(bundles), _) => msg.push_str(&format!(", bundles merged {bundles}")),
        (None, Some(commits)) => msg.push_str(&format!(", commits {commits}")),
        (None, None) => {}
    }
    msg
}

/// What the thread `h` (`what`, for the error if it panicked) returned.
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, CliResult<T>>, what: &str) -> CliResult<T> {
    h.join()
        .unwrap_or_else(|_| Err(CliError(format!("{what} panicked"))))
}

/// The progress bar of an object store's merger: bundles written since the run began out
/// of those written plus those owed (complete ranges of one-event objects not yet merged).
struct MergeBar<'a> {
    plog: &'a sequencer_host::store::objects::ObjectPlog,
    bar: ProgressBar,
    written_before: u64,
}
impl<'a> MergeBar<'a> {
    /// A bar for an object store's merger; `None` for other stores.
    fn new(store: &'a Store, progress: &Progress) -> Option<Self> {
        let plog = store.object_plog()?;
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
    hot: &dyn Trim, archive: &Archive, every: f64, stop: &AtomicBool,
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

/// The step that checks: proves the whole store (every partition, and across partitions, its
/// archive included) against the run's layout once every sequencer has stopped; returns the
/// events checked.
fn check_stored(opened: &Opened, _stopped: &Recovered) -> CliResult<u64> {
    let checked = opened.store.check(initial, |_, _| {})?;
    Ok(checked.events)
}

fn open_partitions(
    driver: &Driver, runtime: &Runtime, params: &Params, partitions: u32,
) -> CliResult<Vec<PartitionSequencer>> {
    (0..partitions)
        .map(|p| driver.open(runtime, p, params).map_err(host))
        .collect()
}
