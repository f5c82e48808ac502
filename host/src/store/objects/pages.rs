//! PLog pages for a replay: events read from the objects with their values decoded, and the
//! next page of each partition read ahead while the guest replays the last.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::FutureExt;
use sequencer::{PLogOffset, SeqValue};

use crate::store::codec::{EventError, StoredEvent, decode_event};
use crate::store::objects::plog::ObjectPlog;
use crate::store::objects::shared::lock;
use crate::store::storage::StorageFuture;
use crate::store::storage::{DamageLatch, PartitionId, PlogPage, StorageError};

/// What a read does first, on its own thread, before it reads the page (a rescan, a takeover
/// mark): an error is the read's.
pub(crate) type FirstStep = Box<dyn FnOnce(&ObjectPlog) -> Result<(), StorageError> + Send>;

/// A replay's page of `partition` from `from` ([`Storage::read_plog`](crate::Storage::read_plog))
/// read from `plog` on a thread of its own, so the driver's loop never waits on the objects;
/// after answering, the thread reads the next page ahead into `ahead` while the guest replays
/// this one. An event that fails its checksum is refused through `damage` (`label` names the
/// store). `first` runs before the read (the composite store's rescan and takeover mark when
/// it reads a partition it just acquired). Every store whose PLog is an [`ObjectPlog`] reads
/// its pages here.
pub(crate) fn read_plog_page(
    (plog, ahead, damage): (&ObjectPlog, &ReadAheadPages, &Arc<DamageLatch>), label: String,
    (partition, from, max_events): (PartitionId, PLogOffset, usize), first: Option<FirstStep>,
) -> StorageFuture<PlogPage> {
    let (plog, ahead, damage) = (plog.clone(), ahead.clone(), damage.clone());
    let (tx, rx) = futures::channel::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("plog-read".into())
        .spawn(move || {
            if let Some(step) = first
                && let Err(e) = step(&plog)
            {
                let _ = tx.send(Err(e));
                return;
            }
            let want = max_events.saturating_add(1);
            let read = ahead
                .take(partition, from, want)
                .map_or_else(|| RawPage::read(&plog, partition, from, want), Ok);
            let next = match &read {
                Ok(raw) if raw.events == want => Some(raw.last),
                _ => None,
            };
            let answer = move || {
                let _ = tx.send(match read {
                    Ok(raw) => Ok(raw.into_page(from, want)),
                    Err(PageError::Storage(e)) => Err(e),
                    Err(PageError::Event(e)) => Err(damage.refuse(&label, partition, e)),
                });
            };
            match next {
                Some(next) => ahead.read_after(answer, &plog, partition, next, want),
                None => answer(),
            }
        });
    async move {
        spawned.map_err(|e| StorageError(format!("object store: cannot start a read: {e}")))?;
        rx.await
            .unwrap_or_else(|_| Err(StorageError("object store: a read was lost".into())))
    }
    .boxed()
}

/// Why a page was not read.
pub(super) enum PageError {
    /// The objects could not be read (or are not sound).
    Storage(StorageError),
    /// An event of the page is not one, or fails its checksum: never replayed.
    Event(EventError),
}

impl From<StorageError> for PageError {
    fn from(e: StorageError) -> Self {
        Self::Storage(e)
    }
}

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
        plog: &ObjectPlog, p: PartitionId, from: PLogOffset, want: usize,
    ) -> Result<Self, PageError> {
        let mut page = Self {
            values: Vec::new(),
            events: 0,
            last: 0,
        };
        let mut bad = None;
        let read = plog.visit(p, from, want, |o, bytes| {
            // A damaged event ends the page here; the read refuses it below.
            let (values, _) = decode_event(o, bytes).map_err(|e| {
                bad = Some(e);
                StorageError(e.to_string())
            })?;
            page.values.extend(values.into_iter().map(|v| (o, v)));
            page.events += 1;
            page.last = o;
            Ok(())
        });
        match (bad, read) {
            (Some(e), _) => Err(PageError::Event(e)),
            (None, Err(e)) => Err(e.into()),
            (None, Ok(())) => Ok(page),
        }
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
pub(crate) struct ReadAheadPages(Arc<Mutex<HashMap<PartitionId, AheadPage>>>);

impl ReadAheadPages {
    /// Announces the page of `want` events from `from`, calls `answer` (which answers the
    /// read before it), then reads the page and keeps it if it is full. A read of this page
    /// that comes meanwhile waits for it instead of reading it twice.
    pub(super) fn read_after(
        &self, answer: impl FnOnce(), plog: &ObjectPlog, p: PartitionId, from: PLogOffset,
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

/// `events` of partition `p` decoded into their values and payloads (one that fails its
/// checksum flagged, for `check` to list), refused if one is not a sound event.
pub(crate) fn decode_all(
    p: PartitionId, events: Vec<(PLogOffset, Vec<u8>)>,
) -> Result<Vec<StoredEvent>, StorageError> {
    events
        .into_iter()
        .map(|(offset, bytes)| {
            StoredEvent::read(offset, &bytes)
                .map_err(|e| StorageError(format!("object store: partition {p}: {e}")))
        })
        .collect()
}
