//! Layers over any backend: the read-ahead of numbers, the archive of old PLog events, and the
//! trim contract a hot store keeps for the archive.

#[cfg(feature = "objects")]
pub(crate) mod archive;
pub(crate) mod read_ahead;
pub(crate) mod trim;
