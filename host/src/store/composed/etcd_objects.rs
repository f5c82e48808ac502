//! The composite store: the PLog on object storage ([`ObjectPlog`], a directory or S3), the
//! sequences view, the stored next offsets and the ownership on an etcd cluster
//! ([`EtcdStorage`]), for many hosts. Each side is its backend's own code: appends and PLog
//! reads go to the objects only, view reads and the flusher's writes to the cluster only.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::FutureExt;
use sequencer::{Number, PLogOffset, SeqId, WsId};

use crate::store::codec::StoredEvent;
use crate::store::etcd::EtcdStorage;
use crate::store::forward::forward_storage;
use crate::store::layout::Layout;
use crate::store::objects::{
    FirstStep, ObjectPlog, ReadAheadPages, RemoteFailure, decode_all, read_plog_page,
};
use crate::store::reader::{StoreReader, partitions_of};
use crate::store::storage::StorageFuture;
use crate::store::storage::{
    AppendError, AppendLimits, DamageLatch, DamagedEvent, EventBatch, PartitionId, PlogPage,
    Storage, StorageError,
};

/// The PLog on object storage, the view and the ownership on etcd. Clones share both handles.
///
/// An append is refused before it is sent unless this host owns the partition under a lease
/// that cannot have expired (judged on the host's clock, no request:
/// [`ownership`](crate::store::etcd::ownership)); the object's create-if-absent at its first
/// offset stays the last line. The flusher's writes carry the partition's epoch to the cluster,
/// which refuses them from a host that lost it.
#[derive(Clone)]
pub struct EtcdObjects {
    etcd: EtcdStorage,
    plog: ObjectPlog,
    /// Where the PLog is (a directory, `s3://BUCKET/PREFIX`).
    plog_url: String,
    plog_failure: Option<RemoteFailure>,
    /// The requests to the PLog's object store sent again (S3), if it counts them.
    plog_retries: Option<Arc<AtomicU64>>,
    ahead: ReadAheadPages,
    /// The first PLog event a replay refused for its checksum.
    damage: Arc<DamageLatch>,
    /// The PLog's end per partition as [`plog_bounds`](StoreReader::plog_bounds) last read
    /// it (other hosts append to the same objects).
    ends: Arc<Mutex<HashMap<PartitionId, PLogOffset>>>,
    /// The epoch each partition's objects were last scanned at: a partition acquired at a new
    /// epoch is scanned again by its first read (its actualization), so that the acquisition
    /// numbers from the PLog as it is, not from what this handle knew before another host
    /// appended.
    scanned_at: Arc<Mutex<HashMap<PartitionId, u64>>>,
}

impl EtcdObjects {
    /// The store of `etcd` (view, offsets, ownership) and `plog` (at `plog_url`; the store
    /// fails once `plog_failure` says so).
    pub fn new(
        etcd: EtcdStorage, plog: ObjectPlog, plog_url: String, plog_failure: Option<RemoteFailure>,
    ) -> Self {
        Self {
            etcd,
            plog,
            plog_url,
            plog_failure,
            plog_retries: None,
            ahead: ReadAheadPages::default(),
            damage: Arc::default(),
            ends: Arc::default(),
            scanned_at: Arc::default(),
        }
    }

    /// The store whose PLog's object store counts the requests it sends again into `retries`
    /// ([`RemotePlog::retries`](crate::store::objects::RemotePlog::retries)), read back by
    /// [`plog_retries`](Self::plog_retries).
    pub fn counting_plog_retries(mut self, retries: Option<Arc<AtomicU64>>) -> Self {
        self.plog_retries = retries;
        self
    }

    /// How many requests to the PLog's object store were sent again, if it counts them.
    pub fn plog_retries(&self) -> Option<u64> {
        (self.plog_retries.as_ref()).map(|r| r.load(Ordering::Relaxed))
    }

    /// Whether a read of `partition` scans its objects again first: it is owned at an epoch
    /// this handle has not scanned it at (recorded as scanned from now on).
    fn rescan_first(&self, partition: PartitionId) -> bool {
        let Some(epoch) = self.etcd.plog_epoch(partition) else {
            return false;
        };
        let mut scanned = self.scanned_at.lock().unwrap_or_else(|p| p.into_inner());
        scanned.insert(partition, epoch) != Some(epoch)
    }

    /// What the first read of a partition acquired at a new epoch does before it reads: the
    /// partition's objects read again (the PLog as it is, other hosts' appends included), and
    /// the takeover mark placed at its end, which a stale owner's next append runs into
    /// ([`ObjectPlog::place_mark`]). A successor that finds a higher epoch there has lost the
    /// partition already.
    fn acquired(&self, partition: PartitionId) -> FirstStep {
        let etcd = self.etcd.clone();
        Box::new(move |plog: &ObjectPlog| {
            let epoch = match etcd.plog_fence(partition) {
                Ok(Some(epoch)) => epoch,
                // Not owned (a reader), or no longer: the rescan alone.
                Ok(None) | Err(_) => return plog.rescan(partition),
            };
            match plog.place_mark(partition, epoch) {
                Ok(()) => Ok(()),
                Err(AppendError::NotOwner { why, .. }) => {
                    etcd.plog_superseded(partition, &why);
                    Err(StorageError(format!("partition {partition}: {why}")))
                }
                Err(e) => Err(StorageError(e.to_string())),
            }
        })
    }

    /// The cluster: the view, the offsets and the ownership (a
    /// [`Membership`](crate::membership::Membership) opens on it).
    pub fn etcd(&self) -> &EtcdStorage {
        &self.etcd
    }

    /// The PLog.
    pub fn plog(&self) -> &ObjectPlog {
        &self.plog
    }

    /// Where the PLog is.
    pub fn plog_url(&self) -> &str {
        &self.plog_url
    }

    /// Names the store in messages.
    fn label(&self) -> String {
        format!("{} with its PLog at {}", self.etcd.label(), self.plog_url)
    }
}

impl Storage for EtcdObjects {
    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        let read = (&self.plog, &self.ahead, &self.damage);
        let rescan = self.rescan_first(partition);
        let first = rescan.then(|| self.acquired(partition));
        let page = read_plog_page(read, self.label(), (partition, from, max_events), first);
        if !rescan {
            return page;
        }
        // A scan that failed is done again by the next read.
        let scanned = self.scanned_at.clone();
        async move {
            let read = page.await;
            if read.is_err() {
                scanned
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&partition);
            }
            read
        }
        .boxed()
    }

    /// Refused before it is sent unless owned (see the type); the owner's epoch goes with the
    /// append into its objects, and a tail a successor wrote refuses it (the partition is then
    /// lost on this host).
    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        let epoch = self.etcd.plog_fence(partition)?;
        let appended = self.plog.append_under(partition, batch, epoch);
        if let Err(AppendError::NotOwner { why, .. }) = &appended {
            self.etcd.plog_superseded(partition, why);
        }
        appended
    }

    fn append_limits(&self) -> AppendLimits {
        self.plog.append_limits()
    }

    fn view_write_interval(&self) -> std::time::Duration {
        self.etcd.view_write_interval()
    }

    fn failure(&self) -> Option<String> {
        (self.etcd.failure()).or_else(|| self.plog_failure.as_ref().and_then(|f| f()))
    }

    fn damaged(&self) -> Option<DamagedEvent> {
        self.damage.get()
    }

    forward_storage!(etcd: read_numbers, read_numbers_many, read_next_offset, write);
}

impl StoreReader for EtcdObjects {
    fn describe(&self) -> String {
        format!(
            "{} (view, offsets, owners), PLog objects at {} read in place",
            self.etcd.label(),
            self.plog_url
        )
    }

    /// Partitions whose PLog holds events (a partition this handle only tried to append to
    /// holds none) or that have a stored offset.
    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        let plog = &self.plog;
        let with_events = (plog.partitions().into_iter()).filter(|&p| plog.bounds(p).0 > 1);
        Ok(partitions_of(
            with_events.collect(),
            self.etcd.partitions()?,
        ))
    }

    /// The PLog's bounds as the objects hold them now: the events other hosts appended since
    /// the last call (or the open) are read to find its end.
    fn plog_bounds(
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        let known = self.plog.bounds(partition).0;
        let from = {
            let ends = self.ends.lock().unwrap_or_else(|p| p.into_inner());
            ends.get(&partition).copied().unwrap_or(0).max(known)
        };
        let next = self.plog.end_from(partition, from)?;
        let mut ends = self.ends.lock().unwrap_or_else(|p| p.into_inner());
        let end = ends.entry(partition).or_default();
        *end = (*end).max(next);
        Ok((*end > 1).then_some((1, *end - 1)))
    }

    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        decode_all(partition, self.plog.read(partition, from, max)?)
    }

    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        self.etcd.stored_next_offset(partition)
    }

    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        StoreReader::view(&self.etcd, partition)
    }

    fn layout(&self) -> Result<Option<Layout>, StorageError> {
        self.etcd.read_layout()
    }

    fn statistics(&self) -> Vec<(String, String)> {
        let plog = &self.plog;
        let parts = plog.partitions();
        let merged: u64 = parts.iter().map(|&p| plog.bounds(p).1).sum();
        vec![
            ("view and owners".into(), self.etcd.label().to_string()),
            ("PLog".into(), self.plog_url.clone()),
            (
                "bundle size".into(),
                format!("{} events", plog.bundle_events()),
            ),
            ("events in bundles".into(), merged.to_string()),
        ]
    }
}
