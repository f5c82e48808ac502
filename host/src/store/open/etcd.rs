//! `etcd://HOST:PORT,...`: the store on an etcd cluster, its layout and archive record kept in
//! the cluster beside the PLogs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::store::etcd::{EtcdConfig, EtcdStorage};
use crate::store::reader::StoreReader;
use crate::store::stats::{Counter, StoreStats};
use crate::store::storage::{Storage, StorageError};
use crate::store::tail_probe::TailProbe;
use crate::store::trim::Trim;

use super::archive;
use super::error::OpenError;
use super::options::OpenOptions;
use super::settle;
use super::store::{Backend, Opened, Store};
use super::url::StoreUrl;

/// How long a new store's first request may take to be answered.
const PROBE_WITHIN: Duration = Duration::from_secs(5);

impl Backend for EtcdStorage {
    fn reader(&self) -> &dyn StoreReader {
        self
    }

    fn describe(&self) -> String {
        format!("{} (fenced appends)", self.label())
    }

    fn stats(&self) -> StoreStats {
        let s = self.stats();
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StoreStats::of([
            (Counter::ViewWrites, get(&s.writes)),
            (Counter::EventsAppended, get(&s.appends)),
            (Counter::Appends, get(&s.packs)),
            (Counter::Transactions, get(&s.txns)),
            (Counter::AppendTransactions, get(&s.append_txns)),
            (Counter::CombinedTransactions, get(&s.combined_txns)),
            (Counter::Retries, get(&s.retries)),
            (Counter::ReadBacks, get(&s.read_backs)),
            (Counter::Fenced, get(&s.fenced)),
            (Counter::ViewConflicts, get(&s.view_conflicts)),
        ])
    }

    fn trim(&self) -> Option<&dyn Trim> {
        Some(self)
    }

    fn tail_probe(&self) -> Option<Arc<dyn TailProbe>> {
        Some(Arc::new(self.clone()))
    }
}

impl Store {
    /// The etcd store behind this one (a [`Membership`](crate::membership::Membership) of
    /// many hosts opens on it), also the composite store's; `None` for other backends.
    pub fn etcd(&self) -> Option<&EtcdStorage> {
        let backend: &dyn std::any::Any = self.backend.as_ref();
        #[cfg(feature = "objects")]
        if let Some(composite) = backend.downcast_ref::<crate::store::composed::EtcdObjects>() {
            return Some(composite.etcd());
        }
        backend.downcast_ref()
    }
}

/// Refuses a cluster whose view belongs to a PLog kept elsewhere (the composite store's): its
/// PLog is not the cluster's, which holds none of its events.
fn refuse_plog_elsewhere(store: &EtcdStorage, url: &str) -> Result<(), OpenError> {
    match store.read_plog_place()? {
        Some(place) => Err(OpenError::Storage(StorageError(format!(
            "etcd store {url}: its PLog is at {place}: open it as {url}?plog={place}"
        )))),
        None => Ok(()),
    }
}

/// Connects to the cluster at `url` and waits (bounded) for it to answer.
pub(super) fn connect(url: &str, options: &OpenOptions) -> Result<EtcdStorage, OpenError> {
    let unavailable = |error: StorageError| OpenError::Unavailable {
        url: url.to_string(),
        error,
    };
    let mut config = EtcdConfig::from_url(url).map_err(unavailable)?;
    config.quorum_wait = Some(options.store_wait);
    let store = EtcdStorage::connect(config).map_err(unavailable)?;
    store.probe(PROBE_WITHIN).map_err(unavailable)?;
    Ok(store)
}

pub(super) fn open(url: &StoreUrl, options: &OpenOptions) -> Result<Opened, OpenError> {
    let StoreUrl::Etcd(address) = url else {
        return Err(settle::not_built(url));
    };
    let store = connect(address, options)?;
    refuse_plog_elsewhere(&store, address)?;
    let recorded = store.read_layout()?;
    let name = || format!("etcd store {address}");
    settle::refuse_another(recorded.as_ref(), options, &name, "etcd")?;
    settle::refuse_large_events(options, store.append_limits())?;
    let layout = settle::settle_open(recorded, options, &store, false, &name, "etcd", |l| {
        Ok(store.record_layout(l)?)
    })?;
    let chosen = archive::choose(&options.archive, url, || Ok(store.read_archive()?))?;
    let (archive, storage) =
        chosen.open_under(options, &store, |root| Ok(store.record_archive(root)?))?;
    Ok(Opened {
        created: false,
        backend: std::sync::Arc::new(store),
        layout,
        archive,
        storage,
    })
}

pub(super) fn open_reader(url: &StoreUrl) -> Result<Box<dyn StoreReader + Send + Sync>, OpenError> {
    let StoreUrl::Etcd(address) = url else {
        return Err(settle::not_built(url));
    };
    let store = EtcdStorage::connect_url(address)?;
    refuse_plog_elsewhere(&store, address)?;
    let read_record = {
        let store = store.clone();
        move || Ok(store.read_archive()?)
    };
    archive::reader_with_recorded(store, read_record)
}
