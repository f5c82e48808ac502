//! `objects`, `objects:DIR`, `objects:s3://BUCKET/PREFIX`: the PLog on object storage, the view
//! and the layout in a local directory; with the PLog on S3, the layout also in a `LAYOUT`
//! object every host of that PLog shares.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::composed::{ObjectReader, ObjectStorage};
use crate::store::objects::ObjectPlog;
use crate::store::reader::StoreReader;
use crate::store::stats::{Counter, StoreStats};
use crate::store::storage::Storage;

use super::archive;
use super::error::OpenError;
use super::options::OpenOptions;
use super::settle;
use super::store::{Backend, Opened, Store};
use super::url::StoreUrl;

impl Backend for ObjectStorage {
    fn reader(&self) -> &dyn StoreReader {
        self
    }

    fn describe(&self) -> String {
        let bundles = self.plog().bundle_events();
        match self.remote() {
            Some(url) => format!(
                "object store {url} (one object per append, bundles of {bundles}; view in redb in {})",
                self.root().display()
            ),
            None => format!(
                "object store {} (one object per append, bundles of {bundles}; view in redb)",
                self.root().display()
            ),
        }
    }

    fn stats(&self) -> StoreStats {
        let view = self.view_store().counts();
        let s = self.plog().stats();
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let retries = self.remote_retries().map(|n| (Counter::Retries, n));
        let kept = [
            (Counter::ViewWrites, view.writes),
            (Counter::ViewRows, view.values_written),
            (Counter::Commits, view.commits),
            (Counter::CommitNanos, view.commit_nanos),
            (Counter::EventsAppended, get(&s.events_written)),
            (Counter::ObjectsWritten, get(&s.objects_written)),
            (Counter::Appends, get(&s.appends)),
            (Counter::Syncs, get(&s.syncs)),
            (Counter::BundlesWritten, get(&s.bundles_written)),
            (Counter::MergedEvents, get(&s.merged_events)),
            (Counter::LeftoversRemoved, get(&s.leftovers_removed)),
            (Counter::Fenced, get(&s.fenced)),
        ]
        .into_iter()
        .chain(retries);
        StoreStats::of(kept)
    }

    fn merge_error(&self) -> Option<String> {
        self.plog().merge_error()
    }
}

impl Store {
    /// The object store's PLog (whose merger bundles its events), also the composite store's;
    /// `None` for other stores.
    pub fn object_plog(&self) -> Option<&ObjectPlog> {
        let backend: &dyn std::any::Any = self.backend.as_ref();
        #[cfg(feature = "etcd")]
        if let Some(composite) = backend.downcast_ref::<crate::store::composed::EtcdObjects>() {
            return Some(composite.plog());
        }
        backend.downcast_ref::<ObjectStorage>().map(|s| s.plog())
    }
}

pub(super) fn open(url: &StoreUrl, options: &OpenOptions) -> Result<Opened, OpenError> {
    archive::refuse_for(&options.archive, url)?;
    let root = url
        .local_dir(&options.data)
        .unwrap_or_else(|| options.data.clone());
    let recorded = match root.is_dir() {
        true => ObjectStorage::read_layout(&root)?,
        false => None,
    };
    let name = || format!("data directory {}", root.display());
    settle::refuse_another(recorded.as_ref(), options, &name, "objects")?;
    if !options.create
        && !root
            .join(crate::store::objects::OBJECTS_FORMAT_FILE)
            .is_file()
    {
        return Err(OpenError::Storage(crate::store::storage::StorageError(
            format!("object store {}: there is none", root.display()),
        )));
    }
    let store = match url {
        #[cfg(feature = "s3")]
        StoreUrl::ObjectsS3(s3) => {
            ObjectStorage::open_s3(&root, s3, options.bundle_events, options.store_wait)?
        }
        #[cfg(not(feature = "s3"))]
        StoreUrl::ObjectsS3(_) => return Err(settle::not_built(url)),
        _ => ObjectStorage::open(&root, options.bundle_events)?,
    };
    settle::refuse_large_events(options, store.append_limits())?;
    if let (Some(remote), Some(wanted)) = (store.remote(), &options.layout)
        && let Some(shared) = store.shared_layout(wanted)?
    {
        let shared_name = || format!("object store {remote}");
        settle::refuse_another(Some(&shared), options, &shared_name, "objects")?;
    }
    let layout = settle::settle_open(
        recorded,
        options,
        &store,
        store.created(),
        &name,
        "objects",
        |l| {
            store.record_layout(l)?;
            Ok(l.clone())
        },
    )?;
    tracing::info!(
        "{} object store {}",
        if store.created() { "created" } else { "opened" },
        store
            .remote()
            .map_or_else(|| root.display().to_string(), str::to_string)
    );
    Ok(Opened {
        created: store.created(),
        storage: Arc::new(store.clone()),
        backend: std::sync::Arc::new(store),
        layout,
        archive: archive::Opened::none(),
    })
}

pub(super) fn open_reader(
    url: &StoreUrl, options: &OpenOptions,
) -> Result<Box<dyn StoreReader + Send + Sync>, OpenError> {
    let root = url
        .local_dir(&options.data)
        .unwrap_or_else(|| options.data.clone());
    match url {
        #[cfg(feature = "s3")]
        StoreUrl::ObjectsS3(s3) => Ok(Box::new(ObjectReader::open_s3(&root, s3)?)),
        #[cfg(not(feature = "s3"))]
        StoreUrl::ObjectsS3(_) => Err(settle::not_built(url)),
        _ => Ok(Box::new(ObjectReader::open(&root)?)),
    }
}
