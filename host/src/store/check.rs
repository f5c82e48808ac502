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

use std::collections::HashMap;

use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::storage::PartitionId;

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
        })
    }
}
