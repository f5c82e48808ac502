//! The canonical names of the PLog's objects, and the reading of names found by a listing.
//!
//! | object                                   | holds                                          |
//! |------------------------------------------|------------------------------------------------|
//! | `events/<partition:05>/<first:020>`      | the events of one append part from `first` on, their hashes, the hash before them and the writer's id (format 1: one event); or a takeover mark: no events, the successor's epoch in its writer id |
//! | `events/<partition:05>/<first:020>_<epoch:020>` | the same, after the takeover mark of `epoch` at `first`: the next object from `first` on |
//! | `bundles/<partition:05>/<first:020>-<last:020>` | the events `first..=last`, a bundle of `bundle_events` events aligned on multiples of it |
//!
//! A name depends on the offsets it holds alone (an event object's on its first), so two
//! writers that continue the PLog from one offset race for one name (the fence). A takeover
//! mark holds that name for its epoch: the object after it is named by the mark's epoch too,
//! so a stale owner's next create collides with the mark, and the successor's does not.

use sequencer::PLogOffset;

use crate::store::storage::PartitionId;

/// The folder of the event objects.
pub(crate) const EVENTS: &str = "events";
/// The folder of the bundles.
pub(crate) const BUNDLES: &str = "bundles";

/// An event object's name in its partition: its first offset, and the epoch of the takeover
/// mark it follows at that offset (`None`: the plain name). Ordered as the walk meets them.
pub(crate) type EventKey = (PLogOffset, Option<u64>);

/// The name of the event object whose first event is at `offset` in `partition`.
pub fn event_object(partition: PartitionId, offset: PLogOffset) -> String {
    format!("{EVENTS}/{partition:05}/{offset:020}")
}

/// The name of the event object `key` of `partition`: [`event_object`]'s, or after a
/// takeover mark `<offset>_<epoch>`.
pub(crate) fn event_object_at(partition: PartitionId, (offset, after): EventKey) -> String {
    match after {
        None => event_object(partition, offset),
        Some(epoch) => format!("{EVENTS}/{partition:05}/{offset:020}_{epoch:020}"),
    }
}

/// The name of the bundle holding `first..=last` of `partition`.
pub fn bundle_object(partition: PartitionId, first: PLogOffset, last: PLogOffset) -> String {
    format!("{BUNDLES}/{partition:05}/{first:020}-{last:020}")
}

/// The folder of `partition` under `top` ([`EVENTS`] or [`BUNDLES`]).
pub(crate) fn partition_dir(top: &str, partition: PartitionId) -> String {
    format!("{top}/{partition:05}")
}

/// The partition a folder under `events/` or `bundles/` is named after, `None` if it is none.
pub(crate) fn parse_partition(folder: &str) -> Option<PartitionId> {
    folder.parse().ok()
}

/// The key an event object's file name (in its partition's folder) names, `None` if it is
/// not such a name.
pub(crate) fn parse_event_name(name: &str) -> Option<EventKey> {
    let number = |n: &str| (n.len() == 20).then(|| n.parse::<u64>().ok()).flatten();
    let (first, after) = match name.split_once('_') {
        Some((first, epoch)) => (number(first)?, Some(number(epoch)?)),
        None => (number(name)?, None),
    };
    (first > 0).then_some((first, after))
}

/// The offsets `(first, last)` a bundle's file name (in its partition's folder) names, `None`
/// if it is not such a name.
pub(crate) fn parse_bundle_name(name: &str) -> Option<(PLogOffset, PLogOffset)> {
    name.split_once('-')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_as_the_offsets_they_were_made_of() {
        let event = event_object(3, 42);
        assert_eq!(event, "events/00003/00000000000000000042");
        let (dir, file) = event.rsplit_once('/').expect("a folder");
        assert_eq!(dir, partition_dir(EVENTS, 3));
        assert_eq!(parse_event_name(file), Some((42, None)));
        let after = event_object_at(3, (42, Some(7)));
        assert_eq!(
            after,
            "events/00003/00000000000000000042_00000000000000000007"
        );
        let file = after.rsplit_once('/').expect("a folder").1;
        assert_eq!(parse_event_name(file), Some((42, Some(7))));
        assert_eq!(event_object_at(3, (42, None)), event);
        let bundle = bundle_object(3, 1, 1024);
        let file = bundle.rsplit_once('/').expect("a folder").1;
        assert_eq!(parse_bundle_name(file), Some((1, 1024)));
        assert_eq!(parse_partition("00003"), Some(3));
    }

    #[test]
    fn names_that_are_not_the_plogs_are_not_read() {
        assert_eq!(parse_event_name("42"), None);
        assert_eq!(parse_event_name("00000000000000000000"), None);
        assert_eq!(parse_event_name("0000000000000000004x"), None);
        assert_eq!(parse_event_name("00000000000000000042_7"), None);
        assert_eq!(parse_event_name("00000000000000000042_"), None);
        assert_eq!(parse_bundle_name("00000000000000000001"), None);
        assert_eq!(parse_partition("tmp"), None);
    }
}
