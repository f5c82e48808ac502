//! Where each partition's PLog was last seen to end ([`PlogEnds`], held by the store's handle):
//! the hint `plog_end.rs` reads the PLog's end from.

use std::sync::Mutex;

use hashbrown::HashMap;
use sequencer::PLogOffset;

use crate::store::storage::PartitionId;

/// For each partition, an offset that the PLog's last key was seen at or after (0: the PLog
/// was seen empty or short, read it whole); none before a first read.
#[derive(Default)]
pub(super) struct PlogEnds(Mutex<HashMap<PartitionId, PLogOffset>>);

impl PlogEnds {
    /// The hint of `partition`, if any.
    pub(super) fn hint(&self, partition: PartitionId) -> Option<PLogOffset> {
        let ends = self.0.lock().unwrap_or_else(|e| e.into_inner());
        ends.get(&partition).copied()
    }

    /// `partition`'s PLog has a key at or after `last` (never moves the hint back).
    pub(super) fn saw(&self, partition: PartitionId, last: PLogOffset) {
        let mut ends = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let end = ends.entry(partition).or_insert(0);
        *end = (*end).max(last);
    }

    /// A hinted read found no key at or after the hint: the PLog is not what it was.
    pub(super) fn forget(&self, partition: PartitionId) {
        let mut ends = self.0.lock().unwrap_or_else(|e| e.into_inner());
        ends.remove(&partition);
    }
}
