//! Opening a store from its URL: **the one place that turns a URL into a store**, for a run,
//! `check`, `inspect`, `archive` and an embedder alike.
//!
//! [`open`] validates every option and the store's records before it writes anything, then
//! opens (or creates) the store, settles its numbering layout by the one rule
//! ([`layout::settle`]: record it in a new store, refuse any difference), and layers the
//! store's archive over it when one is recorded or asked for. [`open_reader`] opens the same
//! URLs for reading only, leaving the store's bytes unchanged.
//!
//! | URL | store |
//! |---|---|
//! | `memory` | [`MemoryStorage`](crate::store::memory::MemoryStorage): nothing kept |
//! | `redb` (old name `embedded`), `redb:DIR` | redb in the data directory (`OpenOptions::data`) or DIR |
//! | `objects`, `objects:DIR` | the PLog on object storage in the data directory or DIR, the view in redb beside it |
//! | `objects:s3://BUCKET/PREFIX` | the PLog on S3 (feature `s3`), the view in the data directory |
//! | `etcd://HOST:PORT,HOST:PORT,...` | an etcd cluster shared by many hosts (feature `etcd`) |

mod archive;
#[cfg(feature = "etcd")]
mod etcd;
mod memory;
#[cfg(feature = "objects")]
mod objects;
#[cfg(feature = "redb")]
mod redb;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sequencer::{Number, SeqId};

use crate::store::check::{CheckError, CheckReport, StoreCheck, check_store};
use crate::store::layout::{self, Layout, LayoutRefusal, Settled};
use crate::store::reader::StoreReader;
use crate::store::stats::StoreStats;
use crate::store::storage::{PartitionId, Storage, StorageError};

pub use archive::ArchiveUse;

/// The default data directory (relative to the working directory).
pub const DEFAULT_DATA_DIR: &str = "sequencer-data";

/// Where a store is: a URL parsed once ([`FromStr`]); see the [module](self) for the forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreUrl {
    /// In memory: nothing is kept after the process ends.
    Memory,
    /// redb in a data directory: the options' ([`OpenOptions::data`]), or its own.
    Redb(Option<PathBuf>),
    /// The PLog on object storage in a local directory (the options' data directory, or its
    /// own), one object per event merged into bundles, the view in redb beside it.
    Objects(Option<PathBuf>),
    /// The PLog on S3 (`s3://BUCKET/PREFIX`, configured from the `AWS_*` variables), the view
    /// in redb in the data directory.
    ObjectsS3(String),
    /// An etcd cluster, `etcd://HOST:PORT,HOST:PORT,...`: shared by many hosts, fenced appends.
    Etcd(String),
}

impl StoreUrl {
    /// The backend's one name: the store's folder, cargo feature and URL scheme.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Redb(_) => "redb",
            Self::Objects(_) | Self::ObjectsS3(_) => "objects",
            Self::Etcd(_) => "etcd",
        }
    }

    /// Whether other hosts may append to the same PLog (etcd, a PLog on S3): an append refused
    /// by the fence then means "actualize and go on", not a bug.
    pub fn shared(&self) -> bool {
        matches!(self, Self::ObjectsS3(_) | Self::Etcd(_))
    }

    /// The local directory that holds the store (redb), or its view and layout (objects):
    /// its own, or `data`. `None` for memory and etcd.
    pub fn local_dir(&self, data: &Path) -> Option<PathBuf> {
        match self {
            Self::Redb(dir) | Self::Objects(dir) => {
                Some(dir.clone().unwrap_or_else(|| data.to_path_buf()))
            }
            Self::ObjectsS3(_) => Some(data.to_path_buf()),
            Self::Memory | Self::Etcd(_) => None,
        }
    }
}

impl FromStr for StoreUrl {
    type Err = OpenError;

    fn from_str(s: &str) -> Result<Self, OpenError> {
        let dir = |rest: &str| (!rest.is_empty()).then(|| PathBuf::from(rest));
        match s {
            "memory" => Ok(Self::Memory),
            "redb" | "embedded" => Ok(Self::Redb(None)),
            "objects" => Ok(Self::Objects(None)),
            _ if s.starts_with("etcd://") => Ok(Self::Etcd(s.to_string())),
            _ if s.starts_with("objects:s3://") => {
                Ok(Self::ObjectsS3(s["objects:".len()..].to_string()))
            }
            _ => match s.split_once(':') {
                Some(("redb", rest)) if dir(rest).is_some() => Ok(Self::Redb(dir(rest))),
                Some(("objects", rest)) if dir(rest).is_some() => Ok(Self::Objects(dir(rest))),
                _ => Err(OpenError::UnknownUrl(s.to_string())),
            },
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Memory => f.write_str("memory"),
            Self::Redb(None) => f.write_str("redb"),
            Self::Redb(Some(dir)) => write!(f, "redb:{}", dir.display()),
            Self::Objects(None) => f.write_str("objects"),
            Self::Objects(Some(dir)) => write!(f, "objects:{}", dir.display()),
            Self::ObjectsS3(url) => write!(f, "objects:{url}"),
            Self::Etcd(url) => f.write_str(url),
        }
    }
}

/// How to open a store. [`OpenOptions::new`] opens an existing store or creates one, with no
/// layout to settle and no archive asked for.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    pub(crate) data: PathBuf,
    pub(crate) layout: Option<Layout>,
    pub(crate) create: bool,
    pub(crate) bundle_events: Option<u64>,
    pub(crate) store_wait: Duration,
    pub(crate) largest_event: Option<usize>,
    pub(crate) archive: ArchiveUse,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenOptions {
    /// Open or create; the data directory [`DEFAULT_DATA_DIR`]; no layout; wait 60 s for a
    /// store that lost its majority (etcd) or answers nothing (S3).
    pub fn new() -> Self {
        Self {
            data: PathBuf::from(DEFAULT_DATA_DIR),
            layout: None,
            create: true,
            bundle_events: None,
            store_wait: Duration::from_secs(60),
            largest_event: None,
            archive: ArchiveUse::default(),
        }
    }

    /// The data directory: the redb store's (`redb`), the object store's (`objects`), or the
    /// view's of a PLog on S3.
    pub fn data(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data = dir.into();
        self
    }

    /// The numbering layout the opener numbers by: recorded in a store that has none, and
    /// compared with the recorded one otherwise (a difference is refused before anything is
    /// written). Without it the store's own record stands and nothing is recorded.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Only an existing store: a missing one is refused instead of created.
    pub fn existing(mut self) -> Self {
        self.create = false;
        self
    }

    /// Events per bundle of a new object store (an existing one keeps its own).
    pub fn bundle_events(mut self, n: u64) -> Self {
        self.bundle_events = Some(n);
        self
    }

    /// How long to wait for a store that lost its majority (etcd), or a PLog on S3 that
    /// answers nothing, before the store reports a failure that stops its users.
    pub fn store_wait(mut self, wait: Duration) -> Self {
        self.store_wait = wait;
        self
    }

    /// The largest event (encoded, [`encoded_len`](crate::store::codec::encoded_len)) the
    /// opener will append: a store that cannot take it in one write is refused at open.
    pub fn largest_event(mut self, bytes: usize) -> Self {
        self.largest_event = Some(bytes);
        self
    }

    /// The store's archive of old PLog events: the recorded one is always used; see
    /// [`ArchiveUse`] to name one or write to it.
    pub fn archive(mut self, archive: ArchiveUse) -> Self {
        self.archive = archive;
        self
    }
}

/// Why a store was not opened. Nothing was written to the store when the open was refused for
/// its options, its layout or its archive.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Not a store URL.
    #[error(
        "unknown store {0:?}: expected memory, redb, redb:DIR, objects, objects:DIR, objects:s3://BUCKET/PREFIX or etcd://HOST:PORT,..."
    )]
    UnknownUrl(String),
    /// The URL names a backend this build was compiled without.
    #[error("store {url}: this build has no {feature} support (cargo feature `{feature}`)")]
    NotBuilt {
        /// The URL.
        url: String,
        /// The cargo feature that adds it.
        feature: &'static str,
    },
    /// The backend cannot do what was asked (read a memory store, archive an object store).
    #[error("store {url}: {what}")]
    Unsupported {
        /// The URL.
        url: String,
        /// What it cannot do.
        what: &'static str,
    },
    /// The store records another numbering layout than the one asked for.
    #[error("{store}: {refusal}")]
    Layout {
        /// The store, in words ("data directory D", "etcd store URL", ...).
        store: String,
        /// The backend (its one name), to say how to start afresh.
        backend: &'static str,
        /// How the layouts differ.
        refusal: LayoutRefusal,
    },
    /// An archive is wanted but the store records none and none was named.
    #[error("store {url}: no archive is recorded for this store: name one to create it")]
    NoArchive {
        /// The URL.
        url: String,
    },
    /// An event as large as [`OpenOptions::largest_event`] does not fit in one write.
    #[error(
        "an event of up to {largest} bytes does not fit in one write of this store (at most {max} bytes)"
    )]
    EventTooLarge {
        /// The largest event asked for.
        largest: usize,
        /// The most one write takes.
        max: usize,
    },
    /// The store could not be reached (etcd: no member answered within the wait).
    #[error("store {url}: the etcd cluster is not available: {error}")]
    Unavailable {
        /// The URL.
        url: String,
        /// What the client said.
        error: StorageError,
    },
    /// The data directory is missing, damaged, in use or not a data directory.
    #[cfg(feature = "redb")]
    #[error(transparent)]
    DataDir(#[from] crate::store::redb::data_dir::DataDirError),
    /// The archive is missing, another one, or does not line up with the store.
    #[cfg(feature = "objects")]
    #[error(transparent)]
    Archive(#[from] crate::store::layers::archive::ArchiveError),
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A backend's live handle, as an open [`Store`] holds it.
trait Backend: Send + Sync {
    /// The store's read side (the hot store, without its archive).
    fn reader(&self) -> &dyn StoreReader;
    /// One line naming the store and what it is.
    fn describe(&self) -> String;
    /// Its counters now.
    fn stats(&self) -> StoreStats;
    /// The store as archive passes trim it (redb, etcd).
    #[cfg(feature = "objects")]
    fn trim(&self) -> Option<&dyn crate::store::layers::Trim> {
        None
    }
    /// The object store's PLog, whose merger a run drains before it checks.
    #[cfg(feature = "objects")]
    fn object_plog(&self) -> Option<&crate::store::objects::ObjectPlog> {
        None
    }
}

/// An open store: the backend, its settled layout and its archive.
pub struct Store {
    url: StoreUrl,
    backend: Box<dyn Backend>,
    layout: Option<Layout>,
    created: bool,
    archive: archive::Opened,
    storage: Arc<dyn Storage>,
}

impl Store {
    /// The store as a [`Driver`](crate::Driver) runs on it: the backend, with its archive
    /// layered under it when it has one (old PLog events read from there).
    pub fn storage(&self) -> Arc<dyn Storage> {
        self.storage.clone()
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

    /// Proves the whole store, its archive included (opened again: another process may have
    /// archived more meanwhile), partition by partition and across partitions, against the
    /// recorded layout ([`check_store`]); an object store's merger error fails it.
    pub fn check(
        &self,
        fallback_initial: impl Fn(SeqId) -> Option<Number>,
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

#[cfg(feature = "objects")]
impl Store {
    /// The store's archive of old PLog events, if it has one (writable if the open asked).
    pub fn archive(&self) -> Option<&crate::store::layers::archive::Archive> {
        self.archive.archive.as_ref()
    }

    /// The store as archive passes trim it (redb and etcd stores).
    pub fn trim(&self) -> Option<&dyn crate::store::layers::Trim> {
        self.backend.trim()
    }

    /// The object store's PLog (whose merger bundles its events), `None` for other stores.
    pub fn object_plog(&self) -> Option<&crate::store::objects::ObjectPlog> {
        self.backend.object_plog()
    }
}

impl Store {
    /// Why the object store's merger stopped, if it did (`None` for other stores).
    pub fn merge_error(&self) -> Option<String> {
        #[cfg(feature = "objects")]
        if let Some(plog) = self.backend.object_plog() {
            return plog.merge_error();
        }
        None
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

/// Opens the store at `url` for numbering: validates the options and the store's records
/// (layout, archive) without writing, then opens or creates it, records the layout in a store
/// that has none, and opens its archive. See the [module](self).
pub fn open(url: &StoreUrl, options: &OpenOptions) -> Result<Store, OpenError> {
    let opened = match url {
        StoreUrl::Memory => memory::open(options)?,
        #[cfg(feature = "redb")]
        StoreUrl::Redb(_) => redb::open(url, options)?,
        #[cfg(feature = "objects")]
        StoreUrl::Objects(_) | StoreUrl::ObjectsS3(_) => objects::open(url, options)?,
        #[cfg(feature = "etcd")]
        StoreUrl::Etcd(_) => etcd::open(url, options)?,
        #[allow(unreachable_patterns)]
        _ => return Err(not_built(url)),
    };
    let Opened {
        backend,
        layout,
        created,
        archive,
        storage,
    } = opened;
    Ok(Store {
        url: url.clone(),
        backend,
        layout,
        created,
        archive,
        storage,
    })
}

/// Opens the store at `url` for reading only, with its recorded archive: what `check` and
/// `inspect` read. Its bytes stay unchanged (a redb store held by a live run, or in need of
/// recovery, is read from a private copy).
pub fn open_reader(
    url: &StoreUrl,
    options: &OpenOptions,
) -> Result<Box<dyn StoreReader + Send + Sync>, OpenError> {
    // Memory and etcd stores need no options.
    #[cfg(not(feature = "redb"))]
    let _ = options;
    match url {
        StoreUrl::Memory => Err(OpenError::Unsupported {
            url: url.to_string(),
            what: "the memory store keeps nothing to read",
        }),
        #[cfg(feature = "redb")]
        StoreUrl::Redb(_) => redb::open_reader(url, options),
        #[cfg(feature = "objects")]
        StoreUrl::Objects(_) | StoreUrl::ObjectsS3(_) => objects::open_reader(url, options),
        #[cfg(feature = "etcd")]
        StoreUrl::Etcd(_) => etcd::open_reader(url),
        #[allow(unreachable_patterns)]
        _ => Err(not_built(url)),
    }
}

/// The refusal of a URL whose backend this build lacks.
fn not_built(url: &StoreUrl) -> OpenError {
    let feature = match url {
        StoreUrl::ObjectsS3(_) => "s3",
        other => other.backend(),
    };
    OpenError::NotBuilt {
        url: url.to_string(),
        feature,
    }
}

/// What a backend's opener hands back.
struct Opened {
    backend: Box<dyn Backend>,
    layout: Option<Layout>,
    created: bool,
    archive: archive::Opened,
    /// The backend with its archive layered under it, if any.
    storage: Arc<dyn Storage>,
}

/// Refuses, before anything is written, an event larger than one write of a store whose
/// append limits are `limits` (see [`OpenOptions::largest_event`]).
fn refuse_large_events(
    options: &OpenOptions,
    limits: crate::store::storage::AppendLimits,
) -> Result<(), OpenError> {
    match options.largest_event {
        Some(largest) if largest > limits.max_bytes => Err(OpenError::EventTooLarge {
            largest,
            max: limits.max_bytes,
        }),
        _ => Ok(()),
    }
}

#[cfg_attr(not(any(feature = "redb", feature = "etcd")), allow(dead_code))]
/// Settles the layout of a store whose record is `recorded` (read before anything was
/// written) against the layout asked for: refuses a difference. `store` names the store.
fn refuse_another(
    recorded: Option<&Layout>,
    options: &OpenOptions,
    store: &dyn Fn() -> String,
    backend: &'static str,
) -> Result<(), OpenError> {
    if let (Some(r), Some(wanted)) = (recorded, &options.layout) {
        layout::settle(Some(r), wanted, &[]).map_err(|refusal| OpenError::Layout {
            store: store(),
            backend,
            refusal,
        })?;
    }
    Ok(())
}

/// After the store is open: the layout it numbers by. A store that records one keeps it (the
/// opener's was compared already); one that records none takes the opener's, unless it holds a
/// partition that layout lacks, through `record` (which answers the layout that holds, for a
/// store where another opener may record first).
fn settle_open(
    recorded: Option<Layout>,
    options: &OpenOptions,
    reader: &dyn StoreReader,
    created: bool,
    store: &dyn Fn() -> String,
    backend: &'static str,
    record: impl FnOnce(&Layout) -> Result<Layout, OpenError>,
) -> Result<Option<Layout>, OpenError> {
    let Some(wanted) = &options.layout else {
        return Ok(recorded);
    };
    let refused = |refusal| OpenError::Layout {
        store: store(),
        backend,
        refusal,
    };
    let held = match &recorded {
        Some(_) => Vec::new(),
        None => reader.partitions()?,
    };
    match layout::settle(recorded.as_ref(), wanted, &held).map_err(refused)? {
        Settled::Recorded => Ok(recorded),
        Settled::Record => {
            let holds = record(wanted)?;
            layout::settle(Some(&holds), wanted, &[]).map_err(refused)?;
            if !created && recorded.is_none() {
                tracing::info!(
                    "{}: recorded the numbering layout ({} partitions) of a store made before layouts were recorded",
                    store(),
                    wanted.partitions
                );
            }
            Ok(Some(holds))
        }
    }
}
