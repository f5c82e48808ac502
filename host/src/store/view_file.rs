//! A store's sequences view (and its stored next offsets) kept in one file of the store's
//! root, as the object store keeps it beside its PLog: what such a store needs of that file.
//! A backend implements [`LiveViewFile`] for its live store and [`ViewFile`] for its
//! read-only reader; the store that keeps the file names neither.

use std::path::Path;

use crate::store::layout::Layout;
use crate::store::reader::StoreReader;
use crate::store::storage::{Storage, StorageError};

/// The access of a view opened to be written: a live store's.
#[derive(Clone, Copy, Debug)]
pub enum Live {}

/// The access of a view opened for reading only (`check`, `inspect`): its file is not changed.
#[derive(Clone, Copy, Debug)]
pub enum ReadOnly {}

/// A sequences view and its stored next offsets, kept in one file.
pub trait ViewFile: StoreReader + Sized {
    /// What opening the file gives: [`Live`] (a handle that writes) or [`ReadOnly`].
    type Access;

    /// Opens the existing view file at `path`; `layout` is the numbering layout recorded
    /// beside it, if any. A [`Live`] view keeps other processes off the file while it is open
    /// (a second open is refused); a [`ReadOnly`] one changes nothing in it.
    fn open_view(path: &Path, layout: Option<Layout>) -> Result<Self, StorageError>;
}

/// A view file a live store reads and writes through [`Storage`] (numbers, stored next
/// offsets, and its failure), and creates when the store is created.
pub trait LiveViewFile: ViewFile<Access = Live> + Storage {
    /// Creates an empty view file at `path` (where nothing may be) and closes it again.
    fn create_view(path: &Path) -> Result<(), StorageError>;
}
