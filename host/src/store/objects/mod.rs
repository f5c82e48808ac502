//! The store with its PLog on object storage ([`ObjectPlog`]) and its sequences view and
//! stored next offsets in a view file beside it ([`Objects`]; with redb, the crate's
//! `ObjectStorage` and `ObjectReader`).
//!
//! ```text
//! ROOT/
//!   FORMAT      one line: "sequencer-objects format=2 bundle-events=N[ plog=s3://BUCKET/PREFIX]"
//!   view.redb   the sequences view and the stored next offsets (redb; its plog table unused)
//!   LAYOUT      the numbering layout, as in a data directory
//!   events/     one object per append part, named by its first offset (see `names`)
//!   bundles/    the merged bundles
//! ```
//!
//! With the PLog on S3 (feature `s3`, `ObjectStorage::open_s3`) `events/` and `bundles/` are
//! under `s3://BUCKET/PREFIX/` beside a `FORMAT` object (the bundle size every host of that PLog
//! uses, created if absent), and ROOT (the run's `--data` directory) keeps the view, the
//! layout and a `FORMAT` file naming the PLog it belongs to (`plog=`).
//!
//! The PLog: `names` (what each object is called), `chain` (the hash chain), `range` (a run of
//! events in one object, decoded: a bundle or an event object alike), `object` (the event
//! objects of either format), `bundle` (the bundle format), `shared` (a handle's state
//! and object I/O), `scan` (opening and rescanning a partition; holes and broken links), `read`
//! (events in order), `merger` (the merger thread), `sweep` (what no merger deleted, under the bundles of a
//! shared PLog), `plog` ([`ObjectPlog`]: open, append,
//! read, bundles). The store: `marker` (the root's `FORMAT`), `remote` (a PLog elsewhere),
//! `pages` (replay pages, read ahead), `store` ([`Objects`]). `s3`: the PLog on S3.

mod bundle;
mod chain;
mod marker;
mod merger;
mod names;
mod object;
mod pages;
mod plog;
mod range;
mod read;
mod remote;
#[cfg(feature = "s3")]
pub mod s3;
mod scan;
mod shared;
mod store;
mod sweep;

pub use chain::event_hash;
pub use marker::{OBJECTS_FORMAT_FILE, VIEW_DB_FILE};
pub use merger::MERGE_PAUSE_ENV;
pub use names::{bundle_object, event_object};
pub use object::{ObjectFormat, WRITE_FORMAT_ENV};
#[cfg(feature = "etcd")]
pub(crate) use pages::{FirstStep, ReadAheadPages, decode_all, read_plog_page};
pub use plog::{
    DEFAULT_BUNDLE_EVENTS, MAX_OBJECT_BYTES, ObjectPlog, PlogOptions, PutBundleError,
    REMOTE_DELETE_DELAY,
};
pub use remote::{RemoteFailure, RemotePlog};
pub use shared::{Access, ObjectStats};
pub use store::Objects;
