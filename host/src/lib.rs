//! The wasmtime host of the sequencer component.
//!
//! - [`Runtime`] compiles the component once per process and pre-links it, through the
//!   [`link`] module every embedding of the component shares.
//! - [`Driver`] is the task loop: it opens one instance per partition ([`PartitionSequencer`]),
//!   performs the storage work the guests begin, delivers outcomes, and wakes guests at the
//!   times they ask for (retries with backoff, replay hold-back).
//! - [`Storage`] is what the host needs from storage; [`MemoryStorage`] keeps it in memory,
//!   [`RedbStorage`] durably in an embedded redb database inside a [`DataDir`], [`EtcdStorage`]
//!   on an etcd cluster shared by many hosts (fenced appends), [`ObjectStorage`] with the PLog
//!   on object storage (one object per event, merged into bundles by a merger thread). A
//!   command processor appends an
//!   [`EventBatch`] with one durable write ([`Storage::append_events`]); [`ReadAhead`] reads a
//!   batch's numbers in one go.
//! - [`Clock`]: [`MonotonicClock`] in production, [`ManualClock`] in tests.
//!
//! Cargo features (all can be on at once):
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `cli` | yes | the `sequencer-host` command (`run`, `inspect`, `check`); implies `redb` |
//! | `redb` | yes (through `cli`) | [`RedbStorage`] and [`DataDir`]: the embedded, durable store |
//! | `objstore` | yes (through `cli`) | [`ObjectStorage`]: the PLog on object storage (one object per event, merged into bundles), the view in redb |
//! | `bundled-component` | yes (through `cli`) | [`Runtime::bundled`]: the component compiled into the crate at build time (needs the `wasm32-wasip2` rustup target then; without it the build goes on with no component and says so) |
//! | `etcd` | no | [`EtcdStorage`]: the store on an etcd cluster; its gRPC client's build runs `protoc` |
//! | `s3` | no | the object store's PLog on S3 (`ObjectStorage::open_s3`, `--store objects:s3://BUCKET/PREFIX`); implies `objstore` |
//!
//! With `default-features = false` the library has the runtime, the driver and
//! [`MemoryStorage`] only.

#![warn(missing_docs)]

/// The README's Rust code blocks, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

#[cfg(feature = "objstore")]
mod archive;
#[allow(missing_docs)] // generated from the WIT, whose doc comments it carries
pub mod bindings;
mod clock;
mod compile_cache;
#[cfg(feature = "redb")]
mod data_dir;
mod driver;
mod error;
#[cfg(feature = "etcd")]
mod etcd_quorum;
#[cfg(feature = "etcd")]
mod etcd_storage;
mod event_codec;
mod gate;
pub mod layout;
pub mod link;
mod memory;
#[cfg(feature = "objstore")]
mod object_plog;
#[cfg(feature = "objstore")]
mod object_storage;
mod partition;
mod plog_check;
mod read_ahead;
#[cfg(feature = "redb")]
mod redb_reader;
#[cfg(feature = "redb")]
mod redb_storage;
mod retry;
mod runtime;
#[cfg(feature = "s3")]
mod s3;
mod spin;
mod state;
mod storage;
mod store_reader;

#[cfg(feature = "objstore")]
pub use archive::{
    ARCHIVE_RECORD_FILE, ARCHIVE_RETRY, Archive, ArchiveError, ArchivePass, ArchiveRecord,
    DEFAULT_ARCHIVE_BUNDLE_EVENTS, PassProgress, Trim, WithArchive, absolute, archive_pass,
    check_lines_up, open_recorded, safe_end,
};
pub use clock::{Clock, ManualClock, MonotonicClock};
pub use compile_cache::{CacheOutcome, ComponentCache};
#[cfg(feature = "redb")]
pub use data_dir::{
    DB_FILE, DataDir, DataDirError, DirState, FORMAT_FILE, FORMAT_VERSION, LAYOUT_FILE, OpenMode,
};
pub use driver::{Driver, DriverConfig};
pub use error::{HostError, describe};
#[cfg(feature = "etcd")]
pub use etcd_storage::{
    DEFAULT_MAX_REQUEST_BYTES, EtcdConfig, EtcdStats, EtcdStorage, PACK_MAX_EVENTS, PAGE_EVENTS,
    READS_PER_TXN, VIEW_WS_PER_TXN,
};
pub use event_codec::{
    StoredEvent, decode_event, encode_event, encode_event_into, encode_pack, encoded_len,
    split_pack,
};
pub use gate::Gate;
pub use layout::{Layout, LayoutSeq};
pub use link::{Limits, component_path, guest_params, params_from_guest};
pub use memory::{Faults, MemoryStorage, WriteRecord};
#[cfg(feature = "objstore")]
pub use object_plog::{
    Access, DEFAULT_BUNDLE_EVENTS, MERGE_PAUSE_ENV, ObjectPlog, ObjectStats, PutBundleError,
    bundle_object, event_hash, event_object,
};
#[cfg(feature = "objstore")]
pub use object_storage::{
    OBJECTS_FORMAT_FILE, ObjectReader, ObjectStorage, Objects, RemoteFailure, RemotePlog,
    VIEW_DB_FILE,
};
pub use partition::PartitionSequencer;
pub use plog_check::{CheckReport, PlogChecker, Violation};
pub use read_ahead::{ReadAhead, ReadCounts};
#[cfg(feature = "redb")]
pub use redb_reader::{ReadMode, RedbReader};
#[cfg(feature = "redb")]
pub use redb_storage::{
    DB_FORMAT_VERSION, OpenError, OpenFailure, RedbStorage, StoreCounts, StoreStats, TRIM_CHUNK,
    Trimmed,
};
pub use retry::{RetryPolicy, WarnLimiter};
pub use runtime::{Runtime, RuntimeBuilder, bundled_component};
#[cfg(feature = "s3")]
pub use s3::{
    Outage, S3_SCHEME, S3Location, S3Objects, connect as connect_s3,
    connect_with as connect_s3_with,
};
pub use storage::{
    AppendError, AppendLimits, BatchPart, EventBatch, PartitionId, PlogPage, Storage, StorageError,
};
pub use store_reader::StoreReader;
