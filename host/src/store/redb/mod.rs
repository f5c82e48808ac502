//! The embedded, durable store on redb: the store itself, its read-only reader, the data
//! directory that holds it, and the two as the view file of another store's root.

pub(crate) mod data_dir;
pub(crate) mod reader;
pub(crate) mod storage;
#[cfg(feature = "objects")]
pub(crate) mod view_file;
