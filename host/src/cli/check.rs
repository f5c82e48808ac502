//! `check`: proves every partition's PLog and sequences view consistent.

use std::process::ExitCode;

use sequencer_host::{DataDir, OpenMode, PlogChecker, RedbStorage};

use super::run::initial;
use super::{CliResult, DataArgs};

/// How many events one read takes while checking.
const PAGE: usize = 16_384;

/// `check`: prints one line per partition; the first violation is the error.
pub fn check(args: &DataArgs) -> CliResult<ExitCode> {
    let dir = DataDir::open(&args.data, OpenMode::Existing)?;
    let store = dir.store();
    let mut total = 0;
    let partitions = store.partitions()?;
    for &p in &partitions {
        let report = check_partition(store, p)?;
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

/// Checks every partition of `store`; returns the number of events checked.
pub fn check_store(store: &RedbStorage) -> CliResult<u64> {
    let mut total = 0;
    for p in store.partitions()? {
        total += check_partition(store, p)?.events;
    }
    Ok(total)
}

fn check_partition(store: &RedbStorage, p: u32) -> CliResult<sequencer_host::CheckReport> {
    let mut checker = PlogChecker::new(p, store.stored_next_offset(p)?, initial);
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
    Ok(checker.finish(&store.view(p)?)?)
}
