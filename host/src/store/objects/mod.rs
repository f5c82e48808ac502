//! The store with its PLog on object storage ([`ObjectPlog`]) and its sequences view and
//! stored next offsets in an embedded redb database beside it.
//!
//! ```text
//! ROOT/
//!   FORMAT      one line: "sequencer-objects format=1 bundle-events=N[ plog=s3://BUCKET/PREFIX]"
//!   view.redb   the sequences view and the stored next offsets (redb; its plog table unused)
//!   LAYOUT      the numbering layout, as in a data directory
//!   events/     one object per event (see `object_plog`)
//!   bundles/    the merged bundles
//! ```
//!
//! With the PLog on S3 (feature `s3`, [`ObjectStorage::open_s3`]) `events/` and `bundles/` are
//! under `s3://BUCKET/PREFIX/` beside a `FORMAT` object (the bundle size every host of that PLog
//! uses, created if absent), and ROOT (the run's `--data` directory) keeps the view, the
//! layout and a `FORMAT` file naming the PLog it belongs to (`plog=`).

pub(crate) mod plog;
#[cfg(feature = "s3")]
pub(crate) mod s3;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::executor::block_on;
use futures::future::{BoxFuture, FutureExt};
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::codec::{StoredEvent, decode_event};
use crate::store::fs::{read_layout, sync_dir, write_synced};
use crate::store::layout::Layout;
use crate::store::objects::plog::{Access, DEFAULT_BUNDLE_EVENTS, ObjectPlog};
use crate::store::reader::StoreReader;
use crate::store::redb::reader::RedbReader;
use crate::store::redb::storage::RedbStorage;
use crate::store::storage::{
    AppendError, AppendLimits, EventBatch, PartitionId, PlogPage, Storage, StorageError,
};

/// The name of the object store root's format marker.
pub const OBJECTS_FORMAT_FILE: &str = "FORMAT";
/// The name of the view database in an object store root.
pub const VIEW_DB_FILE: &str = "view.redb";
const MARKER: &str = "sequencer-objects";

fn marker_line(bundle_events: u64, plog: Option<&str>) -> String {
    match plog {
        Some(url) => format!("{MARKER} format=1 bundle-events={bundle_events} plog={url}\n"),
        None => format!("{MARKER} format=1 bundle-events={bundle_events}\n"),
    }
}

/// What a marker says: the bundle size, and where the PLog is when not in the root itself.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Marker {
    bundle: u64,
    plog: Option<String>,
}

/// Parses a marker's text (`what` names it in errors).
fn parse_marker(text: &str, what: impl Fn(&str) -> StorageError) -> Result<Marker, StorageError> {
    let line = text.lines().next().unwrap_or_default();
    let mut words = line.split_whitespace();
    if words.next() != Some(MARKER) || !line.contains("format=1") {
        return Err(what("is not an object store marker of format 1"));
    }
    let words: Vec<&str> = words.collect();
    let bundle = words
        .iter()
        .find_map(|w| w.strip_prefix("bundle-events="))
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&n| n >= 2)
        .ok_or_else(|| what("names no bundle size"))?;
    let plog = words
        .iter()
        .find_map(|w| w.strip_prefix("plog="))
        .map(str::to_string);
    Ok(Marker { bundle, plog })
}

/// Says why a remote PLog takes no writes (it has not answered for too long), if it does not.
pub type RemoteFailure = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The PLog's objects when they are not in the root: an object store elsewhere (S3).
#[derive(Clone)]
pub struct RemotePlog {
    /// Where, as a URL (`s3://BUCKET/PREFIX`).
    pub url: String,
    /// The objects, under that location.
    pub objects: Arc<dyn ObjectStore>,
    /// The store's failure once the objects have stayed away too long (see
    /// [`Storage::failure`]); `None`: never.
    pub failure: Option<RemoteFailure>,
}

impl RemotePlog {
    /// The PLog's bundle size from its `FORMAT` object; with `create`, the object is created
    /// first if absent (with `bundle_events`, else the default), so that every host of one
    /// PLog agrees on the size. `Ok(None)`: no store there (and `create` was not asked).
    fn marker(&self, create: Option<Option<u64>>) -> Result<Option<u64>, StorageError> {
        let path = ObjPath::from(OBJECTS_FORMAT_FILE);
        let e = |what: &dyn std::fmt::Display| {
            StorageError(format!("object store {}: {what}", self.url))
        };
        if let Some(asked) = create {
            let n = asked.unwrap_or(DEFAULT_BUNDLE_EVENTS).max(2);
            let put = block_on(self.objects.put_opts(
                &path,
                PutPayload::from(marker_line(n, None)),
                PutOptions::from(PutMode::Create),
            ));
            match put {
                Ok(_) => return Ok(Some(n)),
                // There already (or our own create, retried after a lost answer): read it.
                Err(object_store::Error::AlreadyExists { .. }) => {}
                Err(object_store::Error::NotFound { .. }) => {
                    return Err(e(&"the bucket does not exist"));
                }
                Err(err) => {
                    return Err(e(&format_args!(
                        "cannot create {OBJECTS_FORMAT_FILE}: {err}"
                    )));
                }
            }
        }
        let text = match block_on(async { self.objects.get(&path).await?.bytes().await }) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(err) => return Err(e(&format_args!("cannot read {OBJECTS_FORMAT_FILE}: {err}"))),
        };
        let m = parse_marker(&text, |what| {
            e(&format_args!("{OBJECTS_FORMAT_FILE} {what}"))
        })?;
        Ok(Some(m.bundle))
    }
}

fn err(root: &Path, what: impl std::fmt::Display) -> StorageError {
    StorageError(format!("object store {}: {what}", root.display()))
}

/// Reads the root's marker: `Ok(None)` when the root is missing, empty, or holds only what an
/// interrupted creation leaves (no marker yet); its bundle size otherwise.
fn read_marker(root: &Path) -> Result<Option<Marker>, StorageError> {
    if !root.exists() {
        return Ok(None);
    }
    if !root.is_dir() {
        return Err(err(root, "not a directory"));
    }
    match fs::read_to_string(root.join(OBJECTS_FORMAT_FILE)) {
        Ok(text) => parse_marker(&text, |what| {
            err(root, format!("{OBJECTS_FORMAT_FILE} {what}"))
        })
        .map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let others: Vec<String> = fs::read_dir(root)
                .map_err(|e| err(root, e))?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != VIEW_DB_FILE && !n.starts_with(VIEW_DB_FILE))
                .collect();
            if others.is_empty() {
                Ok(None)
            } else {
                Err(err(
                    root,
                    format!(
                        "not a sequencer object store: it is not empty and has no {OBJECTS_FORMAT_FILE} file"
                    ),
                ))
            }
        }
        Err(e) => Err(err(root, e)),
    }
}

/// Events read for a PLog page, their values decoded.
struct RawPage {
    values: Vec<(PLogOffset, SeqValue)>,
    /// Events read.
    events: usize,
    /// The offset of the last one.
    last: PLogOffset,
}

impl RawPage {
    /// Up to `want` events from `from` on.
    fn read(
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
    fn into_page(mut self, from: PLogOffset, want: usize) -> PlogPage {
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
struct ReadAheadPages(Arc<Mutex<HashMap<PartitionId, AheadPage>>>);

impl ReadAheadPages {
    /// Announces the page of `want` events from `from`, calls `answer` (which answers the
    /// read before it), then reads the page and keeps it if it is full. A read of this page
    /// that comes meanwhile waits for it instead of reading it twice.
    fn read_after(
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
    fn take(&self, p: PartitionId, from: PLogOffset, want: usize) -> Option<RawPage> {
        let page = lock(&self.0).remove(&p)?;
        if page.0 != from || page.1 != want {
            return None;
        }
        lock(&page.2).take()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An object store root: its PLog's objects and its view `V`. See [`ObjectStorage`] (the
/// live store) and [`ObjectReader`] (read without writing).
#[derive(Clone)]
pub struct Objects<V> {
    root: PathBuf,
    /// Where the PLog is when not under `root` (`s3://BUCKET/PREFIX`).
    remote: Option<String>,
    remote_failure: Option<RemoteFailure>,
    plog: ObjectPlog,
    view: V,
    created: bool,
    ahead: ReadAheadPages,
}

/// The PLog on object storage with the view in redb: a durable store for `run`.
pub type ObjectStorage = Objects<RedbStorage>;

/// An object store root read without writing anything (`check`, `inspect`): the PLog's
/// objects read in place (a scan that reports holes, broken links and conflicting objects,
/// and leaves the leftovers of an interrupted merge where they are), the view through a
/// [`RedbReader`] (in place, or a private copy when live or in need of recovery).
pub type ObjectReader = Objects<RedbReader>;

impl<V> Objects<V> {
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
}

/// Refuses a root whose marker names another PLog than `url` (`None`: the root's own).
fn same_plog(root: &Path, m: &Marker, url: Option<&str>) -> Result<(), StorageError> {
    if m.plog.as_deref() == url {
        return Ok(());
    }
    let name = |p: Option<&str>| match p {
        Some(u) => u.to_string(),
        None => format!("the PLog in {}", root.display()),
    };
    Err(err(
        root,
        format!(
            "holds the view of {}, not of {}: give another --data directory",
            name(m.plog.as_deref()),
            name(url)
        ),
    ))
}

impl ObjectStorage {
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
        data: &Path,
        url: &str,
        bundle_events: Option<u64>,
        wait: std::time::Duration,
    ) -> Result<Self, StorageError> {
        let location = crate::store::objects::s3::S3Location::parse(url)?;
        let s3 = crate::store::objects::s3::connect(&location)?;
        let outage = s3.outage;
        let remote = RemotePlog {
            url: location.url(),
            objects: s3.objects,
            failure: Some(Arc::new(move || outage.longer_than(wait))),
        };
        Self::open_with(data, Some(remote), bundle_events)
    }

    /// Opens the store with its view in `root` and its PLog in `root` (`remote` `None`) or
    /// on `remote`.
    pub fn open_with(
        root: &Path,
        remote: Option<RemotePlog>,
        bundle_events: Option<u64>,
    ) -> Result<Self, StorageError> {
        let url = remote.as_ref().map(|r| r.url.clone());
        let remote_failure = remote.as_ref().and_then(|r| r.failure.clone());
        let local = read_marker(root)?;
        if let Some(m) = &local {
            same_plog(root, m, url.as_deref())?;
        }
        let remote_bundle = match &remote {
            Some(r) => r.marker(Some(bundle_events))?,
            None => None,
        };
        let created = match local {
            Some(_) => false,
            None => {
                let parent = match root.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                if !parent.is_dir() {
                    return Err(err(
                        root,
                        "cannot create it: its parent directory does not exist",
                    ));
                }
                fs::create_dir_all(root).map_err(|e| err(root, e))?;
                // An interrupted creation may have left a view database: start again.
                let _ = fs::remove_file(root.join(VIEW_DB_FILE));
                drop(RedbStorage::create(&root.join(VIEW_DB_FILE))?);
                let n = remote_bundle
                    .or(bundle_events)
                    .unwrap_or(DEFAULT_BUNDLE_EVENTS)
                    .max(2);
                let tmp = root.join(format!("{OBJECTS_FORMAT_FILE}.tmp"));
                write_synced(&tmp, marker_line(n, url.as_deref()).as_bytes())
                    .map_err(|e| err(root, e))?;
                fs::rename(&tmp, root.join(OBJECTS_FORMAT_FILE)).map_err(|e| err(root, e))?;
                sync_dir(root).map_err(|e| err(root, e))?;
                sync_dir(&parent).map_err(|e| err(root, e))?;
                true
            }
        };
        let bundle = match remote_bundle {
            Some(n) => n,
            None => read_marker(root)?.map_or(DEFAULT_BUNDLE_EVENTS, |m| m.bundle),
        };
        if let Some(asked) = bundle_events
            && asked != bundle
        {
            tracing::warn!(
                "object store {}: keeps the bundle size it was created with ({bundle} events), not {asked}",
                url.clone().unwrap_or_else(|| root.display().to_string())
            );
        }
        let open_plog = |access| match &remote {
            Some(r) => ObjectPlog::open(r.objects.clone(), None, bundle, access),
            None => ObjectPlog::open_local(root, bundle, access),
        };
        // The PLog is scanned read-only first: a hole or a broken link refuses the store
        // before anything is written. Then the view (whose lock keeps a second process off
        // the store), then the PLog for writing (which repairs an interrupted merge).
        drop(open_plog(Access::ReadOnly)?);
        let view = RedbStorage::open(&root.join(VIEW_DB_FILE)).map_err(|e| e.error)?;
        let plog = open_plog(Access::Write)?;
        Ok(Self {
            root: root.to_path_buf(),
            remote: url,
            remote_failure,
            plog,
            view,
            created,
            ahead: ReadAheadPages::default(),
        })
    }

    /// Whether this open created the store.
    pub fn created(&self) -> bool {
        self.created
    }

    /// The view store (its counters are the flusher's writes).
    pub fn view_store(&self) -> &RedbStorage {
        &self.view
    }

    /// The numbering layout recorded in the root, `None` if none.
    pub fn read_layout(root: &Path) -> Result<Option<Layout>, StorageError> {
        read_layout(root).map_err(|e| StorageError(e.to_string()))
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
            .record_shared(crate::LAYOUT_FILE, wanted.to_text().into_bytes())?;
        Layout::parse(&String::from_utf8_lossy(&held))
            .map(Some)
            .map_err(|e| {
                StorageError(format!(
                    "object store {url}: its {} object is not a layout: {e}",
                    crate::LAYOUT_FILE
                ))
            })
    }

    /// Records `layout` in the root, durably.
    pub fn record_layout(&self, layout: &Layout) -> Result<(), StorageError> {
        let tmp = self.root.join("LAYOUT.tmp");
        write_synced(&tmp, layout.to_text().as_bytes()).map_err(|e| err(&self.root, e))?;
        fs::rename(&tmp, self.root.join(crate::LAYOUT_FILE)).map_err(|e| err(&self.root, e))?;
        sync_dir(&self.root).map_err(|e| err(&self.root, e))
    }
}

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

fn decode_all(
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

impl Storage for ObjectStorage {
    fn read_numbers(
        &self,
        partition: PartitionId,
        ws: WsId,
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.view.read_numbers(partition, ws, seqs)
    }

    fn read_numbers_many(
        &self,
        partition: PartitionId,
        ws: &[WsId],
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.view.read_numbers_many(partition, ws, seqs)
    }

    fn read_next_offset(
        &self,
        partition: PartitionId,
    ) -> BoxFuture<'static, Result<PLogOffset, StorageError>> {
        self.view.read_next_offset(partition)
    }

    fn write(
        &self,
        partition: PartitionId,
        values: Vec<SeqValue>,
        next_offset: PLogOffset,
    ) -> BoxFuture<'static, Result<(), StorageError>> {
        self.view.write(partition, values, next_offset)
    }

    fn read_plog(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max_events: usize,
    ) -> BoxFuture<'static, Result<PlogPage, StorageError>> {
        let plog = self.plog.clone();
        let ahead = self.ahead.clone();
        let (tx, rx) = futures::channel::oneshot::channel();
        // The read runs on its own thread, so the driver's loop never waits on the objects;
        // after answering, the thread reads the next page ahead while the guest replays this one.
        let spawned = std::thread::Builder::new()
            .name("plog-read".into())
            .spawn(move || {
                let want = max_events.saturating_add(1);
                let read = ahead
                    .take(partition, from, want)
                    .map_or_else(|| RawPage::read(&plog, partition, from, want), Ok);
                let next = match &read {
                    Ok(raw) if raw.events == want => Some(raw.last),
                    _ => None,
                };
                let answer = move || {
                    let _ = tx.send(read.map(|raw| raw.into_page(from, want)));
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

    fn append_event(
        &self,
        partition: PartitionId,
        offset: PLogOffset,
        values: &[SeqValue],
        payload: &[u8],
    ) -> Result<(), AppendError> {
        self.plog
            .append(partition, &EventBatch::single(offset, values, payload))
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.plog.append(partition, batch)
    }

    /// Each event is its own all-or-nothing write (an object); a batch's events are created in
    /// order and made durable together, so a failure leaves a dense prefix.
    fn append_limits(&self) -> AppendLimits {
        AppendLimits {
            max_events: 1,
            max_bytes: usize::MAX,
        }
    }

    fn failure(&self) -> Option<String> {
        self.view
            .failure()
            .or_else(|| self.remote_failure.as_ref().and_then(|f| f()))
    }
}

impl ObjectReader {
    /// Opens the store at `root` for reading only.
    pub fn open(root: &Path) -> Result<Self, StorageError> {
        Self::open_with(root, None)
    }

    /// Opens for reading only the store whose PLog is on S3 at `url` and whose view is in
    /// `data` (see [`ObjectStorage::open_s3`]); nothing is created or changed.
    #[cfg(feature = "s3")]
    pub fn open_s3(data: &Path, url: &str) -> Result<Self, StorageError> {
        let location = crate::store::objects::s3::S3Location::parse(url)?;
        let remote = RemotePlog {
            url: location.url(),
            objects: crate::store::objects::s3::connect(&location)?.objects,
            failure: None,
        };
        Self::open_with(data, Some(remote))
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
        let layout = ObjectStorage::read_layout(root)?;
        let view = RedbReader::open(&root.join(VIEW_DB_FILE), layout).map_err(|e| e.error)?;
        let plog = match &remote {
            Some(r) => {
                let bundle = r.marker(None)?.ok_or_else(|| {
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
            plog,
            view,
            created: false,
            ahead: ReadAheadPages::default(),
        })
    }
}

impl<V: StoreReader> StoreReader for Objects<V> {
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
        let mut v = self.plog.partitions();
        v.extend(self.view.partitions()?);
        v.sort_unstable();
        v.dedup();
        Ok(v)
    }

    fn plog_bounds(
        &self,
        partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        let (next, _) = self.plog.bounds(partition);
        Ok((next > 1).then_some((1, next - 1)))
    }

    fn events(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max: usize,
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
        ObjectStorage::read_layout(&self.root)
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
                    "{merged} of {events} ({} one-event objects)",
                    events - merged
                ),
            ),
        ]);
        rows
    }
}
