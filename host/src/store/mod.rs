//! Storage: the contract a backend keeps ([`Storage`], [`StoreReader`]), how events are stored
//! ([`codec`]), the numbering [`layout`] a store records and its one rule, the checks
//! ([`check_store`]), the retry policy, opening a store from its URL ([`open`]), reading a
//! store beside its live run ([`live`]), the [`layers`] over any backend, and one folder per
//! backend ([`memory`], `redb`, `etcd`, `objects`), none of which imports another.

pub(crate) mod archive_record;
pub(crate) mod check;
pub mod codec;
#[cfg(feature = "objects")]
pub(crate) mod composed;
pub(crate) mod forward;
#[cfg(any(feature = "redb", feature = "objects"))]
pub(crate) mod fs;
pub mod layout;
pub mod live;
pub(crate) mod open;
pub(crate) mod reader;
pub(crate) mod retry;
pub(crate) mod stats;
pub(crate) mod storage;
pub(crate) mod tail_probe;
#[cfg(feature = "testing")]
pub mod testing;
pub(crate) mod trim;
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

pub use archive_record::{ArchiveError, ArchiveRecord};
pub use check::{CheckError, CheckReport, PlogChecker, StoreCheck, Violation, check_store};
pub use codec::{StoredEvent, encoded_len};
#[cfg(feature = "objects")]
pub use composed::{ObjectReader, ObjectStorage};
pub use layout::{Layout, LayoutRefusal, LayoutSeq};
pub use open::{
    ArchiveUse, DEFAULT_DATA_DIR, OpenError, OpenOptions, Store, StoreCheckError, StoreUrl, open,
    open_reader,
};
pub use reader::StoreReader;
pub use retry::{RetryPolicy, WarnLimiter};
pub use stats::{Counter, StoreStats};
pub use storage::{
    AppendError, AppendLimits, BatchPart, DamageLatch, DamagedEvent, EventBatch, PartitionId,
    PlogPage, Storage, StorageError,
};
pub use tail_probe::{Offsets, TailProbe};
pub use trim::{Trim, Trimmed};
