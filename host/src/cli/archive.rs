//! `archive`: copies the PLog below what is safe to trim into bundles in an archive
//! directory, verifies them, then trims the hot store (redb or etcd); once, or every few
//! seconds. See `sequencer_host::store::layers::archive::archive_pass` and docs/STORAGE.md
//! ("Archive and trim").

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::ProgressBar;
use sequencer_host::store::Trim;
use sequencer_host::store::layers::archive::{
    Archive, ArchivePass, DEFAULT_ARCHIVE_BUNDLE_EVENTS, PassProgress, archive_pass,
};
use sequencer_host::store::{ArchiveUse, open};

use super::common::{
    ArchiveSpec, CliError, CliResult, DataArgs, StoreArg, explain_open, open_options, parse_secs,
    style,
};
use super::logging::Progress;

/// Options of `archive`.
#[derive(Args, Debug, Clone)]
pub struct ArchiveArgs {
    /// The data directory (redb store).
    #[command(flatten)]
    pub data: DataArgs,
    /// The store to archive and trim: redb (in --data) or etcd://HOST:PORT,...
    #[arg(long, default_value = "redb")]
    pub store: StoreArg,
    /// The archive, objects:DIR. Recorded with the store the first time; later runs of
    /// `archive`, `run`, `check` and `inspect` find it there.
    #[arg(long)]
    pub archive: Option<ArchiveSpec>,
    /// Events per bundle of a new archive (an existing one keeps its own).
    #[arg(long, default_value_t = DEFAULT_ARCHIVE_BUNDLE_EVENTS, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    pub bundle_events: u64,
    /// Archive again every SECS seconds (until interrupted, or --rounds passes) instead of
    /// once. On etcd this runs beside a live run; on redb, which one process holds, use
    /// `run --archive-every SECS`.
    #[arg(long, value_parser = parse_secs)]
    pub every: Option<f64>,
    /// With --every, stop after this many passes.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub rounds: Option<u64>,
}

/// `archive`: opens the store (redb or etcd) and its archive for writing, then runs one pass,
/// or one every `--every` seconds.
pub fn archive(args: &ArchiveArgs, progress: &Progress) -> CliResult<ExitCode> {
    let mut use_archive = ArchiveUse::default()
        .writable()
        .bundle_events(args.bundle_events);
    if let Some(ArchiveSpec(root)) = &args.archive {
        use_archive = use_archive.named(root);
    }
    let options = open_options(&args.data.data)
        .existing()
        .archive(use_archive);
    let store = open(&args.store.0, &options).map_err(explain_open)?;
    let (Some(hot), Some(archive)) = (store.trim(), store.archive()) else {
        return Err(CliError(format!(
            "store {}: only the redb and etcd stores are archived",
            args.store
        )));
    };
    passes(args, hot, archive, progress)
}

/// Runs one pass, or one every `--every` seconds.
fn passes(
    args: &ArchiveArgs, hot: &dyn Trim, archive: &Archive, progress: &Progress,
) -> CliResult<ExitCode> {
    let mut round = 0u64;
    loop {
        let started = Instant::now();
        let pass = pass_with_bar(hot, archive, progress)?;
        println!("{}", summary(&pass, archive, started.elapsed()));
        round += 1;
        let Some(every) = args.every else {
            break;
        };
        if args.rounds.is_some_and(|r| round >= r) {
            break;
        }
        std::thread::sleep(Duration::from_secs_f64(every).saturating_sub(started.elapsed()));
    }
    Ok(ExitCode::SUCCESS)
}

/// One pass with a progress bar of the events copied and trimmed.
pub fn pass_with_bar(
    hot: &dyn Trim, archive: &Archive, progress: &Progress,
) -> CliResult<ArchivePass> {
    let bar = progress.multi.add(ProgressBar::new(0));
    bar.set_style(style(
        "{prefix:>12} [{bar:40}] {pos}/{len} events copied and trimmed ({elapsed}) {msg}",
    ));
    bar.set_prefix("archiving");
    let pass = archive_pass(hot, archive, |p| match p {
        PassProgress::Planned(n) => bar.set_length(n),
        PassProgress::Archived(n) | PassProgress::Trimmed(n) => bar.inc(n),
    });
    bar.finish_and_clear();
    Ok(pass?)
}

/// One line about a pass.
pub fn summary(pass: &ArchivePass, archive: &Archive, took: Duration) -> String {
    format!(
        "archived {} events in {} bundles into {} and trimmed {} from the store ({} partitions, {:.2} s){}",
        pass.archived,
        pass.bundles,
        archive.root().display(),
        pass.trimmed,
        pass.partitions,
        took.as_secs_f64(),
        pass.after
            .as_ref()
            .map(|a| format!("; {a}"))
            .unwrap_or_default()
    )
}
