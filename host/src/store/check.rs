//! Proves a partition's PLog and sequences view consistent: what a crash must never break.
//!
//! Feed the PLog's events in offset order to [`PlogChecker::event`], then call
//! [`PlogChecker::finish`] with the partition's sequences view. Checked:
//! - offsets are dense from 1;
//! - each (workspace, sequence) key's numbers, in offset order, go up by exactly 1 from the
//!   sequence's initial value (so no number appears twice and none is skipped);
//! - the stored next offset is not past the PLog's end;
//! - the view is never ahead of the PLog (every row's last number is in the PLog) and never
//!   behind the stored next offset (values are durable before the offset that covers them).
//!
//! [`check_store`] first runs the backend's own check of its files
//! ([`StoreReader::verify_integrity`]: redb's integrity check, as `run`'s open runs it), then
//! that over every partition of a [`StoreReader`], and checks across partitions that no
//! workspace's numbers stand in two of them, nor in another partition than the recorded
//! [`Layout`] puts it in (a workspace moved by another partition count). It also verifies every
//! event's checksum ([`crate::store::codec`]): it lists every event that fails it (a
//! partition's numbering is checked up to its first such event, whose numbers cannot be
//! trusted, and its view is not compared) and counts the events written before checksums.

use std::collections::HashMap;
use std::fmt::Write as _;

use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::codec::Checksum;
use crate::store::layout::Layout;
use crate::store::reader::StoreReader;
use crate::store::storage::{PartitionId, StorageError};

/// A broken promise found in a partition's data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("partition {partition}: {message}")]
pub struct Violation {
    /// The partition.
    pub partition: PartitionId,
    /// What is wrong, with the offsets and keys involved.
    pub message: String,
}

/// What a check of one partition saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// PLog events.
    pub events: u64,
    /// Numbers in them.
    pub numbers: u64,
    /// Distinct (workspace, sequence) keys.
    pub keys: u64,
    /// Rows of the sequences view.
    pub view_rows: u64,
    /// Events written before events carried a checksum (nothing to verify).
    pub unchecked: u64,
    /// The offsets of the events that fail their checksum (damaged), in order.
    pub damaged: Vec<PLogOffset>,
}

#[derive(Clone, Copy)]
struct KeyState {
    last: Number,
    last_offset: PLogOffset,
    /// The largest number in events below the stored next offset.
    below_stored: Number,
}

/// Checks one partition, streaming its PLog.
pub struct PlogChecker<F> {
    partition: PartitionId,
    stored_next: PLogOffset,
    initial: F,
    next_offset: PLogOffset,
    numbers: u64,
    keys: HashMap<(WsId, SeqId), KeyState>,
}

impl<F: Fn(SeqId) -> Option<Number>> PlogChecker<F> {
    /// A checker for `partition` whose stored next offset is `stored_next` (0 if none);
    /// `initial(seq)` is the first number a sequence hands out (`None`: not checked).
    pub fn new(partition: PartitionId, stored_next: PLogOffset, initial: F) -> Self {
        Self {
            partition,
            stored_next,
            initial,
            next_offset: 1,
            numbers: 0,
            keys: HashMap::new(),
        }
    }

    fn violation(&self, message: String) -> Violation {
        Violation {
            partition: self.partition,
            message,
        }
    }

    /// The next event, in offset order.
    pub fn event(&mut self, offset: PLogOffset, values: &[SeqValue]) -> Result<(), Violation> {
        if offset != self.next_offset {
            return Err(self.violation(format!(
                "PLog offsets are not dense: offset {offset} follows {}",
                self.next_offset - 1
            )));
        }
        self.next_offset = offset + 1;
        for v in values {
            self.numbers += 1;
            let key = (v.key.ws, v.key.seq);
            let below = offset < self.stored_next;
            match self.keys.get_mut(&key) {
                Some(k) => {
                    if v.value <= k.last {
                        let (last, at) = (k.last, k.last_offset);
                        return Err(self.violation(format!(
                            "number {} of workspace {} sequence {} at offset {offset} was already issued (number {last} at offset {at})",
                            v.value, v.key.ws, v.key.seq
                        )));
                    }
                    if v.value != k.last + 1 {
                        let (last, at) = (k.last, k.last_offset);
                        return Err(self.violation(format!(
                            "workspace {} sequence {} skips from {last} (offset {at}) to {} (offset {offset})",
                            v.key.ws, v.key.seq, v.value
                        )));
                    }
                    k.last = v.value;
                    k.last_offset = offset;
                    if below {
                        k.below_stored = v.value;
                    }
                }
                None => {
                    if let Some(first) = (self.initial)(v.key.seq)
                        && v.value != first
                    {
                        return Err(self.violation(format!(
                            "workspace {} sequence {} starts at {} (offset {offset}), not at its initial value {first}",
                            v.key.ws, v.key.seq, v.value
                        )));
                    }
                    self.keys.insert(
                        key,
                        KeyState {
                            last: v.value,
                            last_offset: offset,
                            below_stored: if below { v.value } else { 0 },
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// Every (workspace, sequence) that the PLog fed so far holds numbers of.
    pub fn keys(&self) -> impl Iterator<Item = (WsId, SeqId)> + '_ {
        self.keys.keys().copied()
    }

    /// Checks the stored next offset and the view, `(workspace, sequence, last)` rows, against
    /// the PLog fed so far.
    pub fn finish(self, view: &[(WsId, SeqId, Number)]) -> Result<CheckReport, Violation> {
        if self.stored_next > self.next_offset {
            return Err(self.violation(format!(
                "the stored next offset {} is past the PLog's end (next offset {})",
                self.stored_next, self.next_offset
            )));
        }
        let mut rows: HashMap<(WsId, SeqId), Number> = HashMap::with_capacity(view.len());
        for &(ws, seq, last) in view {
            match self.keys.get(&(ws, seq)) {
                Some(k) if last <= k.last => {}
                Some(k) => {
                    return Err(self.violation(format!(
                        "the view holds {last} for workspace {ws} sequence {seq}, ahead of the PLog's {}",
                        k.last
                    )));
                }
                None => {
                    return Err(self.violation(format!(
                        "the view holds {last} for workspace {ws} sequence {seq}, which no PLog event has"
                    )));
                }
            }
            rows.insert((ws, seq), last);
        }
        for (&(ws, seq), k) in &self.keys {
            let stored = rows.get(&(ws, seq)).copied().unwrap_or(0);
            if k.below_stored > stored {
                return Err(self.violation(format!(
                    "the view holds {stored} for workspace {ws} sequence {seq}, behind the {} its events below the stored next offset {} issued",
                    k.below_stored, self.stored_next
                )));
            }
        }
        Ok(CheckReport {
            events: self.next_offset - 1,
            numbers: self.numbers,
            keys: self.keys.len() as u64,
            view_rows: view.len() as u64,
            ..CheckReport::default()
        })
    }
}

/// Why a whole-store check failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The store could not be read.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The backend's own check of its files failed ([`StoreReader::verify_integrity`]).
    #[error("{0}")]
    Integrity(StorageError),
    /// A partition broke a promise ([`PlogChecker`]).
    #[error(transparent)]
    Partition(#[from] Violation),
    /// A workspace's numbers are in a partition the recorded layout does not put it in.
    #[error(
        "partition {partition} holds numbers of workspace {ws}, which the recorded layout puts in partition {expected}"
    )]
    Misplaced {
        /// The partition holding them.
        partition: PartitionId,
        /// The workspace.
        ws: WsId,
        /// Where the layout puts it.
        expected: PartitionId,
    },
    /// Events fail their checksum: their bytes changed after they were written.
    #[error("{}", damaged_line(.0))]
    Damaged(Vec<(PartitionId, PLogOffset)>),
    /// A (workspace, sequence) has numbers in two partitions: they were issued twice.
    #[error(
        "workspace {ws} sequence {seq} has numbers in partitions {first} and {second}: its numbers were issued twice"
    )]
    InTwoPartitions {
        /// The workspace.
        ws: WsId,
        /// The sequence.
        seq: SeqId,
        /// The partition that claimed it first.
        first: PartitionId,
        /// The other one.
        second: PartitionId,
    },
}

/// Most damaged events [`CheckError::Damaged`]'s message names (the per-partition
/// reports name every one).
const DAMAGED_NAMED: usize = 20;

/// "N PLog events fail their checksum: partition P offset O, ...".
fn damaged_line(events: &[(PartitionId, PLogOffset)]) -> String {
    let mut line = format!(
        "{} PLog event{} fail{} {} checksum (damaged: never replayed): ",
        events.len(),
        if events.len() == 1 { "" } else { "s" },
        if events.len() == 1 { "s" } else { "" },
        if events.len() == 1 { "its" } else { "their" },
    );
    for (i, (p, o)) in events.iter().take(DAMAGED_NAMED).enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let _ = write!(line, "{sep}partition {p} offset {o}");
    }
    if events.len() > DAMAGED_NAMED {
        let _ = write!(line, ", and {} more", events.len() - DAMAGED_NAMED);
    }
    line
}

/// What a whole-store check proved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreCheck {
    /// Partitions checked.
    pub partitions: usize,
    /// PLog events checked, over all partitions.
    pub events: u64,
    /// What the backend's own check of its files verified, if it has one.
    pub integrity: Option<String>,
    /// Events written before events carried a checksum, over all partitions.
    pub unchecked: u64,
}

/// How many events one read takes while checking.
const CHECK_PAGE: usize = 16_384;

/// Runs the backend's own check of its files ([`StoreReader::verify_integrity`]), then checks
/// every partition of `store` ([`PlogChecker`]) and across partitions: against
/// `layout` when the store records one; otherwise each sequence's first number is
/// `fallback_initial`'s (`None`: not checked) and only the cross-partition rule applies.
/// Calls `each` with every partition's report as it is checked. Every event's checksum is
/// verified: events that fail it are listed in their partition's report (whose numbering is
/// checked only up to the first of them) and, once every partition is read, are the error
/// ([`CheckError::Damaged`]); a broken numbering rule is the error at once.
pub fn check_store(
    store: &dyn StoreReader, layout: Option<&Layout>,
    fallback_initial: impl Fn(SeqId) -> Option<Number>,
    mut each: impl FnMut(PartitionId, &CheckReport),
) -> Result<StoreCheck, CheckError> {
    let integrity = store.verify_integrity().map_err(CheckError::Integrity)?;
    let mut owners: HashMap<(WsId, SeqId), PartitionId> = HashMap::new();
    let (mut total, mut unchecked) = (0, 0);
    let mut damaged_events = Vec::new();
    let partitions = store.partitions()?;
    for &p in &partitions {
        let initial = |seq| match layout {
            Some(l) => l.initial(seq),
            None => fallback_initial(seq),
        };
        // The stored offset, then the view, then the PLog's end, in that order: the view
        // holds no number of an event past that end, and events never change once written, so
        // the events read up to it may come from later reads (a live run's later snapshots).
        let mut checker = PlogChecker::new(p, store.stored_next_offset(p)?, initial);
        let view = store.view(p)?;
        let end = store.plog_bounds(p)?.map_or(0, |(_, last)| last);
        let mut from = 1;
        let (mut read, mut old) = (0, 0);
        let mut damaged: Vec<PLogOffset> = Vec::new();
        while from <= end {
            let page = CHECK_PAGE.min(usize::try_from(end - from + 1).unwrap_or(usize::MAX));
            let events = store.events(p, from, page)?;
            let Some(last) = events.last().map(|e| e.offset) else {
                break;
            };
            for e in &events {
                read += 1;
                match e.checksum {
                    Checksum::Mismatch => damaged.push(e.offset),
                    Checksum::Absent => old += 1,
                    Checksum::Verified => {}
                }
                // Past a damaged event, numbers cannot be trusted: only checksums are checked.
                if damaged.is_empty() {
                    checker.event(e.offset, &e.values)?;
                }
            }
            from = last + 1;
        }
        unchecked += old;
        for (ws, seq) in checker.keys() {
            if let Some(l) = layout
                && l.partition_of(ws) != p
            {
                return Err(CheckError::Misplaced {
                    partition: p,
                    ws,
                    expected: l.partition_of(ws),
                });
            }
            match owners.insert((ws, seq), p) {
                Some(first) if first != p => {
                    return Err(CheckError::InTwoPartitions {
                        ws,
                        seq,
                        first,
                        second: p,
                    });
                }
                _ => {}
            }
        }
        total += read;
        if !damaged.is_empty() {
            damaged_events.extend(damaged.iter().map(|&o| (p, o)));
            let report = CheckReport {
                events: read,
                numbers: checker.numbers,
                keys: checker.keys.len() as u64,
                view_rows: 0,
                unchecked: old,
                damaged,
            };
            each(p, &report);
            continue;
        }
        let mut report = checker.finish(&view)?;
        report.unchecked = old;
        each(p, &report);
    }
    if !damaged_events.is_empty() {
        return Err(CheckError::Damaged(damaged_events));
    }
    Ok(StoreCheck {
        partitions: partitions.len(),
        events: total,
        integrity,
        unchecked,
    })
}
