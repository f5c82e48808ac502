//! What every subcommand shares: the one-line error, the store option, the data directory, the
//! workload's sequences (what `check` and `inspect` fall back to for a store that records no
//! layout), and how a library refusal is said in terms of this command line.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use clap::Args;
use indicatif::ProgressStyle;
use sequencer::{Number, SeqId};
use sequencer_host::store::{DEFAULT_DATA_DIR, OpenError, OpenOptions, StoreUrl};

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

/// Where the data directory is.
#[derive(Args, Debug, Clone)]
pub struct DataArgs {
    /// The data directory.
    #[arg(long, env = "SEQUENCER_DATA", default_value = DEFAULT_DATA_DIR)]
    pub data: PathBuf,
}

/// The `--store` option: a store URL (see `sequencer_host::store::StoreUrl`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreArg(pub StoreUrl);

impl FromStr for StoreArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        s.parse().map(Self).map_err(|e: OpenError| e.to_string())
    }
}

impl fmt::Display for StoreArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The store's options from the data directory (the rest is the library's default).
pub fn open_options(data: &std::path::Path) -> OpenOptions {
    OpenOptions::new().data(data)
}

/// A library refusal said in this command line's words: the flag that changes what was
/// refused, and how to start afresh.
pub fn explain_open(e: OpenError) -> CliError {
    use sequencer_host::store::layout::LayoutRefusal;
    match e {
        OpenError::NotBuilt { url, feature } => CliError(match feature {
            "etcd" => format!(
                "store {url}: this sequencer-host was built without etcd support; rebuild it with \
                 `--features etcd` (its gRPC client needs protoc: `export PROTOC=\"$(bash scripts/protoc.sh)\"`)"
            ),
            other => format!(
                "store {url}: this sequencer-host was built without {other} support; rebuild it with `--features {other}`"
            ),
        }),
        OpenError::Layout {
            store,
            backend,
            refusal,
        } => {
            let afresh = match backend {
                "etcd" => "use an empty etcd cluster",
                "objects" if store.starts_with("object store") => "use another s3://BUCKET/PREFIX",
                _ => "start a new one with --data NEW_DIR",
            };
            let how = match &refusal {
                LayoutRefusal::Partitions { recorded, .. } => {
                    format!("resume it with --partitions {recorded}, or {afresh}")
                }
                LayoutRefusal::HoldsPartition { .. } => {
                    format!("resume it with its own --partitions, or {afresh}")
                }
                LayoutRefusal::Sequences { .. } => {
                    format!("this build's workload numbers other sequences: {afresh}")
                }
            };
            CliError(format!("{store}: {refusal}; {how}"))
        }
        OpenError::NoArchive { .. } => CliError(
            "no archive is recorded for this store: name one with --archive objects:DIR".into(),
        ),
        other => CliError(other.to_string()),
    }
}

/// The workspace kind of every workspace in the workload.
pub const KIND: u16 = 1;

/// A sequence of the workload.
pub struct SeqDef {
    /// Its id.
    pub id: SeqId,
    /// Its name (the platform's system sequences).
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

/// The first number the workload's sequence `id` hands out (what `check` assumes of a store
/// that records no layout).
pub fn initial(id: SeqId) -> Option<Number> {
    SEQS.iter().find(|s| s.id == id).map(|s| s.initial)
}

/// The name of sequence `id`: the recorded layout's, else the workload's, else `seq-ID`.
pub fn seq_name(layout: Option<&sequencer_host::Layout>, id: SeqId) -> String {
    layout
        .and_then(|l| l.name(id))
        .or_else(|| SEQS.iter().find(|s| s.id == id).map(|s| s.name))
        .map_or_else(|| format!("seq-{id}"), str::to_string)
}

/// The style of the CLI's progress bars, from an indicatif template.
pub fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// Seconds between two archive passes: 0.05 to one day.
pub fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.05..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds from 0.05 to 86400"
        )),
    }
}

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
