//! A redb database as the view file of a store that keeps its sequences view in one file of
//! its root (the object store): [`RedbStorage`] for a live store, [`RedbReader`] to read one.

use std::path::Path;

use crate::store::layout::Layout;
use crate::store::redb::open::OpenFailure;
use crate::store::redb::reader::RedbReader;
use crate::store::redb::storage::RedbStorage;
use crate::store::storage::StorageError;
use crate::store::view_file::{Live, LiveViewFile, ReadOnly, ViewFile};

/// The live view: the database opened for writing (redb's lock keeps a second process off it).
impl ViewFile for RedbStorage {
    type Access = Live;

    fn open_view(path: &Path, _layout: Option<Layout>) -> Result<Self, StorageError> {
        Self::open(path).map_err(|e| e.error)
    }
}

impl LiveViewFile for RedbStorage {
    fn create_view(path: &Path) -> Result<(), StorageError> {
        Self::create(path).map(drop)
    }
}

/// The view read without writing: in place, or a private copy when live or in need of
/// recovery.
impl ViewFile for RedbReader {
    type Access = ReadOnly;

    fn open_view(path: &Path, layout: Option<Layout>) -> Result<Self, StorageError> {
        Self::open(path, layout).map_err(|e| match e.failure {
            // Its message says why, not what: the file is in use.
            OpenFailure::LiveRun => StorageError(format!(
                "{}: in use by a live run: {}",
                path.display(),
                e.error.0
            )),
            _ => e.error,
        })
    }
}
