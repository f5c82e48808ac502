//! Layers over any backend: the read-ahead of numbers, and the archive of old PLog events.

#[cfg(feature = "objects")]
pub(crate) mod archive;
pub(crate) mod read_ahead;
