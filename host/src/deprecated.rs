//! The root names of 0.1, kept for one version as deprecated re-exports: each names where the
//! item lives now. New code reaches them through [`runtime`](crate::runtime),
//! [`driver`](crate::driver) and [`store`](crate::store).

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
pub use crate::store::layers::{ReadAhead, ReadCounts, Trim, Trimmed};
#[deprecated(note = "moved to `sequencer_host::store::memory`")]
pub use crate::store::memory::{Faults, Gate, WriteRecord};
#[deprecated(note = "moved to `sequencer_host::store`")]
pub use crate::store::{
    AppendLimits, BatchPart, CheckReport, LayoutSeq, PlogChecker, RetryPolicy, StoredEvent,
    Violation, WarnLimiter, encoded_len,
};

#[cfg(feature = "redb")]
#[deprecated(note = "moved to `sequencer_host::store::redb`")]
pub use crate::store::redb::{
    DB_FILE, DB_FORMAT_VERSION, DataDir, DataDirError, DirState, FORMAT_FILE, FORMAT_VERSION,
    LAYOUT_FILE, OpenError, OpenFailure, OpenMode, ReadMode, RedbReader, RedbStorage, StoreCounts,
    StoreStats, TRIM_CHUNK,
};

#[cfg(feature = "objects")]
#[deprecated(note = "moved to `sequencer_host::store::layers::archive`")]
pub use crate::store::layers::archive::{
    ARCHIVE_RECORD_FILE, ARCHIVE_RETRY, Archive, ArchiveError, ArchivePass, ArchiveRecord,
    DEFAULT_ARCHIVE_BUNDLE_EVENTS, PassProgress, WithArchive, absolute, archive_pass,
    check_lines_up, open_recorded, safe_end,
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
    Access, DEFAULT_BUNDLE_EVENTS, MERGE_PAUSE_ENV, OBJECTS_FORMAT_FILE, ObjectPlog, ObjectStats,
    Objects, PutBundleError, RemoteFailure, RemotePlog, VIEW_DB_FILE, bundle_object, event_hash,
    event_object,
};
#[cfg(feature = "objects")]
#[deprecated(note = "moved to `sequencer_host::store`")]
pub use crate::store::{ObjectReader, ObjectStorage};

#[cfg(feature = "etcd")]
#[deprecated(note = "moved to `sequencer_host::store::etcd`")]
pub use crate::store::etcd::{
    DEFAULT_MAX_REQUEST_BYTES, EtcdConfig, EtcdStats, EtcdStorage, PACK_MAX_EVENTS, PAGE_EVENTS,
    READS_PER_TXN, VIEW_WS_PER_TXN,
};
