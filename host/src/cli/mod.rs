//! The command line: arguments, the store choice, and the subcommands.

pub mod archive;
pub mod check;
pub mod component;
pub mod inspect;
pub mod logging;
pub mod run;

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand};
use sequencer_host::{ArchiveRecord, DataDir, StoreReader, WithArchive, open_recorded};

use logging::Progress;

/// The default data directory (relative to the working directory).
pub const DEFAULT_DATA_DIR: &str = "sequencer-data";

/// Runs the sequencer component under wasmtime: a command-processor workload over a durable
/// store, and tools to inspect and check that store.
#[derive(Parser, Debug)]
#[command(name = "sequencer-host", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// More logging (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Warnings and errors only.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// No progress bars (they are hidden anyway when stderr is not a terminal).
    #[arg(long, global = true)]
    pub no_progress: bool,
}

impl Cli {
    /// The command line of this process, parsed (clap prints help, the version or a usage error
    /// and exits). Every subcommand's `--version` names the program, as the top level's does:
    /// `sequencer-host 0.1.0`, not `sequencer-host-run 0.1.0`.
    pub fn parse_args() -> Self {
        use clap::{CommandFactory, FromArgMatches};
        let command = Self::command().mut_subcommands(|sub| sub.display_name("sequencer-host"));
        let matches = command.get_matches();
        Self::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the command-processor workload (resumes an existing data directory).
    Run(run::RunArgs),
    /// Show a partition's PLog tail and sequences view.
    Inspect(inspect::InspectArgs),
    /// Prove every partition's PLog and view consistent; exits 1 on a violation.
    Check(check::CheckArgs),
    /// Copy the PLog below the stored offsets into bundles in an archive, then trim the store.
    Archive(archive::ArchiveArgs),
}

/// Where the data directory is.
#[derive(Args, Debug, Clone)]
pub struct DataArgs {
    /// The data directory.
    #[arg(long, env = "SEQUENCER_DATA", default_value = DEFAULT_DATA_DIR)]
    pub data: PathBuf,
}

/// Which storage backend to run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// redb in the data directory: durable.
    Embedded,
    /// In memory: nothing is kept after the process ends.
    Memory,
    /// An etcd cluster, `etcd://HOST:PORT,HOST:PORT,...`: shared by many hosts, fenced appends.
    Etcd(String),
    /// The PLog on object storage in a local directory (`objects`: the one `--data` names;
    /// `objects:DIR`: DIR), one object per event merged into bundles, the view in redb beside it.
    Objects(Option<PathBuf>),
    /// The PLog on S3, `objects:s3://BUCKET/PREFIX` (feature `s3`; configured from the
    /// `AWS_*` environment variables), the view in redb in the `--data` directory.
    ObjectsS3(String),
}

impl StoreKind {
    /// The directory of an object store: its own, or `data`.
    pub fn objects_root(&self, data: &Path) -> Option<PathBuf> {
        match self {
            Self::Objects(dir) => Some(dir.clone().unwrap_or_else(|| data.to_path_buf())),
            // The view (and the layout) are in the data directory; the PLog is on S3.
            Self::ObjectsS3(_) => Some(data.to_path_buf()),
            _ => None,
        }
    }
}

impl FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "embedded" | "redb" => Ok(Self::Embedded),
            "memory" => Ok(Self::Memory),
            "objects" => Ok(Self::Objects(None)),
            _ if s.starts_with("etcd://") => Ok(Self::Etcd(s.to_string())),
            _ if s.starts_with("objects:s3://") => {
                Ok(Self::ObjectsS3(s["objects:".len()..].into()))
            }
            _ if s.starts_with("objects:") && s.len() > "objects:".len() => {
                Ok(Self::Objects(Some(PathBuf::from(&s["objects:".len()..]))))
            }
            _ => Err(format!(
                "unknown store {s:?}: expected embedded, memory, objects, objects:DIR, objects:s3://BUCKET/PREFIX or etcd://HOST:PORT"
            )),
        }
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Embedded => f.write_str("embedded"),
            Self::Memory => f.write_str("memory"),
            Self::Etcd(url) => f.write_str(url),
            Self::Objects(None) => f.write_str("objects"),
            Self::Objects(Some(dir)) => write!(f, "objects:{}", dir.display()),
            Self::ObjectsS3(url) => write!(f, "objects:{url}"),
        }
    }
}

/// A failed subcommand: one line saying what and where.
#[derive(Debug)]
pub struct CliError(pub String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(e: E) -> Self {
        Self(e.to_string())
    }
}

/// The result of a subcommand.
pub type CliResult<T> = Result<T, CliError>;

/// Makes a message one line: line breaks become "; ".
pub fn one_line(s: &str) -> String {
    s.split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The refusal of an `etcd://` store by a build without the `etcd` feature.
#[cfg(not(feature = "etcd"))]
pub fn no_etcd(url: &str) -> CliError {
    CliError(format!(
        "store {url}: this sequencer-host was built without etcd support; rebuild it with \
         `--features etcd` (its gRPC client needs protoc: `export PROTOC=\"$(bash scripts/protoc.sh)\"`)"
    ))
}

/// The refusal of an `objects:s3://` store by a build without the `s3` feature.
#[cfg(not(feature = "s3"))]
pub fn no_s3(url: &str) -> CliError {
    CliError(format!(
        "store objects:{url}: this sequencer-host was built without S3 support; rebuild it with `--features s3`"
    ))
}

/// Opens the store `kind` for reading only (the embedded one in the data directory `data`):
/// what `check` and `inspect` read, leaving the store's bytes unchanged.
pub fn open_reader(kind: &StoreKind, data: &Path) -> CliResult<Box<dyn StoreReader>> {
    match kind {
        StoreKind::Embedded => {
            DataDir::validate(data, sequencer_host::OpenMode::Existing)?;
            let archive = open_recorded(ArchiveRecord::read(data)?)?;
            let reader = DataDir::open_read_only(data)?;
            Ok(Box::new(WithArchive::new(reader, archive)?))
        }
        #[cfg(feature = "etcd")]
        StoreKind::Etcd(url) => {
            let store = sequencer_host::EtcdStorage::connect_url(url)?;
            let archive = open_recorded(store.read_archive()?)?;
            Ok(Box::new(WithArchive::new(store, archive)?))
        }
        #[cfg(not(feature = "etcd"))]
        StoreKind::Etcd(url) => Err(no_etcd(url)),
        StoreKind::Objects(_) => {
            let root = kind
                .objects_root(data)
                .unwrap_or_else(|| data.to_path_buf());
            Ok(Box::new(sequencer_host::ObjectReader::open(&root)?))
        }
        #[cfg(feature = "s3")]
        StoreKind::ObjectsS3(url) => {
            Ok(Box::new(sequencer_host::ObjectReader::open_s3(data, url)?))
        }
        #[cfg(not(feature = "s3"))]
        StoreKind::ObjectsS3(url) => Err(no_s3(url)),
        StoreKind::Memory => Err(CliError(
            "the memory store keeps nothing to read (use --store embedded or etcd://...)".into(),
        )),
    }
}

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli, progress: &Progress) -> CliResult<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(&args, progress),
        Command::Inspect(args) => inspect::inspect(&args),
        Command::Check(args) => check::check(&args),
        Command::Archive(args) => archive::archive(&args, progress),
    }
}
