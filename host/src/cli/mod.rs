//! The command line: one file per subcommand, and `common` for what they share. It parses,
//! shows progress and prints; every rule it applies is the library's.

pub mod archive;
pub mod check;
pub mod common;
pub mod component;
pub mod inspect;
pub mod logging;
pub mod run;
#[cfg(feature = "etcd")]
pub mod status;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use common::{CliResult, one_line};
use logging::Progress;

/// Runs the sequencer component under wasmtime: a command-processor workload over a durable
/// store, and tools to inspect and check that store.
#[derive(Parser, Debug)]
#[command(name = "sequencer-host", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// How much the process says.
    #[command(flatten)]
    pub output: logging::Output,
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
    Run(Box<run::RunArgs>),
    /// Show a partition's PLog tail and sequences view.
    Inspect(inspect::InspectArgs),
    /// Prove every partition's PLog and view consistent; exits 1 on a violation.
    Check(check::CheckArgs),
    /// Copy the PLog below the stored offsets into bundles in an archive, then trim the store.
    Archive(archive::ArchiveArgs),
    /// List the hosts on an etcd cluster, their leases, and each partition's owner and epoch.
    #[cfg(feature = "etcd")]
    Status(status::StatusArgs),
}

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli, progress: &Progress) -> CliResult<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(&args, progress),
        Command::Inspect(args) => inspect::inspect(&args),
        Command::Check(args) => check::check(&args),
        Command::Archive(args) => archive::archive(&args, progress),
        #[cfg(feature = "etcd")]
        Command::Status(args) => status::status(&args),
    }
}
