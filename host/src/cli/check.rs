//! `check`: proves every partition's PLog and sequences view consistent, and that no
//! workspace's numbers stand in two partitions.

use std::collections::HashMap;
use std::process::ExitCode;

use sequencer::{SeqId, WsId};
use sequencer_host::{CheckReport, Layout, PartitionId, PlogChecker, StoreReader};

use clap::Args;

use super::run::initial;
use super::{CliError, CliResult, DataArgs, StoreKind};

/// Options of `check`.
#[derive(Args, Debug, Clone)]
pub struct CheckArgs {
    /// The data directory (embedded store).
    #[command(flatten)]
    pub data: DataArgs,
    /// The store to check: embedded (redb in --data), objects (an object store in --data),
    /// objects:DIR, objects:s3://BUCKET/PREFIX (its view in --data), or etcd://HOST:PORT,...
    /// (memory keeps nothing to check).
    #[arg(long, default_value = "embedded")]
    pub store: StoreKind,
}

/// How many events one read takes while checking.
const PAGE: usize = 16_384;

/// `check`: prints one line per partition; the first violation is the error.
pub fn check(args: &CheckArgs) -> CliResult<ExitCode> {
    let store = super::open_reader(&args.store, &args.data.data)?;
    println!("checking {}", store.describe());
    let layout = store.layout()?;
    if layout.is_none() {
        println!("no numbering layout recorded: checking against this build's workload sequences");
    }
    let (partitions, total) = check_store(store.as_ref(), layout.as_ref(), |p, report| {
        println!(
            "partition {p}: ok: {} events, {} numbers over {} keys, {} view rows",
            report.events, report.numbers, report.keys, report.view_rows
        );
    })?;
    println!(
        "check passed: {partitions} partitions, {total} PLog events: offsets dense, no (workspace, sequence) number twice, view consistent with the PLog"
    );
    Ok(ExitCode::SUCCESS)
}

/// Which partition holds the numbers of each (workspace, sequence), and which one the layout
/// puts each workspace in: a key found in two partitions had numbers issued twice, even when
/// each partition alone is consistent (a workspace moved by another partition count).
pub struct Owners<'a> {
    layout: Option<&'a Layout>,
    of: HashMap<(WsId, SeqId), u32>,
}

impl<'a> Owners<'a> {
    /// Owners checked against `layout` (if recorded) and against each other.
    pub fn new(layout: Option<&'a Layout>) -> Self {
        Self {
            layout,
            of: HashMap::new(),
        }
    }

    /// Partition `p` holds numbers of `key`.
    fn claim(&mut self, p: u32, (ws, seq): (WsId, SeqId)) -> CliResult<()> {
        if let Some(l) = self.layout
            && l.partition_of(ws) != p
        {
            return Err(CliError(format!(
                "partition {p} holds numbers of workspace {ws}, which the recorded layout puts in partition {}",
                l.partition_of(ws)
            )));
        }
        match self.of.insert((ws, seq), p) {
            Some(q) if q != p => Err(CliError(format!(
                "workspace {ws} sequence {seq} has numbers in partitions {q} and {p}: its numbers were issued twice"
            ))),
            _ => Ok(()),
        }
    }
}

/// Checks every partition of `store` against `layout` (this build's workload sequences if
/// `None`), and across partitions; calls `each` with every partition's report. Returns how
/// many partitions and PLog events it checked.
pub fn check_store(
    store: &dyn StoreReader,
    layout: Option<&Layout>,
    mut each: impl FnMut(PartitionId, &CheckReport),
) -> CliResult<(usize, u64)> {
    let mut owners = Owners::new(layout);
    let mut total = 0;
    let partitions = store.partitions()?;
    for &p in &partitions {
        let report = check_partition(store, p, &mut owners)?;
        each(p, &report);
        total += report.events;
    }
    Ok((partitions.len(), total))
}

/// Checks partition `p`: its PLog read in pages, then its view.
fn check_partition(
    store: &dyn StoreReader,
    p: PartitionId,
    owners: &mut Owners<'_>,
) -> CliResult<CheckReport> {
    // The first number a sequence hands out: the layout's, or this build's workload's.
    let layout = owners.layout;
    let mut checker = PlogChecker::new(p, store.stored_next_offset(p)?, move |seq| match layout {
        Some(l) => l.initial(seq),
        None => initial(seq),
    });
    let mut from = 1;
    loop {
        let events = store.events(p, from, PAGE)?;
        let Some(last) = events.last().map(|e| e.offset) else {
            break;
        };
        for e in &events {
            checker.event(e.offset, &e.values)?;
        }
        from = last + 1;
    }
    for key in checker.keys() {
        owners.claim(p, key)?;
    }
    Ok(checker.finish(&store.view(p)?)?)
}
