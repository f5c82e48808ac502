//! An archive pass ([`archive_pass`]): every partition's events below what is safe to trim
//! copied into verified bundles, then the hot store trimmed below the end of the archive.

use sequencer::PLogOffset;

use crate::store::archive_record::ArchiveError;
use crate::store::codec::{Checksum, encode_event};
use crate::store::trim::Trim;

use super::directory::Archive;
use super::line_up::lines_up;

/// What one [`archive_pass`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchivePass {
    /// Partitions looked at.
    pub partitions: usize,
    /// Bundles written (or found written by an interrupted pass).
    pub bundles: u64,
    /// Events copied into them.
    pub archived: u64,
    /// Events deleted from the hot store.
    pub trimmed: u64,
    /// What was done after trimming (etcd's compaction), if anything.
    pub after: Option<String>,
}

/// What a pass is doing, for a progress bar.
#[derive(Clone, Copy, Debug)]
pub enum PassProgress {
    /// The pass will copy about this many events (and trim as many).
    Planned(u64),
    /// This many more events were copied.
    Archived(u64),
    /// This many more events were trimmed.
    Trimmed(u64),
}

/// The last offset that may be archived and trimmed in a partition whose stored next offset
/// is `stored` and whose PLog ends at `last`, rounded down to whole bundles of `n`.
pub fn safe_end(stored: PLogOffset, last: PLogOffset, n: u64) -> PLogOffset {
    // Offsets below both the stored next offset (replay reads from it) and the last event.
    let limit = stored.min(last).saturating_sub(1);
    limit / n * n
}

/// Copies every partition's events below what is safe to trim into `archive` (whole
/// bundles), then trims the hot store below the end of the archive; see the module's
/// documentation. Idempotent: a pass interrupted anywhere is finished by the next one.
pub fn archive_pass(
    hot: &dyn Trim, archive: &Archive, mut progress: impl FnMut(PassProgress),
) -> Result<ArchivePass, ArchiveError> {
    let n = archive.bundle_events();
    let partitions = hot.partitions()?;
    let mut plan = Vec::new();
    let mut planned = 0;
    for &p in &partitions {
        let Some((first, last)) = hot.plog_bounds(p)? else {
            continue;
        };
        let end = archive.end(p);
        lines_up(archive, p, Some((first, last)), end)?;
        let target = safe_end(hot.stored_next_offset(p)?, last, n);
        planned += target.saturating_sub(end) + target.saturating_sub(first - 1);
        plan.push((p, target));
    }
    progress(PassProgress::Planned(planned));
    let mut pass = ArchivePass {
        partitions: partitions.len(),
        ..ArchivePass::default()
    };
    // The first damaged event met: its partition archives no further, the others go on, and
    // the pass fails once everything it could do is done.
    let mut damaged: Option<ArchiveError> = None;
    for (p, target) in plan {
        while archive.end(p) + n <= target {
            let from = archive.end(p) + 1;
            // A backend may answer fewer events than asked per read (etcd: a page).
            let mut events = hot.events(p, from, n as usize)?;
            while (events.len() as u64) < n {
                let more = hot.events(p, from + events.len() as u64, n as usize - events.len())?;
                if more.is_empty() {
                    break;
                }
                events.extend(more);
            }
            let dense =
                events.len() as u64 == n && events.iter().zip(from..).all(|(e, o)| e.offset == o);
            if !dense {
                return Err(ArchiveError::DoesNotLineUp {
                    archive: archive.root.clone(),
                    partition: p,
                    detail: format!(
                        "the store does not hold every event of {from}..={}",
                        from + n - 1
                    ),
                });
            }
            // A damaged event is not copied (its checksum would be made anew over what is
            // left of it); an old one without a checksum gets one.
            if let Some(e) = events.iter().find(|e| e.checksum == Checksum::Mismatch) {
                damaged.get_or_insert(ArchiveError::Damaged {
                    partition: p,
                    offset: e.offset,
                });
                break;
            }
            let encoded: Vec<Vec<u8>> = events
                .iter()
                .map(|e| encode_event(e.offset, &e.values, &e.payload))
                .collect();
            archive.put_bundle(p, &encoded)?;
            pass.bundles += 1;
            pass.archived += n;
            progress(PassProgress::Archived(n));
        }
        // Only what the archive holds durably, verified, is trimmed.
        let below = archive.end(p).min(target) + 1;
        loop {
            let t = hot.trim_below(p, below)?;
            if t.deleted == 0 {
                break;
            }
            pass.trimmed += t.deleted;
            progress(PassProgress::Trimmed(t.deleted));
            if t.first_kept >= below {
                break;
            }
        }
    }
    if pass.trimmed > 0 {
        pass.after = hot.after_trim()?;
    }
    match damaged {
        Some(e) => Err(e),
        None => Ok(pass),
    }
}
