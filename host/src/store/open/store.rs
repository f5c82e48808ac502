//! An open store ([`Store`]): the backend behind a trait of what a store must show, its settled
//! layout and its archive; and its whole check.

use std::sync::Arc;

use sequencer::{Number, SeqId};

use crate::store::check::{CheckError, CheckReport, StoreCheck, check_store};
use crate::store::layers::{OwnTail, TailLimits};
use crate::store::layout::Layout;
use crate::store::live::{LiveServer, LiveSource};
use crate::store::reader::StoreReader;
use crate::store::stats::StoreStats;
use crate::store::storage::{PartitionId, Storage, StorageError};
use crate::store::tail_probe::TailProbe;
use crate::store::trim::Trim;

use super::archive;
use super::error::OpenError;
use super::url::StoreUrl;

/// A backend's live handle, as an open [`Store`] holds it. What only one backend has (the etcd
/// store, the object store's PLog) its opener's file reaches by downcasting it (`Any`).
pub(super) trait Backend: std::any::Any + Send + Sync {
    /// The store's read side (the hot store, without its archive).
    fn reader(&self) -> &dyn StoreReader;
    /// One line naming the store and what it is.
    fn describe(&self) -> String;
    /// Its counters now.
    fn stats(&self) -> StoreStats;
    /// The store as archive passes trim it (redb, etcd).
    fn trim(&self) -> Option<&dyn Trim> {
        None
    }
    /// Why the store's background merger stopped, if it has one and it did (the object store).
    fn merge_error(&self) -> Option<String> {
        None
    }
    /// The directory and the source a run serves readers from (`store::live`), if any.
    fn live(&self) -> Option<(std::path::PathBuf, Arc<dyn LiveSource>)> {
        None
    }
    /// The read that proves a kept tail, for a store where it is one cheap request and other
    /// hosts may append (etcd): [`Store::storage`] is then layered with [`OwnTail`].
    fn tail_probe(&self) -> Option<Arc<dyn TailProbe>> {
        None
    }
}

/// An open store: the backend, its settled layout and its archive.
pub struct Store {
    url: StoreUrl,
    pub(super) backend: Arc<dyn Backend>,
    layout: Option<Layout>,
    created: bool,
    archive: archive::Opened,
    storage: Arc<dyn Storage>,
    own_tail: Option<Arc<OwnTail>>,
}

impl Store {
    /// The store as a [`Driver`](crate::Driver) runs on it: the backend, with its archive
    /// layered under it when it has one (old PLog events read from there), and over it the
    /// actualizations from the host's own tail where the store proves them cheaply (etcd,
    /// unless [`OpenOptions::own_tail`](super::OpenOptions::own_tail) turned it off).
    pub fn storage(&self) -> Arc<dyn Storage> {
        self.storage.clone()
    }

    /// The layer serving actualizations from the host's own tail, if [`storage`](Self::storage)
    /// has it: what it served and read ([`OwnTail::counts`]).
    pub fn own_tail(&self) -> Option<&OwnTail> {
        self.own_tail.as_deref()
    }

    /// The store's read side (the hot store, without its archive).
    pub fn reader(&self) -> &dyn StoreReader {
        self.backend.reader()
    }

    /// The URL it was opened from.
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// The numbering layout the store records (after this open settled it); `None` for a
    /// store opened without a layout that records none.
    pub fn layout(&self) -> Option<&Layout> {
        self.layout.as_ref()
    }

    /// Whether this open created the store.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whether other hosts may append to the same PLog ([`StoreUrl::shared`]).
    pub fn shared(&self) -> bool {
        self.url.shared()
    }

    /// One line naming the store and what it is.
    pub fn describe(&self) -> String {
        self.backend.describe()
    }

    /// The store's counters now.
    pub fn stats(&self) -> StoreStats {
        self.backend.stats()
    }

    /// [`stats`](Self::stats) as a function that outlives this borrow (the store's counters
    /// read at each metrics scrape: [`Metrics::watch_store_stats`](crate::metrics::Metrics::watch_store_stats)).
    pub fn stats_source(&self) -> impl Fn() -> StoreStats + Send + Sync + 'static {
        let backend = self.backend.clone();
        move || backend.stats()
    }

    /// Serves `check` and `inspect` beside this run until the returned server is dropped:
    /// read-only requests on a local socket in the data directory, each session from one
    /// snapshot of the store ([`store::live`](crate::store::live)). `Ok(None)` for a store
    /// that serves none (memory, objects, etcd: readers read those directly) or a platform
    /// without Unix sockets; an error leaves the store as it was (readers then fall back to a
    /// private copy).
    pub fn serve_readers(&self) -> Result<Option<LiveServer>, StorageError> {
        match self.backend.live() {
            Some((dir, source)) => crate::store::live::serve(&dir, source),
            None => Ok(None),
        }
    }

    /// Proves the whole store, its archive included (opened again: another process may have
    /// archived more meanwhile), partition by partition and across partitions, against the
    /// recorded layout ([`check_store`]); an object store's merger error fails it.
    pub fn check(
        &self, fallback_initial: impl Fn(SeqId) -> Option<Number>,
        each: impl FnMut(PartitionId, &CheckReport),
    ) -> Result<StoreCheck, StoreCheckError> {
        if let Some(e) = self.merge_error() {
            return Err(StoreCheckError::Merger(e));
        }
        let reader = self.archive.reopened_over(self.backend.reader())?;
        Ok(check_store(
            reader.as_ref(),
            self.layout.as_ref(),
            fallback_initial,
            each,
        )?)
    }
}

impl Store {
    /// The store as archive passes trim it (redb and etcd stores).
    pub fn trim(&self) -> Option<&dyn Trim> {
        self.backend.trim()
    }

    /// Why the object store's merger stopped, if it did (`None` for other stores).
    pub fn merge_error(&self) -> Option<String> {
        self.backend.merge_error()
    }

    /// The store's archive of old PLog events, if it has one (writable if the open asked).
    #[cfg(feature = "objects")]
    pub fn archive(&self) -> Option<&crate::store::layers::archive::Archive> {
        self.archive.archive()
    }
}

/// Why [`Store::check`] failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreCheckError {
    /// The object store's merger stopped.
    #[error("the merger stopped: {0}")]
    Merger(String),
    /// The archive could not be opened again.
    #[error(transparent)]
    Archive(#[from] OpenError),
    /// The check found a violation or could not read the store.
    #[error(transparent)]
    Check(#[from] CheckError),
}

/// What a backend's opener hands back.
pub(super) struct Opened {
    pub(super) backend: Arc<dyn Backend>,
    pub(super) layout: Option<Layout>,
    pub(super) created: bool,
    pub(super) archive: archive::Opened,
    /// The backend with its archive layered under it, if any.
    pub(super) storage: Arc<dyn Storage>,
}

impl Store {
    /// The open store made of what a backend's opener handed back, its storage layered with
    /// [`OwnTail`] if `own_tail` and the backend has a [`TailProbe`].
    pub(super) fn new(url: &StoreUrl, opened: Opened, own_tail: bool) -> Self {
        let Opened {
            backend,
            layout,
            created,
            archive,
            mut storage,
        } = opened;
        let own_tail = match backend.tail_probe() {
            Some(probe) if own_tail => {
                let layer = Arc::new(OwnTail::new(storage, probe, TailLimits::default()));
                storage = layer.clone();
                Some(layer)
            }
            _ => None,
        };
        Self {
            url: url.clone(),
            backend,
            layout,
            created,
            archive,
            storage,
            own_tail,
        }
    }
}
