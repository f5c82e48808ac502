//! A hot store and its archive read as one PLog ([`WithArchive`]): old offsets from the
//! archive, the rest from the store.

use std::sync::Arc;

use futures::future::FutureExt;
use sequencer::{Number, PLogOffset, SeqId, WsId};

use crate::store::archive_record::ArchiveError;
use crate::store::codec::StoredEvent;
use crate::store::forward::forward_storage;
use crate::store::layout::Layout;
use crate::store::reader::{StoreReader, partitions_of};
use crate::store::storage::StorageFuture;
use crate::store::storage::{
    DamageLatch, DamagedEvent, PartitionId, PlogPage, Storage, StorageError,
};

use super::directory::Archive;
use super::line_up::check_lines_up;

/// A hot store read together with its archive (if it has one) as one PLog: old offsets from
/// the archive, the rest from the store. Implements [`StoreReader`] (for `check` and
/// `inspect`) and [`Storage`] (for `run`: a replay from below the hot store's first event
/// reads the archive).
#[derive(Clone)]
pub struct WithArchive<S> {
    hot: S,
    archive: Option<Archive>,
    /// The first archived event a replay refused for its checksum.
    damage: Arc<DamageLatch>,
}

impl<S: StoreReader> WithArchive<S> {
    /// `hot` with its archive; refuses (naming the partition and offsets) an archive that
    /// does not line up with the store: a gap between the archive's end and the store's
    /// first event, an archive of a partition the store does not have, or an event both hold
    /// with different contents.
    pub fn new(hot: S, archive: Option<Archive>) -> Result<Self, ArchiveError> {
        if let Some(a) = &archive {
            check_lines_up(&hot, a)?;
        }
        Ok(Self {
            hot,
            archive,
            damage: Arc::default(),
        })
    }

    /// The hot store.
    pub fn hot(&self) -> &S {
        &self.hot
    }

    /// The archive, if the store has one.
    pub fn archive(&self) -> Option<&Archive> {
        self.archive.as_ref()
    }

    fn end(&self, p: PartitionId) -> PLogOffset {
        self.archive.as_ref().map_or(0, |a| a.end(p))
    }
}

impl<S: StoreReader> StoreReader for WithArchive<S> {
    fn describe(&self) -> String {
        match &self.archive {
            Some(a) => format!(
                "{}, with its archive {}",
                self.hot.describe(),
                a.root.display()
            ),
            None => self.hot.describe(),
        }
    }

    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        let archived = self.archive.iter().flat_map(|a| a.partitions());
        Ok(partitions_of(self.hot.partitions()?, archived))
    }

    fn plog_bounds(
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        let end = self.end(partition);
        Ok(match (self.hot.plog_bounds(partition)?, end) {
            (bounds, 0) => bounds,
            (Some((_, last)), end) => Some((1, last.max(end))),
            (None, end) => Some((1, end)),
        })
    }

    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        let end = self.end(partition);
        let (Some(a), true) = (&self.archive, from.max(1) <= end) else {
            let hot = self.hot.events(partition, from, max)?;
            // The hot store starts past `from`: another process archived and trimmed since
            // this reader opened the archive. The archive as it is now holds what is between.
            if let Some(a) = &self.archive
                && hot.first().is_some_and(|e| e.offset > from.max(1))
            {
                let now = Archive::open(&a.root).map_err(|e| StorageError(e.to_string()))?;
                let now_end = now.end(partition);
                if now_end >= from.max(1) {
                    let take =
                        max.min(usize::try_from(now_end - from.max(1) + 1).unwrap_or(usize::MAX));
                    return now.events(partition, from, take);
                }
            }
            return Ok(hot);
        };
        let take = max.min(usize::try_from(end - from.max(1) + 1).unwrap_or(usize::MAX));
        let old = a.events(partition, from, take)?;
        // Events the hot store still holds too (a pass interrupted before its trim) must be
        // the same.
        if let (Some(first), Some(last)) = (old.first(), old.last())
            && let Some((hot_first, _)) = self.hot.plog_bounds(partition)?
            && hot_first <= last.offset
        {
            let from = hot_first.max(first.offset);
            let n = usize::try_from(last.offset - from + 1).unwrap_or(usize::MAX);
            // A pass beside this reader may have trimmed some since the bounds were read: the
            // store then answers from a later offset, and only offsets both hold are compared.
            let hot = self.hot.events(partition, from, n)?;
            for e in hot.into_iter().take_while(|e| e.offset <= last.offset) {
                let i = usize::try_from(e.offset - first.offset).unwrap_or(usize::MAX);
                if !old.get(i).is_some_and(|o| o.same_event(&e)) {
                    return Err(StorageError(format!(
                        "partition {partition}: event {} differs between the store and its archive {}",
                        e.offset,
                        a.root.display()
                    )));
                }
            }
        }
        Ok(old)
    }

    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        self.hot.stored_next_offset(partition)
    }

    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        self.hot.view(partition)
    }

    fn layout(&self) -> Result<Option<Layout>, StorageError> {
        self.hot.layout()
    }

    fn statistics(&self) -> Vec<(String, String)> {
        let mut v = self.hot.statistics();
        if let Some(a) = &self.archive {
            let parts = a.partitions();
            let events: u64 = parts.iter().map(|&p| a.end(p)).sum();
            v.push((
                "archive".into(),
                format!(
                    "{}: {events} events of {} partitions in bundles of {} events",
                    a.root.display(),
                    parts.len(),
                    a.bundle_events()
                ),
            ));
        }
        v
    }

    /// The hot store's (the archive's bundles are verified, link by link, as they are read).
    fn verify_integrity(&self) -> Result<Option<String>, StorageError> {
        self.hot.verify_integrity()
    }

    fn served_by_live_run(&self) -> bool {
        self.hot.served_by_live_run()
    }
}

impl<S: Storage + StoreReader + Clone + 'static> Storage for WithArchive<S> {
    /// A replay from below the hot store's first event reads the archive (never needed while
    /// trims stay below the stored next offset, but a replay from anywhere is served).
    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        let end = self.end(partition);
        if from.max(1) > end {
            return self.hot.read_plog(partition, from, max_events);
        }
        let this = self.clone();
        let (tx, rx) = futures::channel::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("archive-read".into())
            .spawn(move || {
                let read = (|| {
                    let events = this.events(partition, from, max_events.saturating_add(1))?;
                    let more = this
                        .hot
                        .plog_bounds(partition)?
                        .is_some_and(|(_, last)| last > end);
                    let mut page = PlogPage::of_stored(from, max_events, events).map_err(|e| {
                        let label = this.describe();
                        this.damage.refuse(&label, partition, e)
                    })?;
                    page.end = page.end && !more;
                    Ok(page)
                })();
                let _ = tx.send(read);
            });
        async move {
            spawned.map_err(|e| StorageError(format!("archive: cannot start a read: {e}")))?;
            rx.await
                .unwrap_or_else(|_| Err(StorageError("archive: a read was lost".into())))
        }
        .boxed()
    }

    fn damaged(&self) -> Option<DamagedEvent> {
        self.damage.get().or_else(|| self.hot.damaged())
    }

    forward_storage!(hot: read_numbers, read_numbers_many, read_next_offset, write, append_events, append_limits, view_write_interval, failure);
}
