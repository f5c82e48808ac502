//! The embedded, durable store on redb: the store itself ([`RedbStorage`]: group commit,
//! fenced appends), one consistent state of it read while it runs ([`RedbSnapshot`]), its
//! read-only reader ([`RedbReader`]), the data directory that holds it
//! ([`DataDir`]), and the two as the view file of an object store's root. Open it with
//! [`store::open`](crate::store::open) (`redb:DIR`) to have its layout and archive record kept.

pub(crate) mod data_dir;
pub(crate) mod integrity;
pub(crate) mod open;
pub(crate) mod reader;
pub(crate) mod reads;
pub(crate) mod snapshot;
pub(crate) mod source;
pub(crate) mod stats;
pub(crate) mod storage;
pub(crate) mod tables;
#[cfg(feature = "objects")]
pub(crate) mod view_file;
pub(crate) mod writer;

pub use crate::store::fs::LAYOUT_FILE;
pub use data_dir::{
    ARCHIVE_RECORD_FILE, DB_FILE, DataDir, DataDirError, DirState, FORMAT_FILE, FORMAT_VERSION,
    OpenMode,
};
pub use open::{CACHE_BYTES, OpenError, OpenFailure};
pub use reader::{ReadMode, RedbReader};
pub use snapshot::RedbSnapshot;
pub use stats::{StoreCounts, StoreStats};
pub use storage::RedbStorage;
pub use tables::DB_FORMAT_VERSION;
pub use writer::TRIM_CHUNK;
