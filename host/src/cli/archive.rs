//! `archive`: copies the PLog below what is safe to trim into bundles in an archive
//! directory, verifies them, then trims the hot store (redb or etcd); once, or every few
//! seconds. See `sequencer_host::archive_pass` and docs/STORAGE.md ("Archive and trim").

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::ProgressBar;
use sequencer_host::{
    Archive, ArchiveError, ArchivePass, ArchiveRecord, DEFAULT_ARCHIVE_BUNDLE_EVENTS, DataDir,
    OpenMode, PassProgress, Trim, absolute, archive_pass, check_lines_up,
};

use super::logging::Progress;
use super::{CliError, CliResult, DataArgs, StoreKind};

/// Where an archive is: `objects:DIR` (a local directory of bundles).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveSpec(pub PathBuf);

impl FromStr for ArchiveSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.strip_prefix("objects:") {
            Some(dir) if !dir.is_empty() => Ok(Self(PathBuf::from(dir))),
            _ => Err(format!(
                "unknown archive {s:?}: expected objects:DIR (a local directory of bundles)"
            )),
        }
    }
}

/// Options of `archive`.
#[derive(Args, Debug, Clone)]
pub struct ArchiveArgs {
    /// The data directory (embedded store).
    #[command(flatten)]
    pub data: DataArgs,
    /// The store to archive and trim: embedded (redb in --data) or etcd://HOST:PORT,...
    #[arg(long, default_value = "embedded")]
    pub store: StoreKind,
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

/// Seconds between two passes: 0.05 to one day.
pub fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.05..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds from 0.05 to 86400"
        )),
    }
}

/// The archive a command uses: the recorded one, or the one asked for (which must then be
/// the recorded one, if any). `recorded` is what the store records; the archive must exist
/// when it is recorded.
pub fn choose(
    recorded: Option<PathBuf>,
    asked: Option<&ArchiveSpec>,
) -> CliResult<(PathBuf, bool)> {
    let asked = asked.map(|a| absolute(&a.0));
    match (recorded, asked) {
        (Some(r), Some(a)) if r != a => Err(ArchiveError::Another {
            recorded: r,
            asked: a,
        }
        .into()),
        (Some(r), _) if !r.exists() => Err(ArchiveError::Missing(r).into()),
        (Some(r), _) => Ok((r, true)),
        (None, Some(a)) => Ok((a, false)),
        (None, None) => Err(CliError(
            "no archive is recorded for this store: name one with --archive objects:DIR".into(),
        )),
    }
}

/// `archive`.
pub fn archive(args: &ArchiveArgs, progress: &Progress) -> CliResult<ExitCode> {
    match &args.store {
        StoreKind::Embedded => {
            DataDir::validate(&args.data.data, OpenMode::Existing)?;
            let (root, recorded) =
                choose(ArchiveRecord::read(&args.data.data)?, args.archive.as_ref())?;
            let dir = DataDir::open_validated(&args.data.data, sequencer_host::DirState::Existing)?;
            let archive = open_for_writing(&root, args.bundle_events, dir.store())?;
            if !recorded {
                ArchiveRecord::write(&args.data.data, &root)?;
            }
            passes(args, dir.store(), &archive, progress)
        }
        #[cfg(feature = "etcd")]
        StoreKind::Etcd(url) => {
            let store = sequencer_host::EtcdStorage::connect_url(url)?;
            let (root, recorded) = choose(store.read_archive()?, args.archive.as_ref())?;
            let archive = open_for_writing(&root, args.bundle_events, &store)?;
            if !recorded {
                store.record_archive(&root)?;
            }
            passes(args, &store, &archive, progress)
        }
        #[cfg(not(feature = "etcd"))]
        StoreKind::Etcd(url) => Err(super::no_etcd(url)),
        other => Err(CliError(format!(
            "store {other}: only the embedded and etcd stores are archived (the object store keeps its PLog in bundles already)"
        ))),
    }
}

/// Opens (or creates) the archive at `root` for writing, checking that it lines up with
/// `hot` before anything is written to either.
pub fn open_for_writing(root: &Path, bundle_events: u64, hot: &dyn Trim) -> CliResult<Archive> {
    let archive = Archive::create_or_open(root, bundle_events)?;
    check_lines_up(hot, &archive)?;
    Ok(archive)
}

/// Runs one pass, or one every `--every` seconds.
fn passes(
    args: &ArchiveArgs,
    hot: &dyn Trim,
    archive: &Archive,
    progress: &Progress,
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
    hot: &dyn Trim,
    archive: &Archive,
    progress: &Progress,
) -> CliResult<ArchivePass> {
    let bar = progress.multi.add(ProgressBar::new(0));
    bar.set_style(super::run::style(
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
