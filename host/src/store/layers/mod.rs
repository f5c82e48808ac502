//! Layers over any backend: the read-ahead of numbers ([`ReadAhead`]), actualization from the
//! host's own tail ([`OwnTail`], over a store with a [`TailProbe`](crate::store::TailProbe)),
//! and the archive of old PLog events ([`archive`]: bundles, passes, and the archive read under
//! the store, which trims a hot store through [`Trim`](crate::store::Trim)).

#[cfg(feature = "objects")]
pub mod archive;
mod counts;
pub(crate) mod own_tail;
pub(crate) mod read_ahead;
mod write_watch;

pub use own_tail::{OwnTail, TailCounts, TailLimits};
pub use read_ahead::{ReadAhead, ReadCounts};
