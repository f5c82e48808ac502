//! `memory`: nothing to validate, nothing kept.

use std::sync::Arc;

use crate::store::memory::MemoryStorage;
use crate::store::reader::StoreReader;
use crate::store::stats::StoreStats;
use crate::store::storage::Storage;

use super::archive;
use super::error::OpenError;
use super::options::OpenOptions;
use super::settle;
use super::store::{Backend, Opened};
use super::url::StoreUrl;

impl Backend for MemoryStorage {
    fn reader(&self) -> &dyn StoreReader {
        self
    }

    fn describe(&self) -> String {
        "memory (nothing kept)".into()
    }

    fn stats(&self) -> StoreStats {
        StoreStats::default()
    }
}

/// A new, empty store in memory (its layout is the opener's: there is nothing to compare).
pub(super) fn open(options: &OpenOptions) -> Result<Opened, OpenError> {
    archive::refuse_for(&options.archive, &StoreUrl::Memory)?;
    let store = MemoryStorage::new();
    settle::refuse_large_events(options, store.append_limits())?;
    // A new store: the opener's layout is recorded, in memory.
    let layout = settle::settle_open(
        None,
        options,
        &store,
        true,
        &|| "memory".into(),
        "memory",
        |l| Ok(l.clone()),
    )?;
    Ok(Opened {
        storage: Arc::new(store.clone()),
        backend: std::sync::Arc::new(store),
        layout,
        created: true,
        archive: archive::Opened::none(),
    })
}
