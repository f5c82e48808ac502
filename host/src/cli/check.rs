//! `check`: proves every partition's PLog and sequences view consistent, and that no
//! workspace's numbers stand in two partitions (`sequencer_host::store::check_store`).

use std::process::ExitCode;

use clap::Args;
use sequencer_host::store::{check_store, open_reader};

use super::common::{CliResult, DataArgs, StoreArg, explain_open, initial, open_options};

/// Options of `check`.
#[derive(Args, Debug, Clone)]
pub struct CheckArgs {
    /// The data directory (redb store).
    #[command(flatten)]
    pub data: DataArgs,
    /// The store to check: redb (in --data), objects (an object store in --data),
    /// objects:DIR, objects:s3://BUCKET/PREFIX (its view in --data), or etcd://HOST:PORT,...
    /// (memory keeps nothing to check).
    #[arg(long, default_value = "redb")]
    pub store: StoreArg,
    /// Beside a live run (redb): also run redb's integrity check, on a copy of the database
    /// taken while the run holds its commits: every command processor of the run waits for
    /// the copy (seconds for a large store). Without it, the check reads the run's snapshot
    /// only and never holds it.
    #[arg(long)]
    pub hold_run: bool,
}

/// `check`: prints one line per partition; the first violation is the error.
pub fn check(args: &CheckArgs) -> CliResult<ExitCode> {
    let options = open_options(&args.data.data).hold_live_run(args.hold_run);
    let store = open_reader(&args.store.0, &options).map_err(explain_open)?;
    println!("checking {}", store.describe());
    let layout = store.layout()?;
    if layout.is_none() {
        println!("no numbering layout recorded: checking against this build's workload sequences");
    }
    let checked = check_store(store.as_ref(), layout.as_ref(), initial, |p, report| {
        if !report.damaged.is_empty() {
            return println!("partition {p}: {}", damaged_offsets(&report.damaged));
        }
        println!(
            "partition {p}: ok: {} events, {} numbers over {} keys, {} view rows",
            report.events, report.numbers, report.keys, report.view_rows
        );
    })?;
    if let Some(verified) = &checked.integrity {
        println!("{verified}");
    }
    println!(
        "checksums: {} events verified, {} without a checksum (written before events carried one)",
        checked.events - checked.unchecked,
        checked.unchecked
    );
    println!(
        "check passed: {} partitions, {} PLog events: offsets dense, no (workspace, sequence) number twice, view consistent with the PLog",
        checked.partitions, checked.events
    );
    Ok(ExitCode::SUCCESS)
}

/// "N events fail their checksum (damaged): offsets A, B, ...": every one.
fn damaged_offsets(offsets: &[u64]) -> String {
    let list = offsets
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    match offsets.len() {
        1 => format!("1 event fails its checksum (damaged, never replayed): offset {list}"),
        n => format!("{n} events fail their checksum (damaged, never replayed): offsets {list}"),
    }
}
