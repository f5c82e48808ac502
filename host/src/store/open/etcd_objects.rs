//! `etcd://HOST:PORT,...?plog=objects:DIR` and `...?plog=objects:s3://BUCKET/PREFIX`: the
//! composite store, its PLog on object storage, its view, offsets, owners and layout record on
//! the etcd cluster.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::composed::EtcdObjects;
use crate::store::etcd::EtcdStorage;
use crate::store::objects::{Access, RemotePlog};
use crate::store::reader::StoreReader;
use crate::store::stats::{Counter, StoreStats};
use crate::store::storage::{Storage, StorageError};

use super::archive;
use super::error::OpenError;
use super::options::OpenOptions;
use super::settle;
use super::store::{Backend, Opened};
use super::url::{PlogPlace, StoreUrl};

impl Backend for EtcdObjects {
    fn reader(&self) -> &dyn StoreReader {
        self
    }

    fn describe(&self) -> String {
        format!(
            "{} (view, offsets, owners) with its PLog at {} (one object per append, bundles of {})",
            self.etcd().label(),
            self.plog_url(),
            self.plog().bundle_events()
        )
    }

    fn stats(&self) -> StoreStats {
        let e = self.etcd().stats();
        let s = self.plog().stats();
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StoreStats::of([
            (Counter::ViewWrites, get(&e.writes)),
            (Counter::Transactions, get(&e.txns)),
            // etcd's and the PLog's object store's, together.
            (
                Counter::Retries,
                get(&e.retries) + self.plog_retries().unwrap_or(0),
            ),
            (Counter::ViewConflicts, get(&e.view_conflicts)),
            (Counter::EventsAppended, get(&s.events_written)),
            (Counter::ObjectsWritten, get(&s.objects_written)),
            (Counter::Appends, get(&s.appends)),
            (Counter::BundlesWritten, get(&s.bundles_written)),
            (Counter::MergedEvents, get(&s.merged_events)),
            (Counter::LeftoversRemoved, get(&s.leftovers_removed)),
            (Counter::Fenced, get(&s.fenced)),
        ])
    }

    fn merge_error(&self) -> Option<String> {
        self.plog().merge_error()
    }
}

/// The PLog's objects at `place`: a directory (created if `create`), or S3 (a failure once it
/// has answered nothing for `wait`, if given); with the directory the objects are files of.
fn plog_at(
    place: &PlogPlace, create: bool, wait: Option<std::time::Duration>,
) -> Result<(RemotePlog, Option<&Path>), OpenError> {
    match place {
        PlogPlace::Dir(dir) => Ok((RemotePlog::directory(dir, create)?, Some(dir.as_path()))),
        #[cfg(feature = "s3")]
        PlogPlace::S3(url) => Ok((RemotePlog::s3(url, wait)?, None)),
        #[cfg(not(feature = "s3"))]
        PlogPlace::S3(url) => {
            let _ = wait;
            Err(OpenError::NotBuilt {
                url: url.clone(),
                feature: "s3",
            })
        }
    }
}

/// Refuses, before anything is written, a cluster whose view belongs to another PLog than
/// `plog`: one that records another place, or (when `record`) one that records none but holds
/// a store (its PLog is in the cluster); a cluster that holds nothing records `plog` (if
/// `record`). So no view is ever replayed against a PLog it was not written from.
fn settle_plog_place(
    store: &EtcdStorage, etcd: &str, plog: &PlogPlace, record: bool,
) -> Result<(), OpenError> {
    let place = plog.to_string();
    let refuse = |what: String| {
        OpenError::Storage(StorageError(format!(
            "etcd store {etcd}: {what}, not {place}; nothing was written"
        )))
    };
    let recorded = match store.read_plog_place()? {
        Some(recorded) => recorded,
        None if !record => return Ok(()),
        None if !store.partitions()?.is_empty() => {
            return Err(refuse(
                "it holds a store whose PLog is in the cluster".into(),
            ));
        }
        None => store.record_plog_place(&place)?,
    };
    match recorded == place {
        true => Ok(()),
        false => Err(refuse(format!(
            "its view belongs to the PLog at {recorded}"
        ))),
    }
}

pub(super) fn open(url: &StoreUrl, options: &OpenOptions) -> Result<Opened, OpenError> {
    let StoreUrl::EtcdObjects { etcd, plog } = url else {
        return Err(settle::not_built(url));
    };
    archive::refuse_for(&options.archive, url)?;
    let store = super::etcd::connect(etcd, options)?;
    settle_plog_place(&store, etcd, plog, true)?;
    let recorded = store.read_layout()?;
    let name = || format!("etcd store {etcd}");
    settle::refuse_another(recorded.as_ref(), options, &name, "etcd")?;
    let (remote, local) = plog_at(plog, options.create, Some(options.store_wait))?;
    let objects = remote.open_plog(local, options.bundle_events, Access::Write)?;
    let composite = EtcdObjects::new(store.clone(), objects, remote.url.clone(), remote.failure)
        .counting_plog_retries(remote.retries);
    settle::refuse_large_events(options, composite.append_limits())?;
    let layout = settle::settle_open(recorded, options, &composite, false, &name, "etcd", |l| {
        Ok(store.record_layout(l)?)
    })?;
    tracing::info!("opened {}", Backend::describe(&composite));
    Ok(Opened {
        created: false,
        storage: Arc::new(composite.clone()),
        backend: Arc::new(composite),
        layout,
        archive: archive::Opened::none(),
    })
}

pub(super) fn open_reader(url: &StoreUrl) -> Result<Box<dyn StoreReader + Send + Sync>, OpenError> {
    let StoreUrl::EtcdObjects { etcd, plog } = url else {
        return Err(settle::not_built(url));
    };
    let store = EtcdStorage::connect_url(etcd)?;
    settle_plog_place(&store, etcd, plog, false)?;
    let (remote, local) = plog_at(plog, false, None)?;
    let objects = remote.open_plog(local, None, Access::ReadOnly)?;
    Ok(Box::new(EtcdObjects::new(
        store,
        objects,
        remote.url.clone(),
        None,
    )))
}
