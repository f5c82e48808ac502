//! The sweep of a PLog shared by many hosts (one with a delete delay): the event objects left
//! under a partition's bundles, whose deletion no merger will do (a host killed within the
//! delete delay of a merge takes its queue of deletes with it), are found by listing the whole
//! partition and deleted.
//!
//! An object under a bundle goes at once when the bundle is older than the delete delay by the
//! store's own clock: the newest modification time in the same two listings stands for the
//! store's now, so no clock of this host is compared with the store's (the store's own clock
//! is assumed to run forward). Otherwise it goes after the delay from now, as a merger's would.
//! Either way no object goes sooner after its bundle than a merger's own deletes, which is
//! what the appends that skip their look rest on ([`REMOTE_DELETE_DELAY`]).
//!
//! A scan lists events from the bundles' end on only, so its cost (a new owner's first read)
//! does not grow with what is left under the bundles; the sweep runs in the merger's thread
//! instead, 2 s after it meets a partition, then every third of the delete delay.
//!
//! [`REMOTE_DELETE_DELAY`]: crate::store::objects::REMOTE_DELETE_DELAY

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::store::objects::names::{
    BUNDLES, EVENTS, event_object_at, parse_bundle_name, parse_event_name,
};
use crate::store::objects::scan::chain_end;
use crate::store::objects::shared::Shared;
use crate::store::storage::{PartitionId, StorageError};

/// How often the merger sweeps each partition it knows: a third of the delete delay.
pub(super) fn sweep_every(delete_delay: Duration) -> Duration {
    delete_delay / 3
}

/// When the merger first sweeps a partition after it meets it: soon (a host that restarts
/// again and again still sweeps), but not on a new owner's way to its first append (an
/// acquisition's scan and replay take a fraction of this).
pub(super) fn first_sweep(delete_delay: Duration) -> Duration {
    sweep_every(delete_delay).min(Duration::from_secs(2))
}

impl Shared {
    /// Deletes the event objects under partition `p`'s bundles (see the module's documentation);
    /// returns how many it deleted or queued.
    pub(super) fn sweep_leftovers(&self, p: PartitionId) -> Result<u64, StorageError> {
        // Bundles first: an event object under a bundle listed later is not under one now.
        let bundles = self.list_meta(BUNDLES, p)?;
        let events = self.list_meta(EVENTS, p)?;
        let newest = (bundles.iter().chain(&events)).map(|(_, at)| *at).max();
        let mut chain: Vec<_> = (bundles.iter())
            .filter_map(|(name, at)| parse_bundle_name(name).map(|(f, l)| (f, l, *at)))
            .collect();
        chain.sort_unstable_by_key(|&(first, last, _)| (first, last));
        let end = chain_end(chain.iter().map(|&(first, last, _)| (first, last)));
        let (mut now, mut later) = (Vec::new(), Vec::new());
        for (name, _) in &events {
            let Some(key) = parse_event_name(name).filter(|k| k.0 <= end) else {
                continue;
            };
            // The bundle holding the offset: the last one that starts at or before it.
            let i = chain.partition_point(|&(first, _, _)| first <= key.0) - 1;
            let old = newest.is_some_and(|n| {
                (n.duration_since(chain[i].2)).is_ok_and(|age| age >= self.delete_delay)
            });
            match old {
                true => now.push(event_object_at(p, key)),
                false => later.push(event_object_at(p, key)),
            }
        }
        let swept = self.delete_now(&now)? + self.delete_later(later)?;
        (self.stats.leftovers_removed).fetch_add(swept, Ordering::Relaxed);
        Ok(swept)
    }
}
