//! Reading a partition's events in order, from bundles and event objects, verifying every link
//! on the way: what reads, pages of a replay and `check` go through.

use sequencer::PLogOffset;

use crate::store::objects::names::{bundle_object, event_object};
use crate::store::objects::range::EventRange;
use crate::store::objects::shared::{Access, Shared, lock};
use crate::store::storage::{PartitionId, StorageError};

/// Event objects a read asks for at once (from a few threads, see `Shared::get_objects`).
const READ_CHUNK: usize = 256;

/// Where the next events of a read come from.
enum Source {
    /// The bundle that holds them.
    Bundle,
    /// These event objects (the first may start before the offset read).
    Objects(Vec<PLogOffset>),
    /// Nothing: the PLog ends before them.
    End,
}

impl Shared {
    /// Calls `f` with each of up to `max` events from `from` on, in order, verifying links;
    /// stops early only at the PLog's end.
    pub(super) fn visit(
        &self, p: PartitionId, from: PLogOffset, max: usize,
        f: impl FnMut(PLogOffset, &[u8]) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        self.visit_with(p, from, max, false, f)
    }

    /// [`visit`](Self::visit), looking past the end this handle knows for objects it does
    /// not know of also when it writes, if `past_end` (another host may have appended).
    pub(super) fn visit_with(
        &self, p: PartitionId, from: PLogOffset, max: usize, past_end: bool,
        mut f: impl FnMut(PLogOffset, &[u8]) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let part = self.part(p);
        let mut o = from;
        let mut seen = 0;
        let mut link: Option<u64> = None;
        // Up to `room` events of `r` from `o` on, to `f`, once `r` is found to follow what
        // came before; how many.
        let mut emit = |r: &EventRange, o: PLogOffset, room: usize, name: &dyn Fn() -> String| {
            let skip = (o - r.first) as usize;
            let take = room.min(r.len() - skip);
            if let Some(l) = link
                && l != r.hash_before(skip)
            {
                return Err(StorageError(format!(
                    "object store: partition {p}: broken link at offset {o}: {} does not follow offset {}",
                    name(),
                    o - 1
                )));
            }
            link = Some(r.hashes[skip + take - 1]);
            for i in skip..skip + take {
                f(r.first + i as u64, r.event(i))?;
            }
            Ok(take)
        };
        while seen < max {
            let source = {
                let st = lock(&part);
                if o <= st.merged_to {
                    Source::Bundle
                } else {
                    // The objects this handle knows of (those it created from its cache, the
                    // others read ahead in parallel), used in order up to the first one not
                    // found. Past the end it knows of, one object at a time, and only where an
                    // object may be that it does not know of: a create whose outcome is unknown,
                    // or a reader (another host may have appended; a writer learns of that
                    // from its fence). A store answers a missing object slowly (S3's 404).
                    let known = st.objects_from(o, (max - seen) as u64, READ_CHUNK);
                    if !known.is_empty() {
                        Source::Objects(known)
                    } else if st.in_doubt
                        || past_end
                        || self.access == Access::ReadOnly
                        || o < st.next
                    {
                        Source::Objects(vec![o])
                    } else {
                        Source::End
                    }
                }
            };
            if let Source::End = source {
                break;
            }
            if let Source::Objects(firsts) = source {
                let wanted = firsts.len();
                let mut found = 0;
                for obj in self.objects_for(p, &firsts)?.into_iter().map_while(|e| e) {
                    // An object after the first must start where the one before it ended.
                    if obj.first > o || obj.last() < o {
                        break;
                    }
                    let take = emit(&obj, o, max - seen, &|| event_object(p, obj.first))?;
                    o += take as u64;
                    seen += take;
                    found += 1;
                    if seen == max {
                        return Ok(());
                    }
                }
                if found == wanted {
                    continue;
                }
                // Merged meanwhile (into the bundle read next), or the end.
            }
            let Some(b) = self.get_bundle(p, o)? else {
                break;
            };
            let take = emit(&b, o, max - seen, &|| bundle_object(p, b.first, b.last()))?;
            o += take as u64;
            seen += take;
        }
        Ok(())
    }
}
