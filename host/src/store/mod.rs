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

pub(crate) mod layers;

#[cfg(feature = "etcd")]
pub(crate) mod etcd;
pub(crate) mod memory;
#[cfg(feature = "objects")]
pub(crate) mod objects;
#[cfg(feature = "redb")]
pub(crate) mod redb;
