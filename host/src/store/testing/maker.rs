//! What a backend gives the suite: fresh stores, a reopen for the durable, a reader.

use crate::store::reader::StoreReader;
use crate::store::storage::{Storage, StorageError};

/// Makes the stores the suite checks, all of one backend.
pub trait StoreMaker {
    /// The store checked.
    type Store: Storage;

    /// Names the backend in the report and in a failure (for example "redb in a temp dir").
    fn name(&self) -> String;

    /// A new, empty store: no PLog event, no view row and no stored offset in any partition.
    /// Each check runs on a store of its own. A backend on a shared service empties it (or
    /// picks a new place in it) here.
    fn fresh(&mut self) -> Result<Self::Store, StorageError>;

    /// Closes `store` (every handle to it is dropped) and opens the same store again, for
    /// the durability check. `None` (the default): the store keeps nothing once closed, and
    /// that check is skipped (the report says so).
    fn reopen(&mut self, store: Self::Store) -> Option<Result<Self::Store, StorageError>> {
        drop(store);
        None
    }

    /// A reader of `store` as it is now (the store itself when it implements [`StoreReader`],
    /// or a read-only view of it); called again each time the suite reads, so a reader that
    /// takes a snapshot sees the latest writes. `None` (the default): the store has no
    /// reader, and the checks that read through one (payloads, the reader's answers) are
    /// skipped.
    fn reader<'s>(
        &'s self, store: &'s Self::Store,
    ) -> Option<Result<Box<dyn StoreReader + 's>, StorageError>> {
        let _ = store;
        None
    }
}
