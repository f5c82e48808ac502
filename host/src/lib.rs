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
//! | `objects` (old name `objstore`) | yes (through `cli`) | [`ObjectStorage`]: the PLog on object storage (one object per event, merged into bundles), the view in redb |
//! | `bundled-component` | yes (through `cli`) | [`Runtime::bundled`]: the component compiled into the crate at build time (needs the `wasm32-wasip2` rustup target then; without it the build goes on with no component and says so) |
//! | `etcd` | no | [`EtcdStorage`]: the store on an etcd cluster; its gRPC client's build runs `protoc` |
//! | `s3` | no | the object store's PLog on S3 (`ObjectStorage::open_s3`, `--store objects:s3://BUCKET/PREFIX`); implies `objects` |
//!
//! With `default-features = false` the library has the runtime, the driver and
//! [`MemoryStorage`] only.

#![warn(missing_docs)]

/// The README's Rust code blocks, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub mod driver;
pub mod runtime;
pub mod store;

pub use runtime::{bindings, link};
pub use store::layout;

pub use driver::clock::{Clock, ManualClock, MonotonicClock};
pub use driver::partition::PartitionSequencer;
pub use driver::{Driver, DriverConfig};
pub use runtime::compile_cache::{CacheOutcome, ComponentCache};
pub use runtime::error::{HostError, describe};
pub use runtime::link::{Limits, component_path, guest_params, params_from_guest};
pub use runtime::{Runtime, RuntimeBuilder, bundled_component};
pub use store::check::{CheckReport, PlogChecker, Violation};
pub use store::codec::{
    StoredEvent, decode_event, encode_event, encode_event_into, encode_pack, encoded_len,
    split_pack,
};
#[cfg(feature = "etcd")]
pub use store::etcd::{
    DEFAULT_MAX_REQUEST_BYTES, EtcdConfig, EtcdStats, EtcdStorage, PACK_MAX_EVENTS, PAGE_EVENTS,
    READS_PER_TXN, VIEW_WS_PER_TXN,
};
#[cfg(feature = "redb")]
pub use store::fs::LAYOUT_FILE;
#[cfg(feature = "objects")]
pub use store::layers::archive::{
    ARCHIVE_RECORD_FILE, ARCHIVE_RETRY, Archive, ArchiveError, ArchivePass, ArchiveRecord,
    DEFAULT_ARCHIVE_BUNDLE_EVENTS, PassProgress, Trim, WithArchive, absolute, archive_pass,
    check_lines_up, open_recorded, safe_end,
};
pub use store::layers::read_ahead::{ReadAhead, ReadCounts};
pub use store::layout::{Layout, LayoutSeq};
pub use store::memory::gate::Gate;
pub use store::memory::{Faults, MemoryStorage, WriteRecord};
#[cfg(feature = "s3")]
pub use store::objects::s3::{
    Outage, S3_SCHEME, S3Location, S3Objects, connect as connect_s3,
    connect_with as connect_s3_with,
};
#[cfg(feature = "objects")]
pub use store::objects::{
    Access, DEFAULT_BUNDLE_EVENTS, MERGE_PAUSE_ENV, OBJECTS_FORMAT_FILE, ObjectPlog, ObjectStats,
    Objects, PutBundleError, RemoteFailure, RemotePlog, VIEW_DB_FILE, bundle_object, event_hash,
    event_object,
};
pub use store::reader::StoreReader;
#[cfg(feature = "redb")]
pub use store::redb::data_dir::{
    DB_FILE, DataDir, DataDirError, DirState, FORMAT_FILE, FORMAT_VERSION, OpenMode,
};
#[cfg(feature = "redb")]
pub use store::redb::reader::{ReadMode, RedbReader};
#[cfg(feature = "redb")]
pub use store::redb::storage::{
    DB_FORMAT_VERSION, OpenError, OpenFailure, RedbStorage, StoreCounts, StoreStats, TRIM_CHUNK,
    Trimmed,
};
pub use store::retry::{RetryPolicy, WarnLimiter};
pub use store::storage::{
    AppendError, AppendLimits, BatchPart, EventBatch, PartitionId, PlogPage, Storage, StorageError,
};
#[cfg(feature = "objects")]
pub use store::{ObjectReader, ObjectStorage};
