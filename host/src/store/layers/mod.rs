//! Layers over any backend: the read-ahead of numbers ([`ReadAhead`]), actualization from the
//! host's own tail ([`OwnTail`], over a store with a [`TailProbe`]), the archive of old PLog
//! events ([`archive`]: bundles, passes, and the archive read under the store), and the trim
//! contract a hot store keeps for the archive ([`Trim`]).

#[cfg(feature = "objects")]
pub mod archive;
pub(crate) mod own_tail;
pub(crate) mod read_ahead;
pub(crate) mod trim;
mod write_watch;

pub use own_tail::{Offsets, OwnTail, TailCounts, TailLimits, TailProbe};
pub use read_ahead::{ReadAhead, ReadCounts};
pub use trim::{Trim, Trimmed};
