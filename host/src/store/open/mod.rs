//! Opening a store from its URL: **the one place that turns a URL into a store**, for a run,
//! `check`, `inspect`, `archive` and an embedder alike.
//!
//! [`open`] validates every option and the store's records before it writes anything, then
//! opens (or creates) the store, settles its numbering layout by the one rule
//! ([`layout::settle`]: record it in a new store, refuse any difference), and layers the
//! store's archive over it when one is recorded or asked for. [`open_reader`] opens the same
//! URLs for reading only, leaving the store's bytes unchanged.
//!
//! | URL | store |
//! |---|---|
//! | `memory` | [`MemoryStorage`](crate::store::memory::MemoryStorage): nothing kept |
//! | `redb` (old name `embedded`), `redb:DIR` | redb in the data directory (`OpenOptions::data`) or DIR |
//! | `objects`, `objects:DIR` | the PLog on object storage in the data directory or DIR, the view in redb beside it |
//! | `objects:s3://BUCKET/PREFIX` | the PLog on S3 (feature `s3`), the view in the data directory |
//! | `etcd://HOST:PORT,HOST:PORT,...` | an etcd cluster shared by many hosts (feature `etcd`) |
//! | `etcd://HOST:PORT,...?plog=objects:DIR` | the composite store for many hosts (features `etcd`, `objects`): the PLog on object storage in DIR, the view, the stored next offsets, the owners and the layout on the etcd cluster |
//! | `etcd://HOST:PORT,...?plog=objects:s3://BUCKET/PREFIX` | the same with the PLog on S3 (and feature `s3`) |

mod archive;
mod error;
#[cfg(feature = "etcd")]
mod etcd;
#[cfg(all(feature = "etcd", feature = "objects"))]
mod etcd_objects;
#[cfg(feature = "redb")]
mod live;
mod memory;
#[cfg(feature = "objects")]
mod objects;
mod options;
#[cfg(feature = "redb")]
mod redb;
mod settle;
mod store;
mod url;

pub use error::OpenError;
pub use options::{ArchiveUse, DEFAULT_DATA_DIR, OpenOptions};
pub use store::{Store, StoreCheckError};
pub use url::{PlogPlace, StoreUrl};

use crate::store::reader::StoreReader;

/// Opens the store at `url` for numbering: validates the options and the store's records
/// (layout, archive) without writing, then opens or creates it, records the layout in a store
/// that has none, and opens its archive. See the [module](crate::store::open).
pub fn open(url: &StoreUrl, options: &OpenOptions) -> Result<Store, OpenError> {
    let opened = match url {
        StoreUrl::Memory => memory::open(options)?,
        #[cfg(feature = "redb")]
        StoreUrl::Redb(_) => redb::open(url, options)?,
        #[cfg(feature = "objects")]
        StoreUrl::Objects(_) | StoreUrl::ObjectsS3(_) => objects::open(url, options)?,
        #[cfg(feature = "etcd")]
        StoreUrl::Etcd(_) => etcd::open(url, options)?,
        #[cfg(all(feature = "etcd", feature = "objects"))]
        StoreUrl::EtcdObjects { .. } => etcd_objects::open(url, options)?,
        #[allow(unreachable_patterns)]
        _ => return Err(settle::not_built(url)),
    };
    Ok(Store::new(url, opened, options.own_tail))
}

/// Opens the store at `url` for reading only, with its recorded archive: what `check` and
/// `inspect` read. Its bytes stay unchanged: a redb store held by a live run is read from the
/// snapshots that run serves on its data directory's socket ([`store::live`](crate::store::live);
/// a private copy when no run answers there), one in need of recovery from a private copy.
pub fn open_reader(
    url: &StoreUrl, options: &OpenOptions,
) -> Result<Box<dyn StoreReader + Send + Sync>, OpenError> {
    // Memory and etcd stores need no options.
    #[cfg(not(feature = "redb"))]
    let _ = options;
    match url {
        StoreUrl::Memory => Err(OpenError::Unsupported {
            url: url.to_string(),
            what: "the memory store keeps nothing to read",
        }),
        #[cfg(feature = "redb")]
        StoreUrl::Redb(_) => redb::open_reader(url, options),
        #[cfg(feature = "objects")]
        StoreUrl::Objects(_) | StoreUrl::ObjectsS3(_) => objects::open_reader(url, options),
        #[cfg(feature = "etcd")]
        StoreUrl::Etcd(_) => etcd::open_reader(url),
        #[cfg(all(feature = "etcd", feature = "objects"))]
        StoreUrl::EtcdObjects { .. } => etcd_objects::open_reader(url),
        #[allow(unreachable_patterns)]
        _ => Err(settle::not_built(url)),
    }
}
