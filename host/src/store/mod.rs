//! Storage, stacked as the design reads (docs/DESIGN.md §2), each floor using only those below:
//!
//! - **The contract**: [`Storage`] and its read side [`StoreReader`]; what a backend may add
//!   for a layer ([`Trim`], [`TailProbe`]); the records a store keeps ([`layout`]'s
//!   [`Layout`] and its one rule, [`ArchiveRecord`]); how events are stored ([`codec`]); the
//!   retry policy, the counters, the file helpers and the view file an object store keeps.
//! - **The backends**, one folder each, none importing another or a layer: [`memory`],
//!   `redb`, `etcd`, `objects`.
//! - **The layers** over any backend ([`layers`]): the read-ahead, the own tail, the archive;
//!   a wrapper passes on what it does not change through one macro (`forward.rs`).
//! - **The factory**: [`open`] turns a URL into an open [`Store`]; [`live`] serves its readers
//!   beside a run.
//!
//! Beside them: the checks ([`check_store`]) and the contract suite (`testing`, feature
//! `testing`) read any store through the contract alone.

pub(crate) mod archive_record;
pub(crate) mod check;
pub mod codec;
#[cfg(feature = "objects")]
pub(crate) mod composed;
pub(crate) mod forward;
#[cfg(any(feature = "redb", feature = "objects"))]
pub(crate) mod fs;
#[cfg(any(feature = "etcd", feature = "s3"))]
pub(crate) mod io_runtime;
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
#[cfg(all(feature = "objects", feature = "etcd"))]
pub use composed::EtcdObjects;
#[cfg(feature = "objects")]
pub use composed::{ObjectReader, ObjectStorage};
pub use layout::{Layout, LayoutRefusal, LayoutSeq};
pub use open::{
    ArchiveUse, DEFAULT_DATA_DIR, OpenError, OpenOptions, PlogPlace, Store, StoreCheckError,
    StoreUrl, open, open_reader,
};
pub use reader::StoreReader;
pub use retry::{RetryPolicy, WarnLimiter};
pub use stats::{Counter, StoreStats};
pub use storage::{
    AppendError, AppendLimits, BatchPart, DamageLatch, DamagedEvent, EventBatch, PartitionId,
    PlogPage, Storage, StorageError, StorageFuture,
};
pub use tail_probe::{Offsets, TailProbe};
pub use trim::{Trim, Trimmed};
