//! Stores made of two backends: the object store's PLog with its view in redb; the object
//! store's PLog with its view and ownership on etcd (`etcd_objects.rs`, feature `etcd`).
//! Composed here, so that neither backend imports the other.

#[cfg(feature = "etcd")]
mod etcd_objects;

#[cfg(feature = "etcd")]
pub use etcd_objects::EtcdObjects;

use crate::store::objects::Objects;
use crate::store::redb::{RedbReader, RedbStorage};

/// The PLog on object storage with the view in redb: a durable store for `run`.
pub type ObjectStorage = Objects<RedbStorage>;

/// An object store root read without writing anything (`check`, `inspect`): the PLog's
/// objects read in place (a scan that reports holes, broken links and conflicting objects,
/// and leaves the leftovers of an interrupted merge where they are), the view through a
/// [`RedbReader`] (in place, or a private copy when live or in need of
/// recovery).
pub type ObjectReader = Objects<RedbReader>;
