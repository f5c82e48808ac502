//! `inspect`: the partitions of a store, then one partition's PLog tail and view. The store is
//! opened for reading only (any backend), so `inspect` changes nothing and works beside a live
//! run. A store that `run` would refuse as corrupt (redb's integrity check fails) is said to be
//! so, in one line and with exit status 1, before anything is shown: its tables would mislead.

use std::process::ExitCode;

use clap::Args;
use sequencer::SeqValue;

use sequencer_host::store::codec::Checksum;
use sequencer_host::store::open_reader;
use sequencer_host::{Layout, StoreReader};

use super::common::{
    CliError, CliResult, DataArgs, StoreArg, explain_open, open_options, seq_name,
};

/// Options of `inspect`.
#[derive(Args, Debug, Clone)]
pub struct InspectArgs {
    /// The data directory.
    #[command(flatten)]
    pub data: DataArgs,
    /// The store to read: redb (in --data), objects (an object store in --data),
    /// objects:DIR, objects:s3://BUCKET/PREFIX (its view in --data), or etcd://HOST:PORT,...
    #[arg(long, default_value = "redb")]
    pub store: StoreArg,
    /// The partition to show.
    #[arg(long, default_value_t = 0)]
    pub partition: u32,
    /// How many of the last PLog events to show (from --from on, if given).
    #[arg(long, default_value_t = 10)]
    pub tail: u64,
    /// Show the events from this offset on instead of the last ones (old offsets are read
    /// from the store's archive, if it has one).
    #[arg(long)]
    pub from: Option<u64>,
    /// How many rows of the sequences view to show (0: all).
    #[arg(long, default_value_t = 20)]
    pub rows: usize,
    /// Show only this workspace's view rows.
    #[arg(long)]
    pub ws: Option<u64>,
}

/// `inspect`.
pub fn inspect(args: &InspectArgs) -> CliResult<ExitCode> {
    let store = open_reader(&args.store.0, &open_options(&args.data.data)).map_err(explain_open)?;
    let store = store.as_ref();
    refuse_corrupt(store)?;
    let partitions = store.partitions()?;
    let layout = store.layout()?;
    refuse_unknown(store, layout.as_ref(), &partitions, args.partition)?;
    print_partitions(store, layout.as_ref(), &partitions)?;
    let p = args.partition;
    println!();
    let Some(damaged) = print_plog(store, layout.as_ref(), args)? else {
        println!("partition {p}: the PLog is empty");
        return Ok(ExitCode::SUCCESS);
    };
    let rows = print_view(store, layout.as_ref(), args)?;
    if rows == 0 && args.ws.is_some() {
        return Err(CliError(format!(
            "partition {p}: no view rows for workspace {}",
            args.ws.unwrap_or_default()
        )));
    }
    if let Some(offset) = damaged {
        return Err(CliError(format!(
            "{}: partition {p}: event at offset {offset} fails its checksum (`check` lists every damaged event)",
            store.describe(),
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the backend's own check of its files, as `run`'s open does (redb: its integrity check,
/// on a private copy), and refuses the store if it fails. Not beside a live run: that run
/// opened the file with the same check, and a copy would hold its commits.
fn refuse_corrupt(store: &dyn StoreReader) -> CliResult<()> {
    if store.served_by_live_run() {
        return Ok(());
    }
    match store.verify_integrity() {
        Ok(_) => Ok(()),
        Err(e) => Err(CliError(format!(
            "{e} (`run` refuses this store as corrupt; `check` says the same)"
        ))),
    }
}

/// Refuses partition `p` unless it exists: the recorded layout has it, or (a store made before
/// layouts were recorded) the store holds its PLog.
fn refuse_unknown(
    store: &dyn StoreReader, layout: Option<&Layout>, partitions: &[u32], p: u32,
) -> CliResult<()> {
    let known = match layout {
        Some(l) => p < l.partitions,
        None => partitions.contains(&p) || partitions.is_empty(),
    };
    if known {
        return Ok(());
    }
    let has = match layout {
        Some(l) => format!("partitions 0 to {}", l.partitions - 1),
        None => format!("the PLogs of partitions {partitions:?}"),
    };
    Err(CliError(format!(
        "partition {p} does not exist in {}: it has {has}",
        store.describe()
    )))
}

/// The store, its figures and layout, and a line per partition.
fn print_partitions(
    store: &dyn StoreReader, layout: Option<&Layout>, partitions: &[u32],
) -> CliResult<()> {
    println!("{}", store.describe());
    for (name, value) in store.statistics() {
        println!("{name}: {value}");
    }
    if let Some(l) = layout {
        println!(
            "numbering layout: {} partitions, workspace-to-partition {}",
            l.partitions,
            sequencer_host::store::layout::WORKSPACE_TO_PARTITION
        );
    }
    println!();
    println!(
        "{:>9}  {:>20}  {:>18}  {:>9}",
        "partition", "PLog offsets", "stored next offset", "view rows"
    );
    for &p in partitions {
        let bounds = match store.plog_bounds(p)? {
            Some((first, last)) => format!("{first}..={last}"),
            None => "empty".into(),
        };
        println!(
            "{p:>9}  {bounds:>20}  {:>18}  {:>9}",
            store.stored_next_offset(p)?,
            store.view(p)?.len()
        );
    }
    if partitions.is_empty() {
        println!("(no partitions yet)");
    }
    Ok(())
}

/// The partition's PLog events asked for (its tail, or from `--from`); `None` if its PLog is
/// empty, else the offset of the first damaged event shown, if any.
fn print_plog(
    store: &dyn StoreReader, layout: Option<&Layout>, args: &InspectArgs,
) -> CliResult<Option<Option<u64>>> {
    let p = args.partition;
    let Some((first, last)) = store.plog_bounds(p)? else {
        return Ok(None);
    };
    let from = match args.from {
        Some(from) => from.max(first),
        None => last.saturating_sub(args.tail.saturating_sub(1)).max(first),
    };
    let events = store.events(p, from, usize::try_from(args.tail).unwrap_or(usize::MAX))?;
    println!(
        "partition {p}: PLog {} ({} of {} events)",
        if args.from.is_some() {
            format!("from offset {from}")
        } else {
            "tail".into()
        },
        events.len(),
        last - first + 1
    );
    println!(
        "{:>8}  {:>9}  {:<44}  payload",
        "offset", "workspace", "numbers"
    );
    for e in &events {
        if e.checksum == Checksum::Mismatch {
            println!(
                "{:>8}  fails its checksum: damaged, never replayed",
                e.offset
            );
            continue;
        }
        let ws = e
            .values
            .first()
            .map_or_else(|| "-".into(), |v| v.key.ws.to_string());
        let payload = String::from_utf8_lossy(&e.payload);
        let shown: String = payload.chars().take(60).collect();
        let more = if payload.chars().count() > 60 {
            "…"
        } else {
            ""
        };
        println!(
            "{:>8}  {ws:>9}  {:<44}  {shown}{more} ({} bytes)",
            e.offset,
            numbers(layout, &e.values),
            e.payload.len()
        );
    }
    let damaged = events.iter().find(|e| e.checksum == Checksum::Mismatch);
    Ok(Some(damaged.map(|e| e.offset)))
}

/// The partition's sequences view (of `--ws` only, if given, at most `--rows` rows); how many
/// rows it holds.
fn print_view(
    store: &dyn StoreReader, layout: Option<&Layout>, args: &InspectArgs,
) -> CliResult<usize> {
    let p = args.partition;
    let view = store.view(p)?;
    let rows: Vec<_> = view
        .iter()
        .filter(|(ws, _, _)| args.ws.is_none_or(|w| w == *ws))
        .collect();
    let limit = if args.rows == 0 {
        rows.len()
    } else {
        args.rows
    };
    println!();
    println!(
        "partition {p}: sequences view ({} of {} rows{})",
        rows.len().min(limit),
        rows.len(),
        args.ws
            .map(|w| format!(" of workspace {w}"))
            .unwrap_or_default()
    );
    println!("{:>9}  {:<12}  {:>12}", "workspace", "sequence", "last");
    for (ws, seq, last) in rows.iter().take(limit) {
        println!("{ws:>9}  {:<12}  {last:>12}", seq_name(layout, *seq));
    }
    Ok(rows.len())
}

/// "wlog-offset=12 rec-id=30,31": an event's numbers grouped by sequence.
fn numbers(layout: Option<&Layout>, values: &[SeqValue]) -> String {
    let mut out: Vec<(u16, Vec<String>)> = Vec::new();
    for v in values {
        match out.iter_mut().find(|(s, _)| *s == v.key.seq) {
            Some((_, ns)) => ns.push(v.value.to_string()),
            None => out.push((v.key.seq, vec![v.value.to_string()])),
        }
    }
    out.iter()
        .map(|(s, ns)| format!("{}={}", seq_name(layout, *s), ns.join(",")))
        .collect::<Vec<_>>()
        .join(" ")
}
