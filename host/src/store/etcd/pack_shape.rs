//! [`PackShape`]: what PLog reads have met (events per key, the largest value), to size the
//! next read so that it asks for as many keys as should hold what is wanted, within a budget.

use std::sync::atomic::{AtomicU64, Ordering};

/// The most a PLog range read asks for, in stored bytes (keys × the largest value seen), well
/// under the client's response limit.
const READ_BUDGET_BYTES: usize = 16 * 1024 * 1024;

/// What PLog reads have met, to size the next read: events per key (last read) and the
/// largest value (ever; 0 before the first read).
pub(super) struct PackShape {
    events_per_key: AtomicU64,
    largest_value: AtomicU64,
}

impl PackShape {
    /// Before any read: one event per key, the largest value not known yet.
    pub(super) fn new() -> Self {
        Self {
            events_per_key: AtomicU64::new(1),
            largest_value: AtomicU64::new(0),
        }
    }

    /// How many keys (at least one) a read should ask for to get `wanted` events: as many as
    /// should hold them, and no more than keeps the response within [`READ_BUDGET_BYTES`].
    /// Until a read has seen a value, one may be as large as a request (`max_request_bytes`).
    pub(super) fn keys_for(&self, wanted: usize, max_request_bytes: usize) -> usize {
        let per_key = self.events_per_key.load(Ordering::Relaxed).max(1);
        let key_bytes = match self.largest_value.load(Ordering::Relaxed) {
            0 => max_request_bytes as u64,
            seen => seen,
        };
        wanted
            .div_ceil(usize::try_from(per_key).unwrap_or(1))
            .min(READ_BUDGET_BYTES / usize::try_from(key_bytes).unwrap_or(usize::MAX))
            .max(1)
    }

    /// Records what a read met: `events` in `keys` keys, the largest value `largest` bytes
    /// (a read of no keys changes nothing).
    pub(super) fn met(&self, keys: usize, events: u64, largest: u64) {
        if let Some(n) = events.checked_div(keys as u64) {
            self.events_per_key.store(n.max(1), Ordering::Relaxed);
            self.largest_value.fetch_max(largest, Ordering::Relaxed);
        }
    }
}
