//! PLog pages for a replay: events read from the objects with their values decoded, and the
//! next page of each partition read ahead while the guest replays the last.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sequencer::{PLogOffset, SeqValue};

use crate::store::codec::{StoredEvent, decode_event};
use crate::store::objects::plog::ObjectPlog;
use crate::store::objects::shared::lock;
use crate::store::storage::{PartitionId, PlogPage, StorageError};

/// Events read for a PLog page, their values decoded.
pub(super) struct RawPage {
    /// The values of the events read, each with its event's offset.
    values: Vec<(PLogOffset, SeqValue)>,
    /// Events read.
    pub(super) events: usize,
    /// The offset of the last one.
    pub(super) last: PLogOffset,
}

impl RawPage {
    /// Up to `want` events from `from` on.
    pub(super) fn read(
        plog: &ObjectPlog,
        p: PartitionId,
        from: PLogOffset,
        want: usize,
    ) -> Result<Self, StorageError> {
        let mut page = Self {
            values: Vec::new(),
            events: 0,
            last: 0,
        };
        plog.visit(p, from, want, |o, bytes| {
            page.values
                .extend(decode_values(p, o, bytes)?.into_iter().map(|v| (o, v)));
            page.events += 1;
            page.last = o;
            Ok(())
        })?;
        Ok(page)
    }

    /// The page of `want - 1` events from `from` (one more was read to tell whether the PLog
    /// ends with the page).
    pub(super) fn into_page(mut self, from: PLogOffset, want: usize) -> PlogPage {
        if self.events == want {
            let last = self.last;
            self.values.retain(|v| v.0 != last);
            PlogPage {
                values: self.values,
                next: last,
                end: false,
            }
        } else {
            PlogPage {
                values: self.values,
                next: if self.events > 0 { self.last + 1 } else { from },
                end: true,
            }
        }
    }
}

/// A page read ahead: (first offset, events wanted, the page once read).
type AheadPage = Arc<(PLogOffset, usize, Mutex<Option<RawPage>>)>;

/// The next page of each partition's actualization, read while the guest replays the last.
/// Only full pages are kept: events are never rewritten, so a full page cannot be stale (a
/// short one, at the PLog's end, could miss events appended since).
#[derive(Clone, Default)]
pub(super) struct ReadAheadPages(Arc<Mutex<HashMap<PartitionId, AheadPage>>>);

impl ReadAheadPages {
    /// Announces the page of `want` events from `from`, calls `answer` (which answers the
    /// read before it), then reads the page and keeps it if it is full. A read of this page
    /// that comes meanwhile waits for it instead of reading it twice.
    pub(super) fn read_after(
        &self,
        answer: impl FnOnce(),
        plog: &ObjectPlog,
        p: PartitionId,
        from: PLogOffset,
        want: usize,
    ) {
        let page: AheadPage = Arc::new((from, want, Mutex::new(None)));
        let mut slot = lock(&page.2);
        lock(&self.0).insert(p, page.clone());
        answer();
        match RawPage::read(plog, p, from, want) {
            Ok(page) if page.events == want => *slot = Some(page),
            _ => {
                drop(slot);
                lock(&self.0).remove(&p);
            }
        }
    }

    /// The page from `from` of `want` events, if it was read ahead.
    pub(super) fn take(&self, p: PartitionId, from: PLogOffset, want: usize) -> Option<RawPage> {
        let page = lock(&self.0).remove(&p)?;
        if page.0 != from || page.1 != want {
            return None;
        }
        lock(&page.2).take()
    }
}

/// The values of the event at `offset` of partition `p`, refused if it is not a sound event.
fn decode_values(
    p: PartitionId,
    offset: PLogOffset,
    bytes: &[u8],
) -> Result<Vec<SeqValue>, StorageError> {
    decode_event(bytes)
        .map(|(values, _)| values)
        .ok_or_else(|| {
            StorageError(format!(
                "object store: event {offset} of partition {p} is not a sound event"
            ))
        })
}

/// `events` of partition `p` decoded into their values and payloads.
pub(super) fn decode_all(
    p: PartitionId,
    events: Vec<(PLogOffset, Vec<u8>)>,
) -> Result<Vec<StoredEvent>, StorageError> {
    events
        .into_iter()
        .map(|(offset, bytes)| {
            let values = decode_values(p, offset, &bytes)?;
            let payload = decode_event(&bytes).map_or_else(Vec::new, |(_, p)| p.to_vec());
            Ok(StoredEvent {
                offset,
                values,
                payload,
            })
        })
        .collect()
}
