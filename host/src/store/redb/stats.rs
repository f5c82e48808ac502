//! What the store did, for reports ([`StoreStats`], and [`StoreCounts`] read from it).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of what the store did, for reports.
#[derive(Debug, Default)]
pub struct StoreStats {
    /// Transactions committed by the writer (each one fsync with redb's 1-phase commit).
    pub commits: AtomicU64,
    /// PLog events appended.
    pub appends: AtomicU64,
    /// Appends (batches of events, one or many) committed.
    pub append_writes: AtomicU64,
    /// Flusher writes (values and next offset) applied.
    pub writes: AtomicU64,
    /// View rows written by flusher writes.
    pub values_written: AtomicU64,
    /// Nanoseconds the writer spent in `commit`.
    pub commit_nanos: AtomicU64,
    /// The I/O error after which redb takes no more writes (see
    /// [`Storage::failure`](crate::Storage::failure)).
    failure: Mutex<Option<String>>,
}

/// A snapshot of [`StoreStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreCounts {
    /// Transactions committed.
    pub commits: u64,
    /// PLog events appended.
    pub appends: u64,
    /// Appends (batches of events) committed.
    pub append_writes: u64,
    /// Flusher writes applied.
    pub writes: u64,
    /// View rows written.
    pub values_written: u64,
    /// Nanoseconds spent committing.
    pub commit_nanos: u64,
}

impl StoreStats {
    /// The counters now.
    pub(super) fn snapshot(&self) -> StoreCounts {
        StoreCounts {
            commits: self.commits.load(Ordering::Relaxed),
            appends: self.appends.load(Ordering::Relaxed),
            append_writes: self.append_writes.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            values_written: self.values_written.load(Ordering::Relaxed),
            commit_nanos: self.commit_nanos.load(Ordering::Relaxed),
        }
    }

    /// The I/O error after which the store takes no more writes, if one happened.
    pub(super) fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Records `cause` as that error.
    pub(super) fn failed(&self, cause: String) {
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(cause);
    }
}
