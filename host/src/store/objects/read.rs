//! Reading a partition's events in order, from bundles and one-event objects, verifying every
//! link on the way: what reads, pages of a replay and `check` go through.

use sequencer::PLogOffset;

use crate::store::objects::names::{bundle_object, event_object};
use crate::store::objects::shared::{Shared, lock};
use crate::store::storage::{PartitionId, StorageError};

/// One-event objects a read asks for at once (from a few threads, see `Shared::get_many`).
const READ_CHUNK: usize = 256;

impl Shared {
    /// Calls `f` with each of up to `max` events from `from` on, in order, verifying links;
    /// stops early only at the PLog's end.
    pub(super) fn visit(
        &self,
        p: PartitionId,
        from: PLogOffset,
        max: usize,
        mut f: impl FnMut(PLogOffset, &[u8]) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let (merged_to, known_next) = {
            let part = self.part(p);
            let st = lock(&part);
            (st.merged_to, st.next)
        };
        let mut o = from;
        let mut seen = 0;
        let mut link: Option<u64> = None;
        let mut check_link = |o: PLogOffset, prev: u64, hash: u64, name: &dyn Fn() -> String| {
            if let Some(l) = link
                && l != prev
            {
                return Err(StorageError(format!(
                    "object store: partition {p}: broken link at offset {o}: {} does not follow offset {}",
                    name(),
                    o - 1
                )));
            }
            link = Some(hash);
            Ok(())
        };
        while seen < max {
            let bundle = if o <= merged_to {
                self.get_bundle(p, o)?
            } else {
                // One-event objects, read ahead in parallel, used in order up to the first
                // one not found.
                // Past the end this handle knows of, one object at a time: another host may
                // have appended, but a store answers a missing object slowly (S3's 404), and
                // a chunk read past the end would ask for hundreds of them.
                let ahead = if o < known_next {
                    (known_next - o).min(READ_CHUNK as u64) as usize
                } else {
                    1
                };
                let fetched = self.get_many(p, o, (max - seen).min(ahead))?;
                let wanted = fetched.len();
                let mut found = 0;
                for e in fetched.into_iter().map_while(|e| e) {
                    check_link(o, e.prev, e.hash, &|| event_object(p, o))?;
                    f(o, &e.event)?;
                    o += 1;
                    found += 1;
                }
                seen += found;
                if found == wanted {
                    continue;
                }
                // Merged meanwhile, or the end.
                self.get_bundle(p, o)?
            };
            let Some(b) = bundle else {
                break;
            };
            let name = || bundle_object(p, b.first, b.last());
            let skip = (o - b.first) as usize;
            let take = (max - seen).min(b.len() - skip);
            let prev = if skip == 0 {
                b.prev
            } else {
                b.hashes[skip - 1]
            };
            check_link(o, prev, b.hashes[skip + take - 1], &name)?;
            for i in skip..skip + take {
                f(b.first + i as u64, b.event(i))?;
            }
            o += take as u64;
            seen += take;
        }
        Ok(())
    }
}
