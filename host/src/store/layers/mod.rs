//! Layers over any backend: the read-ahead of numbers ([`ReadAhead`]), and the archive of old
//! PLog events ([`archive`]: bundles, passes, trim, and the archive read under the store).

#[cfg(feature = "objects")]
pub mod archive;
pub(crate) mod read_ahead;

pub use read_ahead::{ReadAhead, ReadCounts};
