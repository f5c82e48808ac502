//! The embedded, durable store on redb: the store itself, its read-only reader, and the data
//! directory that holds it.

pub(crate) mod data_dir;
pub(crate) mod reader;
pub(crate) mod storage;
