//! Why a store was not opened.

use crate::store::layout::LayoutRefusal;
use crate::store::storage::StorageError;

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
    /// An event as large as [`OpenOptions::largest_event`](super::OpenOptions::largest_event) does not fit in one write.
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
    #[error(transparent)]
    Archive(#[from] crate::store::archive_record::ArchiveError),
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}
