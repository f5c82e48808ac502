//! Storage: the contract a backend keeps ([`Storage`], [`StoreReader`]), how events are stored
//! ([`codec`]), the numbering [`layout`] a store records and its one rule, the checks
//! ([`check_store`]), the retry policy, opening a store from its URL ([`open`]), the
//! [`layers`] over any backend, and one folder per backend ([`memory`], `redb`, `etcd`,
//! `objects`), none of which imports another.

pub(crate) mod check;
pub mod codec;
#[cfg(any(feature = "redb", feature = "objects"))]
pub(crate) mod fs;
pub mod layout;
pub(crate) mod open;
pub(crate) mod reader;
pub(crate) mod retry;
pub(crate) mod stats;
pub(crate) mod storage;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "objects")]
pub(crate) mod view_file;

pub mod layers;

#[cfg(feature = "etcd")]
pub mod etcd;
pub mod memory;
#[cfg(feature = "objects")]
pub mod objects;
#[cfg(feature = "redb")]
pub mod redb;

pub use check::{CheckError, CheckReport, PlogChecker, StoreCheck, Violation, check_store};
pub use codec::{StoredEvent, encoded_len};
pub use layout::{Layout, LayoutRefusal, LayoutSeq};
pub use open::{
    ArchiveUse, DEFAULT_DATA_DIR, OpenError, OpenOptions, Store, StoreCheckError, StoreUrl, open,
    open_reader,
};
pub use reader::StoreReader;
pub use retry::{RetryPolicy, WarnLimiter};
pub use stats::{Counter, StoreStats};
pub use storage::{
    AppendError, AppendLimits, BatchPart, EventBatch, PartitionId, PlogPage, Storage, StorageError,
};

/// The PLog on object storage with the view in redb: a durable store for `run`.
#[cfg(feature = "objects")]
pub type ObjectStorage = objects::Objects<redb::RedbStorage>;

/// An object store root read without writing anything (`check`, `inspect`): the PLog's
/// objects read in place (a scan that reports holes, broken links and conflicting objects,
/// and leaves the leftovers of an interrupted merge where they are), the view through a
/// [`RedbReader`](redb::RedbReader) (in place, or a private copy when live or in need of
/// recovery).
#[cfg(feature = "objects")]
pub type ObjectReader = objects::Objects<redb::RedbReader>;
