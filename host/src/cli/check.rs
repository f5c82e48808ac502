//! `check`: proves every partition's PLog and sequences view consistent, and that no
//! workspace's numbers stand in two partitions.

use std::collections::HashMap;
use std::process::ExitCode;

use sequencer::{Number, PLogOffset, SeqId, WsId};
#[cfg(feature = "etcd")]
use sequencer_host::EtcdStorage;
use sequencer_host::{
    DataDir, Layout, OpenMode, PlogChecker, RedbStorage, StorageError, StoredEvent,
};

use clap::Args;

use super::run::initial;
use super::{CliError, CliResult, DataArgs, StoreKind};

/// Options of `check`.
#[derive(Args, Debug, Clone)]
pub struct CheckArgs {
    /// The data directory (embedded store).
    #[command(flatten)]
    pub data: DataArgs,
    /// The store to check: embedded (redb in --data) or etcd://HOST:PORT,... (memory keeps
    /// nothing to check).
    #[arg(long, default_value = "embedded")]
    pub store: StoreKind,
}

/// The store `check` reads.
enum Checked {
    Embedded(DataDir),
    #[cfg(feature = "etcd")]
    Etcd(EtcdStorage),
}

/// How many events one read takes while checking.
const PAGE: usize = 16_384;

/// `check`: prints one line per partition; the first violation is the error.
pub fn check(args: &CheckArgs) -> CliResult<ExitCode> {
    let store = match &args.store {
        StoreKind::Embedded => {
            Checked::Embedded(DataDir::open(&args.data.data, OpenMode::Existing)?)
        }
        #[cfg(feature = "etcd")]
        StoreKind::Etcd(url) => Checked::Etcd(EtcdStorage::connect_url(url)?),
        #[cfg(not(feature = "etcd"))]
        StoreKind::Etcd(url) => return Err(super::no_etcd(url)),
        StoreKind::Memory => {
            return Err(super::CliError(
                "the memory store keeps nothing to check (use --store embedded or etcd://...)"
                    .into(),
            ));
        }
    };
    let layout = match &store {
        Checked::Embedded(_) => DataDir::read_layout(&args.data.data)?,
        #[cfg(feature = "etcd")]
        Checked::Etcd(_) => None,
    };
    if layout.is_none() {
        println!("no numbering layout recorded: checking against this build's workload sequences");
    }
    let mut owners = Owners::new(layout.as_ref());
    let mut total = 0;
    let partitions = match &store {
        Checked::Embedded(d) => d.store().partitions()?,
        #[cfg(feature = "etcd")]
        Checked::Etcd(e) => e.partitions()?,
    };
    for &p in &partitions {
        let report = match &store {
            Checked::Embedded(d) => check_partition(d.store(), p, &mut owners)?,
            #[cfg(feature = "etcd")]
            Checked::Etcd(e) => check_etcd_partition(e, p, &mut owners)?,
        };
        println!(
            "partition {p}: ok: {} events, {} numbers over {} keys, {} view rows",
            report.events, report.numbers, report.keys, report.view_rows
        );
        total += report.events;
    }
    println!(
        "check passed: {} partitions, {total} PLog events: offsets dense, no (workspace, sequence) number twice, view consistent with the PLog",
        partitions.len()
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

/// Checks every partition of `store` against `layout`; returns the number of events checked.
pub fn check_store(store: &RedbStorage, layout: Option<&Layout>) -> CliResult<u64> {
    let mut owners = Owners::new(layout);
    let mut total = 0;
    for p in store.partitions()? {
        total += check_partition(store, p, &mut owners)?.events;
    }
    Ok(total)
}

fn check_partition(
    store: &RedbStorage,
    p: u32,
    owners: &mut Owners<'_>,
) -> CliResult<sequencer_host::CheckReport> {
    check_pages(
        p,
        store.stored_next_offset(p)?,
        |from| store.events(p, from, PAGE),
        || store.view(p),
        owners,
    )
}

/// Checks partition `p` whose stored next offset is `stored_next`, reading its PLog in pages
/// (`events(from)`) and then its view.
fn check_pages(
    p: u32,
    stored_next: PLogOffset,
    events: impl Fn(PLogOffset) -> Result<Vec<StoredEvent>, StorageError>,
    view: impl FnOnce() -> Result<Vec<(WsId, SeqId, Number)>, StorageError>,
    owners: &mut Owners<'_>,
) -> CliResult<sequencer_host::CheckReport> {
    // The first number a sequence hands out: the layout's, or this build's workload's.
    let layout = owners.layout;
    let mut checker = PlogChecker::new(p, stored_next, move |seq| match layout {
        Some(l) => l.initial(seq),
        None => initial(seq),
    });
    let mut from = 1;
    loop {
        let events = events(from)?;
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
    Ok(checker.finish(&view()?)?)
}

/// Checks every partition of an etcd store; returns the number of events checked.
#[cfg(feature = "etcd")]
pub fn check_etcd(store: &EtcdStorage) -> CliResult<u64> {
    let mut owners = Owners::new(None);
    let mut total = 0;
    for p in store.partitions()? {
        total += check_etcd_partition(store, p, &mut owners)?.events;
    }
    Ok(total)
}

/// Checks one partition of an etcd store, reading its PLog in pages.
#[cfg(feature = "etcd")]
pub fn check_etcd_partition(
    store: &EtcdStorage,
    p: u32,
    owners: &mut Owners<'_>,
) -> CliResult<sequencer_host::CheckReport> {
    check_pages(
        p,
        store.stored_next_offset(p)?,
        |from| store.events(p, from, PAGE),
        || store.view(p),
        owners,
    )
}
