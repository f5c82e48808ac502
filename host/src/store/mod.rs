//! Storage: the contract a backend keeps ([`Storage`], [`StoreReader`]), how events are stored
//! (the codec), the numbering layout a store records, the checks, the retry policy, the layers
//! over any backend, and one folder per backend.

pub(crate) mod check;
pub(crate) mod codec;
#[cfg(any(feature = "redb", feature = "objects"))]
pub(crate) mod fs;
pub mod layout;
pub(crate) mod reader;
pub(crate) mod retry;
pub(crate) mod storage;
#[cfg(feature = "objects")]
pub(crate) mod view_file;

pub(crate) mod layers;

#[cfg(feature = "etcd")]
pub(crate) mod etcd;
pub(crate) mod memory;
#[cfg(feature = "objects")]
pub(crate) mod objects;
#[cfg(feature = "redb")]
pub(crate) mod redb;

/// The PLog on object storage with the view in redb: a durable store for `run`.
#[cfg(feature = "objects")]
pub type ObjectStorage = objects::Objects<redb::storage::RedbStorage>;

/// An object store root read without writing anything (`check`, `inspect`): the PLog's
/// objects read in place (a scan that reports holes, broken links and conflicting objects,
/// and leaves the leftovers of an interrupted merge where they are), the view through a
/// [`RedbReader`](crate::RedbReader) (in place, or a private copy when live or in need of
/// recovery).
#[cfg(feature = "objects")]
pub type ObjectReader = objects::Objects<redb::reader::RedbReader>;
