//! The archive of a redb or etcd store's old PLog events, and the trim of the hot store (through
//! the [`Trim`](crate::store::Trim) contract beside `Storage`).
//!
//! An archive is a directory of bundles in the object PLog's bundle format
//! (`store/objects/bundle.rs`), so the same reader reads it:
//!
//! ```text
//! ADIR/
//!   FORMAT                                    "sequencer-archive format=1 bundle-events=N"
//!   bundles/<partition:05>/<first:020>-<last:020>   the events first..=last (aligned, linked)
//! ```
//!
//! [`archive_pass`] copies, per partition, every complete bundle-sized range of events below
//! what is safe to trim (below the stored next offset, where replay starts, and below the
//! PLog's last event, which the append fence continues from), verifies each bundle as written
//! (read back, every hash and the link to the previous bundle) and makes it durable, and only
//! then trims the hot store below the end of the archive. Where the archive is, is recorded
//! with the store ([`ArchiveRecord`](crate::store::ArchiveRecord): the data directory's `ARCHIVE`
//! file, or etcd's `archive` key), so `run`, `check` and `inspect` find it without a flag;
//! [`WithArchive`] reads the archive and the hot store as one PLog and refuses an archive that
//! does not line up.
//!
//! | file | what it holds |
//! |---|---|
//! | `directory.rs` | [`Archive`]: the directory, its `FORMAT` marker and its bundles |
//! | `pass.rs` | [`archive_pass`]: copy what is safe into bundles, then trim the hot store |
//! | `line_up.rs` | [`check_lines_up`]: an archive and a hot store that make one dense PLog |
//! | `with_archive.rs` | [`WithArchive`]: the archive and the hot store read as one PLog |
//!
//! Which archive a store uses, and when one is recorded, is the opener's rule
//! (`store::open`).

mod directory;
mod line_up;
mod pass;
#[cfg(test)]
mod tests;
mod with_archive;

pub use directory::{ARCHIVE_RETRY, Archive, DEFAULT_ARCHIVE_BUNDLE_EVENTS};
pub use line_up::check_lines_up;
pub use pass::{ArchivePass, PassProgress, archive_pass, safe_end};
pub use with_archive::WithArchive;
