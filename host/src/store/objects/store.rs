//! The object store: a root directory holding the PLog's objects (or naming where they are)
//! and the sequences view in a [`ViewFile`] beside them, opened live (a run) or read-only
//! (`check`, `inspect`) as the view is; its `FORMAT` marker and its layout records.

use std::fs;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sequencer::{Number, PLogOffset, SeqId, WsId};

use crate::store::codec::StoredEvent;
use crate::store::forward::forward_storage;
use crate::store::fs::{LAYOUT_FILE, read_layout, record_layout};
use crate::store::layout::Layout;
use crate::store::objects::marker::{
    Marker, OBJECTS_FORMAT_FILE, VIEW_DB_FILE, err, read_marker, same_plog, write_marker,
};
use crate::store::objects::object::ObjectFormat;
use crate::store::objects::pages::{ReadAheadPages, decode_all, read_plog_page};
use crate::store::objects::plog::{
    DEFAULT_BUNDLE_EVENTS, ObjectPlog, PlogOptions, REMOTE_DELETE_DELAY,
};
use crate::store::objects::remote::{RemoteFailure, RemotePlog};
use crate::store::objects::shared::Access;
use crate::store::reader::{StoreReader, partitions_of};
use crate::store::storage::StorageFuture;
use crate::store::storage::{
    AppendError, AppendLimits, DamageLatch, DamagedEvent, EventBatch, PartitionId, PlogPage,
    Storage, StorageError,
};
use crate::store::view_file::{Live, LiveViewFile, ReadOnly, ViewFile};

/// An object store root: its PLog's objects and its view `V`, opened as `V` is: `Live`
/// (appends, merges, writes to the view) or `ReadOnly` (nothing changes). See
/// [`ObjectStorage`](crate::store::ObjectStorage) (the live store) and
/// [`ObjectReader`](crate::store::ObjectReader) (read without writing).
#[derive(Clone)]
pub struct Objects<V: ViewFile, A = <V as ViewFile>::Access> {
    root: PathBuf,
    /// Where the PLog is when not under `root` (`s3://BUCKET/PREFIX`).
    remote: Option<String>,
    remote_failure: Option<RemoteFailure>,
    /// Requests to the remote objects sent again ([`RemotePlog::retries`]).
    remote_retries: Option<Arc<std::sync::atomic::AtomicU64>>,
    plog: ObjectPlog,
    view: V,
    created: bool,
    ahead: ReadAheadPages,
    /// The first PLog event a replay refused for its checksum.
    damage: Arc<DamageLatch>,
    access: PhantomData<A>,
}

impl<V: ViewFile, A> Objects<V, A> {
    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The PLog.
    pub fn plog(&self) -> &ObjectPlog {
        &self.plog
    }

    /// Where the PLog is when it is not under [`root`](Self::root) (`s3://BUCKET/PREFIX`):
    /// then other hosts, each with a view of its own, may append to it too.
    pub fn remote(&self) -> Option<&str> {
        self.remote.as_deref()
    }

    /// "object store DIR" (or its PLog's URL): names the store in messages.
    fn label(&self) -> String {
        match &self.remote {
            Some(url) => format!("object store {url}"),
            None => format!("object store {}", self.root.display()),
        }
    }

    /// The numbering layout recorded in the root, `None` if none.
    pub fn read_layout(root: &Path) -> Result<Option<Layout>, StorageError> {
        read_layout(root).map_err(|e| StorageError(e.to_string()))
    }
}

impl<V: LiveViewFile> Objects<V, Live> {
    /// Opens the store in the local directory `root`, creating it (its parent must exist)
    /// with bundles of `bundle_events` events (default [`DEFAULT_BUNDLE_EVENTS`]) when it is
    /// missing or empty; an existing store keeps the bundle size it was created with.
    pub fn open(root: &Path, bundle_events: Option<u64>) -> Result<Self, StorageError> {
        Self::open_with(root, None, bundle_events)
    }

    /// Opens the store whose PLog is on S3 at `url` (`s3://BUCKET/PREFIX`, configured from
    /// the `AWS_*` environment variables) and whose view is in the local directory `data`
    /// (created as [`open`](Self::open) creates a root). The PLog's bundle size is its
    /// `FORMAT` object's (created with `bundle_events` if absent). A `data` directory that
    /// holds the view of another PLog is refused before anything is written. Once S3 has
    /// answered no request for `wait` (each retried first), the store reports a failure
    /// ([`Storage::failure`]), which stops a run.
    #[cfg(feature = "s3")]
    pub fn open_s3(
        data: &Path, url: &str, bundle_events: Option<u64>, wait: std::time::Duration,
    ) -> Result<Self, StorageError> {
        Self::open_with(data, Some(RemotePlog::s3(url, Some(wait))?), bundle_events)
    }

    /// Opens the store with its view in `root` and its PLog in `root` (`remote` `None`) or
    /// on `remote`.
    pub fn open_with(
        root: &Path, remote: Option<RemotePlog>, bundle_events: Option<u64>,
    ) -> Result<Self, StorageError> {
        let url = remote.as_ref().map(|r| r.url.clone());
        let remote_failure = remote.as_ref().and_then(|r| r.failure.clone());
        let remote_retries = remote.as_ref().and_then(|r| r.retries.clone());
        let wanted = ObjectFormat::for_writing();
        let local = read_marker(root)?;
        if let Some(m) = &local {
            same_plog(root, m, url.as_deref())?;
        }
        let remote_marker = match &remote {
            Some(r) => r.marker(Some((bundle_events, wanted)))?,
            None => None,
        };
        let parent = match root.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let created = local.is_none();
        // Names the store in messages.
        let name = url.clone().unwrap_or_else(|| root.display().to_string());
        let local = match local {
            Some(m) => m,
            None => Self::create_root(root, &parent, &url, remote_marker.as_ref(), bundle_events)?,
        };
        // The PLog's own record: the remote `FORMAT` object, or the root's marker.
        let plog_marker = remote_marker.clone().unwrap_or_else(|| local.clone());
        let bundle = plog_marker.bundle;
        if let Some(asked) = bundle_events
            && asked != bundle
        {
            tracing::warn!(
                "object store {name}: keeps the bundle size it was created with ({bundle} events), not {asked}"
            );
        }
        // A store of format 1 is continued in the format asked for (2 unless a test asks for
        // 1): its records say so before the first object of format 2 is written.
        let format = plog_marker.format.max(wanted);
        let open_plog = |access| {
            let options = PlogOptions {
                format,
                ..PlogOptions::new(bundle, access)
            };
            match &remote {
                Some(r) => ObjectPlog::open_with(
                    r.objects.clone(),
                    None,
                    PlogOptions {
                        delete_delay: REMOTE_DELETE_DELAY,
                        ..options
                    },
                ),
                None => ObjectPlog::open_local_with(root, options),
            }
        };
        // The PLog is scanned read-only first: a hole, a broken link or a damaged event
        // refuses the store before anything is written. Then the view (whose lock keeps a
        // second process off the store), then the records of an upgraded format, then the
        // PLog for writing (which repairs an interrupted merge).
        let scanned = open_plog(Access::ReadOnly)?;
        if let Some(e) = scanned.damaged() {
            return Err(e);
        }
        drop(scanned);
        let view = V::open_view(&root.join(VIEW_DB_FILE), None)?;
        let records = (remote.as_ref(), &plog_marker, local);
        Self::continue_in(format, root, &parent, records, &name)?;
        let plog = open_plog(Access::Write)?;
        Ok(Self {
            root: root.to_path_buf(),
            remote: url,
            remote_failure,
            remote_retries,
            plog,
            view,
            created,
            ahead: ReadAheadPages::default(),
            damage: Arc::default(),
            access: PhantomData,
        })
    }

    /// Creates the store's root at `root` (in `parent`, which must exist): its view, then its
    /// marker, for the PLog at `url` (its own record `remote`, if remote and there) with
    /// bundles of `bundle_events` events (the remote record's, if any).
    fn create_root(
        root: &Path, parent: &Path, url: &Option<String>, remote: Option<&Marker>,
        bundle_events: Option<u64>,
    ) -> Result<Marker, StorageError> {
        if !parent.is_dir() {
            return Err(err(
                root,
                "cannot create it: its parent directory does not exist",
            ));
        }
        fs::create_dir_all(root).map_err(|e| err(root, e))?;
        // An interrupted creation may have left a view database: start again.
        let _ = fs::remove_file(root.join(VIEW_DB_FILE));
        V::create_view(&root.join(VIEW_DB_FILE))?;
        let m = Marker {
            format: remote.map_or(ObjectFormat::for_writing(), |m| m.format),
            bundle: remote
                .map(|m| m.bundle)
                .or(bundle_events)
                .unwrap_or(DEFAULT_BUNDLE_EVENTS)
                .max(2),
            plog: url.clone(),
        };
        write_marker(root, parent, &m)?;
        Ok(m)
    }

    /// Records that the PLog `name` is continued in `format` where a record says an older one:
    /// `records` are its remote PLog (if any), its own record (the remote `FORMAT` object, or
    /// the root's marker) and the root's marker in `root`.
    fn continue_in(
        format: ObjectFormat, root: &Path, parent: &Path,
        (remote, plog_marker, local): (Option<&RemotePlog>, &Marker, Marker), name: &str,
    ) -> Result<(), StorageError> {
        if let Some(r) = remote
            && plog_marker.format < format
        {
            r.rewrite_marker(&Marker {
                format,
                ..plog_marker.clone()
            })?;
        }
        if local.format < format {
            write_marker(root, parent, &Marker { format, ..local })?;
            tracing::info!(
                "object store {name}: format {} continued in format {}",
                plog_marker.format.number(),
                format.number()
            );
        }
        Ok(())
    }

    /// Whether this open created the store.
    pub fn created(&self) -> bool {
        self.created
    }

    /// The view store (its counters are the flusher's writes).
    pub fn view_store(&self) -> &V {
        &self.view
    }

    /// Requests to the PLog's remote objects sent again after a transport failure, `None`
    /// where nothing counts them (a local PLog).
    pub fn remote_retries(&self) -> Option<u64> {
        (self.remote_retries.as_ref()).map(|r| r.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// With the PLog on S3, the numbering layout every host of that PLog shares: a `LAYOUT`
    /// object beside its `FORMAT`, created holding `wanted` if absent (so a second host with
    /// another partition count is refused even with a data directory of its own). `None`
    /// for a local PLog, whose layout is its root's `LAYOUT` file.
    pub fn shared_layout(&self, wanted: &Layout) -> Result<Option<Layout>, StorageError> {
        let Some(url) = &self.remote else {
            return Ok(None);
        };
        let held = self
            .plog
            .record_shared(LAYOUT_FILE, wanted.to_text().into_bytes())?;
        Layout::parse(&String::from_utf8_lossy(&held))
            .map(Some)
            .map_err(|e| {
                StorageError(format!(
                    "object store {url}: its {} object is not a layout: {e}",
                    LAYOUT_FILE
                ))
            })
    }

    /// Records `layout` in the root, durably.
    pub fn record_layout(&self, layout: &Layout) -> Result<(), StorageError> {
        record_layout(&self.root, layout).map_err(|e| err(&self.root, e))
    }
}

impl<V: LiveViewFile> Storage for Objects<V, Live> {
    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        let read = (&self.plog, &self.ahead, &self.damage);
        read_plog_page(read, self.label(), (partition, from, max_events), None)
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.plog.append(partition, batch)
    }

    /// Each part of a batch is its own all-or-nothing write (an object, up to the next bundle
    /// boundary); a batch's parts are created in order and made durable together, so a
    /// failure leaves a dense prefix.
    fn append_limits(&self) -> AppendLimits {
        self.plog.append_limits()
    }

    fn failure(&self) -> Option<String> {
        self.view
            .failure()
            .or_else(|| self.remote_failure.as_ref().and_then(|f| f()))
    }

    fn damaged(&self) -> Option<DamagedEvent> {
        self.damage.get()
    }

    forward_storage!(view: read_numbers, read_numbers_many, read_next_offset, write);
}

impl<V: ViewFile<Access = ReadOnly>> Objects<V, ReadOnly> {
    /// Opens the store at `root` for reading only.
    pub fn open(root: &Path) -> Result<Self, StorageError> {
        Self::open_with(root, None)
    }

    /// Opens for reading only the store whose PLog is on S3 at `url` and whose view is in
    /// `data` (see [`ObjectStorage::open_s3`](crate::store::ObjectStorage::open_s3)); nothing is
    /// created or changed.
    #[cfg(feature = "s3")]
    pub fn open_s3(data: &Path, url: &str) -> Result<Self, StorageError> {
        Self::open_with(data, Some(RemotePlog::s3(url, None)?))
    }

    /// Opens for reading only the store with its view in `root` and its PLog in `root`
    /// (`remote` `None`) or on `remote`.
    pub fn open_with(root: &Path, remote: Option<RemotePlog>) -> Result<Self, StorageError> {
        let url = remote.as_ref().map(|r| r.url.clone());
        let marker = read_marker(root)?.ok_or_else(|| {
            err(
                root,
                format!("no sequencer object store there (no {OBJECTS_FORMAT_FILE} file)"),
            )
        })?;
        same_plog(root, &marker, url.as_deref())?;
        let layout = Self::read_layout(root)?;
        let view = V::open_view(&root.join(VIEW_DB_FILE), layout)?;
        let plog = match &remote {
            Some(r) => {
                let bundle = r.marker(None)?.map(|m| m.bundle).ok_or_else(|| {
                    StorageError(format!(
                        "object store {}: no sequencer PLog there (no {OBJECTS_FORMAT_FILE} object)",
                        r.url
                    ))
                })?;
                ObjectPlog::open(r.objects.clone(), None, bundle, Access::ReadOnly)?
            }
            None => ObjectPlog::open_local(root, marker.bundle, Access::ReadOnly)?,
        };
        Ok(Self {
            root: root.to_path_buf(),
            remote: url,
            remote_failure: None,
            remote_retries: remote.and_then(|r| r.retries),
            plog,
            view,
            created: false,
            ahead: ReadAheadPages::default(),
            damage: Arc::default(),
            access: PhantomData,
        })
    }
}

impl<V: ViewFile, A> StoreReader for Objects<V, A> {
    fn describe(&self) -> String {
        match &self.remote {
            Some(url) => format!(
                "object store {url} (PLog objects read in place, view in {}: {})",
                self.root.display(),
                self.view.describe()
            ),
            None => format!(
                "object store {} (PLog objects read in place, view: {})",
                self.root.display(),
                self.view.describe()
            ),
        }
    }

    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        Ok(partitions_of(
            self.plog.partitions(),
            self.view.partitions()?,
        ))
    }

    fn plog_bounds(
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        let (next, _) = self.plog.bounds(partition);
        Ok((next > 1).then_some((1, next - 1)))
    }

    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        decode_all(partition, self.plog.read(partition, from, max)?)
    }

    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        self.view.stored_next_offset(partition)
    }

    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        self.view.view(partition)
    }

    fn layout(&self) -> Result<Option<Layout>, StorageError> {
        Self::read_layout(&self.root)
    }

    fn statistics(&self) -> Vec<(String, String)> {
        let plog = &self.plog;
        let parts = plog.partitions();
        let merged: u64 = parts.iter().map(|&p| plog.bounds(p).1).sum();
        let events: u64 = parts.iter().map(|&p| plog.bounds(p).0 - 1).sum();
        let mut rows = vec![("root".into(), self.root.display().to_string())];
        if let Some(url) = &self.remote {
            rows.push(("PLog".into(), url.clone()));
        }
        rows.extend([
            (
                "bundle size".into(),
                format!("{} events", plog.bundle_events()),
            ),
            (
                "events in bundles".into(),
                format!(
                    "{merged} of {events} ({} in event objects)",
                    events - merged
                ),
            ),
        ]);
        rows
    }
}
