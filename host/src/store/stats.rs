//! What a store did, as one snapshot of counters whatever the backend: each backend fills the
//! counters it keeps and leaves the others out ([`StoreStats::get`] is `None` for them).

use std::fmt;

/// One counter a backend may keep (more may be added: match with a wildcard arm).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Counter {
    /// Flusher writes applied (values and the stored offset).
    ViewWrites,
    /// Rows of the sequences view written.
    ViewRows,
    /// Durable commits (one fsync each; redb, and the object store's view).
    Commits,
    /// Nanoseconds spent committing.
    CommitNanos,
    /// PLog events appended.
    EventsAppended,
    /// Appends (batches, or parts of one) acknowledged.
    Appends,
    /// Files and directories synced (the object store on a local directory).
    Syncs,
    /// Bundles written by the object store's merger.
    BundlesWritten,
    /// Events the object store's merger bundled (their event objects deleted).
    MergedEvents,
    /// Leftovers of an interrupted merge removed when the store was opened (not a rate).
    LeftoversRemoved,
    /// Appends refused by the fence (another writer was first).
    Fenced,
    /// Transactions sent (etcd), retries included.
    Transactions,
    /// Append transactions sent (etcd), retries included.
    AppendTransactions,
    /// Append transactions that held several partitions' appends (etcd).
    CombinedTransactions,
    /// Requests retried after a transport error or timeout.
    Retries,
    /// Appends whose lost answer was settled by reading the PLog back.
    ReadBacks,
    /// View writes tried again because another writer changed the same workspaces.
    ViewConflicts,
    /// Event objects the object store's appends created (one per append part).
    ObjectsWritten,
}

impl Counter {
    /// Every counter, in the order [`StoreStats`] lists them.
    pub const ALL: [Counter; 18] = [
        Self::ViewWrites,
        Self::ViewRows,
        Self::Commits,
        Self::CommitNanos,
        Self::EventsAppended,
        Self::Appends,
        Self::Syncs,
        Self::BundlesWritten,
        Self::MergedEvents,
        Self::LeftoversRemoved,
        Self::Fenced,
        Self::Transactions,
        Self::AppendTransactions,
        Self::CombinedTransactions,
        Self::Retries,
        Self::ReadBacks,
        Self::ViewConflicts,
        Self::ObjectsWritten,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// The counter's name in words (`view writes`, `commits`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::ViewWrites => "view writes",
            Self::ViewRows => "view rows",
            Self::Commits => "commits",
            Self::CommitNanos => "commit nanoseconds",
            Self::EventsAppended => "events appended",
            Self::Appends => "appends",
            Self::Syncs => "syncs",
            Self::BundlesWritten => "bundles written",
            Self::MergedEvents => "merged events",
            Self::LeftoversRemoved => "leftovers removed",
            Self::Fenced => "appends fenced",
            Self::Transactions => "transactions",
            Self::AppendTransactions => "append transactions",
            Self::CombinedTransactions => "combined append transactions",
            Self::Retries => "retries",
            Self::ReadBacks => "read-backs",
            Self::ViewConflicts => "view conflicts",
            Self::ObjectsWritten => "event objects written",
        }
    }
}

/// A snapshot of a store's counters ([`Store::stats`](crate::store::Store::stats)); two
/// snapshots give what happened between them ([`since`](Self::since)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    values: [Option<u64>; Counter::ALL.len()],
}

impl StoreStats {
    /// A snapshot keeping the counters `kept` gives.
    pub fn of(kept: impl IntoIterator<Item = (Counter, u64)>) -> Self {
        let mut s = Self::default();
        for (c, v) in kept {
            s.values[c.index()] = Some(v);
        }
        s
    }

    /// The counter's value, `None` if the backend does not keep it.
    pub fn get(&self, counter: Counter) -> Option<u64> {
        self.values[counter.index()]
    }

    /// The counter's value, 0 if the backend does not keep it.
    pub fn count(&self, counter: Counter) -> u64 {
        self.get(counter).unwrap_or(0)
    }

    /// What happened between `before` and this snapshot (counts at open, such as
    /// [`Counter::LeftoversRemoved`], are kept as they are).
    pub fn since(&self, before: &Self) -> Self {
        let mut s = *self;
        for c in Counter::ALL {
            if c == Counter::LeftoversRemoved {
                continue;
            }
            if let (Some(now), Some(then)) = (self.get(c), before.get(c)) {
                s.values[c.index()] = Some(now.saturating_sub(then));
            }
        }
        s
    }

    /// The counters kept, in [`Counter::ALL`] order.
    pub fn kept(&self) -> impl Iterator<Item = (Counter, u64)> + '_ {
        Counter::ALL
            .into_iter()
            .filter_map(|c| self.get(c).map(|v| (c, v)))
    }
}

impl fmt::Display for StoreStats {
    /// `name value` pairs of the counters kept, comma-separated.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = (self.kept())
            .map(|(c, v)| format!("{} {v}", c.name()))
            .collect();
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_subtracts_the_counters_both_keep_and_leaves_counts_at_open() {
        let before = StoreStats::of([(Counter::Commits, 10), (Counter::LeftoversRemoved, 2)]);
        let after = StoreStats::of([
            (Counter::Commits, 25),
            (Counter::LeftoversRemoved, 2),
            (Counter::Syncs, 4),
        ]);
        let d = after.since(&before);
        assert_eq!(d.get(Counter::Commits), Some(15));
        assert_eq!(d.get(Counter::LeftoversRemoved), Some(2));
        assert_eq!(d.get(Counter::Syncs), Some(4));
        assert_eq!(d.get(Counter::Transactions), None);
        assert_eq!(d.count(Counter::Transactions), 0);
    }

    #[test]
    fn every_counter_has_its_own_place() {
        for (i, c) in Counter::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i, "{c:?}");
        }
    }
}
