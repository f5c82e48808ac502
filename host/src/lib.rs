//! The wasmtime host of the sequencer component, in three rooms:
//!
//! - [`runtime`]: the component compiled once per process and pre-linked ([`Runtime`],
//!   [`RuntimeBuilder`], [`Limits`], [`ComponentCache`]), the one way to link it
//!   ([`runtime::link`]), and the contract's types a caller touches ([`StartOutcome`],
//!   [`NotNowReason`], [`Status`]).
//! - [`driver`]: the task loop ([`Driver`]) that opens one instance per partition
//!   ([`PartitionSequencer`]), performs the storage work the guests begin, delivers outcomes,
//!   and wakes guests at the times they ask for; its clocks ([`Clock`], [`MonotonicClock`],
//!   [`ManualClock`]).
//! - [`store`]: the storage contract ([`Storage`], [`StoreReader`]), the numbering layout a
//!   store records ([`Layout`]), the checks, the layers over any backend, and one folder per
//!   backend ([`MemoryStorage`], `store::redb`, `store::etcd`, `store::objects`).
//!   [`store::open`] turns a store URL into an open store, its layout recorded or compared and
//!   its archive layered under it.
//!
//! Cargo features (all can be on at once):
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `cli` | yes | the `sequencer-host` command (`run`, `inspect`, `check`, `archive`); implies `redb`, `objects`, `bundled-component` |
//! | `redb` | yes (through `cli`) | `store::redb`: the embedded, durable store (`redb:DIR`) |
//! | `objects` (old name `objstore`) | yes (through `cli`) | `store::objects`: the PLog on object storage (`objects:DIR`), the view in redb; the archive layer |
//! | `bundled-component` | yes (through `cli`) | [`Runtime::bundled`]: the component compiled into the crate at build time (needs the `wasm32-wasip2` rustup target then; without it the build goes on with no component and says so) |
//! | `etcd` | no | `store::etcd`: the store on an etcd cluster (`etcd://...`); its gRPC client's build runs `protoc` |
//! | `s3` | no | the object store's PLog on S3 (`objects:s3://BUCKET/PREFIX`); implies `objects` |
//! | `testing` | no | `store::testing`: the contract suite every backend runs, for a `Storage` of one's own |
//!
//! With `default-features = false` the library has the runtime, the driver and
//! [`MemoryStorage`] only.

#![warn(missing_docs)]

/// The README's Rust code blocks, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub mod clock;
pub mod driver;
#[cfg(feature = "etcd")]
pub mod membership;
pub mod rng;
pub mod runtime;
pub mod store;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use driver::{Driver, DriverConfig, PartitionSequencer};
pub use runtime::{
    ComponentCache, HostError, Limits, NotNowReason, Runtime, RuntimeBuilder, StartOutcome, Status,
};
pub use store::memory::MemoryStorage;
pub use store::{
    AppendError, EventBatch, Layout, PartitionId, PlogPage, Storage, StorageError, StoreReader,
};

/// The root names of 0.1, kept for one version as deprecated re-exports: each names where the
/// item lives now. New code reaches them through [`runtime`](crate::runtime),
/// [`driver`](crate::driver) and [`store`](crate::store).
mod deprecated {
    #[deprecated(note = "the generated bindings: use the names in `sequencer_host::runtime`")]
    #[doc(hidden)]
    pub use crate::runtime::bindings;
    #[deprecated(note = "moved to `sequencer_host::runtime::link`")]
    pub use crate::runtime::link;
    #[deprecated(note = "moved to `sequencer_host::store::layout`")]
    pub use crate::store::layout;

    #[deprecated(note = "moved to `sequencer_host::runtime::CacheOutcome`")]
    pub use crate::runtime::CacheOutcome;
    #[deprecated(note = "moved to `sequencer_host::runtime::bundled_component`")]
    pub use crate::runtime::bundled_component;
    #[deprecated(note = "moved to `sequencer_host::runtime::describe`")]
    pub use crate::runtime::describe;
    #[deprecated(note = "moved to `sequencer_host::runtime::link`")]
    pub use crate::runtime::link::{component_path, guest_params, params_from_guest};

    #[deprecated(note = "moved to `sequencer_host::store::codec`")]
    pub use crate::store::codec::{
        decode_event, encode_event, encode_event_into, encode_pack, split_pack,
    };
    #[deprecated(note = "moved to `sequencer_host::store::layers`")]
    pub use crate::store::layers::{ReadAhead, ReadCounts};
    #[deprecated(note = "moved to `sequencer_host::store::memory`")]
    pub use crate::store::memory::{Faults, Gate, WriteRecord};
    #[deprecated(note = "moved to `sequencer_host::store`")]
    pub use crate::store::{
        AppendLimits, BatchPart, CheckReport, LayoutSeq, PlogChecker, RetryPolicy, StoredEvent,
        Violation, WarnLimiter, encoded_len,
    };
    #[deprecated(note = "moved to `sequencer_host::store`")]
    pub use crate::store::{Trim, Trimmed};

    #[cfg(feature = "redb")]
    #[deprecated(note = "moved to `sequencer_host::store::redb`")]
    pub use crate::store::redb::{
        DB_FILE, DB_FORMAT_VERSION, DataDir, DataDirError, DirState, FORMAT_FILE, FORMAT_VERSION,
        LAYOUT_FILE, OpenError, OpenFailure, OpenMode, ReadMode, RedbReader, RedbStorage,
        StoreCounts, StoreStats, TRIM_CHUNK,
    };

    #[cfg(feature = "objects")]
    #[deprecated(note = "moved to `sequencer_host::store::layers::archive`")]
    pub use crate::store::layers::archive::{
        ARCHIVE_RETRY, Archive, ArchivePass, DEFAULT_ARCHIVE_BUNDLE_EVENTS, PassProgress,
        WithArchive, archive_pass, check_lines_up, safe_end,
    };
    #[cfg(feature = "s3")]
    #[deprecated(note = "moved to `sequencer_host::store::objects::s3`")]
    pub use crate::store::objects::s3::{
        Outage, S3_SCHEME, S3Location, S3Objects, connect as connect_s3,
        connect_with as connect_s3_with,
    };
    #[cfg(feature = "objects")]
    #[deprecated(note = "moved to `sequencer_host::store::objects`")]
    pub use crate::store::objects::{
        Access, DEFAULT_BUNDLE_EVENTS, MERGE_PAUSE_ENV, OBJECTS_FORMAT_FILE, ObjectPlog,
        ObjectStats, Objects, PutBundleError, RemoteFailure, RemotePlog, VIEW_DB_FILE,
        bundle_object, event_hash, event_object,
    };
    #[cfg(feature = "objects")]
    #[deprecated(note = "moved to `sequencer_host::store`")]
    pub use crate::store::{ObjectReader, ObjectStorage};

    #[cfg(feature = "etcd")]
    #[deprecated(note = "moved to `sequencer_host::store::etcd`")]
    pub use crate::store::etcd::{
        DEFAULT_MAX_REQUEST_BYTES, EtcdConfig, EtcdStats, EtcdStorage, PACK_MAX_EVENTS,
        PAGE_EVENTS, READS_PER_TXN, VIEW_WS_PER_TXN,
    };
}
#[allow(deprecated)]
pub use deprecated::*;
