//! Whether an archive and a hot store make one dense PLog ([`check_lines_up`]): the hot store
//! starts at most one past the archive's end, and an event both hold is the same in both.

use sequencer::PLogOffset;

use crate::store::archive_record::ArchiveError;
use crate::store::objects::bundle_object;
use crate::store::reader::{StoreReader, partitions_of};
use crate::store::storage::PartitionId;

use super::directory::Archive;

/// Whether a partition's hot PLog (`first..=last`, or none) and its archive (`1..=end`)
/// make one dense PLog: the hot store must start at most one past the archive's end.
pub(super) fn lines_up(
    archive: &Archive, p: PartitionId, hot: Option<(PLogOffset, PLogOffset)>, end: PLogOffset,
) -> Result<(), ArchiveError> {
    let bad = |detail: String| ArchiveError::DoesNotLineUp {
        archive: archive.root.clone(),
        partition: p,
        detail,
    };
    match hot {
        Some((first, _)) if first > end + 1 => {
            let (bf, bl) = (end + 1, end + archive.bundle_events());
            Err(bad(format!(
                "the store's PLog starts at offset {first}, but the archive holds it only up to {end}: offsets {}..={} are in neither (is {} missing?)",
                end + 1,
                first - 1,
                bundle_object(p, bf, bl)
            )))
        }
        None if end > 0 => Err(bad(format!(
            "the archive holds offsets 1..={end}, but the store has no PLog for it: not this store's archive"
        ))),
        _ => Ok(()),
    }
}

/// How often [`check_lines_up`] reads a partition's bounds again when an archive pass beside
/// it trimmed the event it was about to compare; each retry means another pass ran meanwhile,
/// so this many in a row is a store trimmed faster than it can be read, refused by name.
const TRIMMED_UNDER_CHECK_ATTEMPTS: usize = 8;

/// Refuses (naming the partition and offsets) an archive that does not line up with the
/// hot store: a gap between the archive's end and the store's first event, an archive of a
/// partition the store does not have, or an event both hold with different contents (one
/// compared per partition here; every one by `check`).
pub fn check_lines_up(hot: &dyn StoreReader, a: &Archive) -> Result<(), ArchiveError> {
    for p in partitions_of(hot.partitions()?, a.partitions()) {
        let mut attempt = 1;
        while !partition_lines_up(hot, a, p)? {
            if attempt == TRIMMED_UNDER_CHECK_ATTEMPTS {
                return Err(ArchiveError::DoesNotLineUp {
                    archive: a.root.clone(),
                    partition: p,
                    detail: format!(
                        "the store was trimmed under the check {attempt} times in a row: is an archive pass running in a loop without pause?"
                    ),
                });
            }
            attempt += 1;
        }
    }
    Ok(())
}

/// Whether partition `p` of `hot` lines up with the archive: `Ok(true)` if it does,
/// `Ok(false)` if the event to compare was trimmed from the store after its bounds were read
/// (read them again), an error if it does not line up.
fn partition_lines_up(
    hot: &dyn StoreReader, a: &Archive, p: PartitionId,
) -> Result<bool, ArchiveError> {
    let bounds = hot.plog_bounds(p)?;
    let mut end = a.end(p);
    if bounds.is_some_and(|(first, _)| first > end + 1) {
        // Another process may have archived and trimmed since the archive was opened (an
        // archive pass beside a run's final check). It writes the bundles before it trims,
        // so the archive as it is now, read after the store's bounds, holds the gap.
        end = a.end_now(p)?;
    }
    lines_up(a, p, bounds, end)?;
    let Some((first, last)) = bounds else {
        return Ok(true);
    };
    if first > end {
        return Ok(true);
    }
    // Both hold first..=end: a pass interrupted before its trim, or one running beside.
    let o = end.min(last);
    let x = hot.events(p, o, 1)?;
    let Some(x) = x.first().filter(|x| x.offset == o) else {
        // Trimmed since the bounds were read: a pass beside this one archived it first.
        return Ok(false);
    };
    let y = a.events(p, o, 1)?;
    if y.first().is_some_and(|y| x.same_event(y)) {
        return Ok(true);
    }
    Err(ArchiveError::DoesNotLineUp {
        archive: a.root.clone(),
        partition: p,
        detail: format!(
            "event {o} differs between the store and the archive: not this store's archive"
        ),
    })
}
