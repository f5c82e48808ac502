//! The archive wiring of an open: which archive a store uses (the recorded one, or the one
//! asked for), the line-up check before anything is written, recording a new one, and the
//! archive layered under the store and under its check.

#[cfg(feature = "objects")]
use std::path::Path;
use std::path::PathBuf;

#[cfg(feature = "objects")]
use crate::store::layers::archive::{Archive, ArchiveError, WithArchive, check_lines_up};
use crate::store::reader::StoreReader;
#[cfg(feature = "objects")]
use crate::store::trim::Trim;

use super::error::OpenError;
use super::options::ArchiveUse;
#[cfg(feature = "objects")]
use super::options::OpenOptions;
use super::url::StoreUrl;

/// The archive to use, if any: `recorded` is what the store records; `Ok((root, true))`
/// for the recorded one (which must exist), `(root, false)` for a new one to record.
#[cfg_attr(not(any(feature = "redb", feature = "etcd")), allow(dead_code))]
pub(super) fn choose(
    use_: &ArchiveUse,
    url: &StoreUrl,
    recorded: Option<PathBuf>,
) -> Result<Option<(PathBuf, bool)>, OpenError> {
    if recorded.is_none() && !use_.wanted() {
        return Ok(None);
    }
    #[cfg(feature = "objects")]
    {
        let asked = use_
            .asked
            .as_deref()
            .map(crate::store::layers::archive::absolute);
        match (recorded, asked) {
            (Some(r), Some(a)) if r != a => Err(ArchiveError::Another {
                recorded: r,
                asked: a,
            }
            .into()),
            (Some(r), _) if !r.exists() => Err(ArchiveError::Missing(r).into()),
            (Some(r), _) => Ok(Some((r, true))),
            (None, Some(a)) => Ok(Some((a, false))),
            (None, None) => Err(OpenError::NoArchive {
                url: url.to_string(),
            }),
        }
    }
    #[cfg(not(feature = "objects"))]
    {
        let _ = recorded;
        Err(OpenError::NotBuilt {
            url: url.to_string(),
            feature: "objects",
        })
    }
}

/// Refuses an archive asked of a store that is not archived (memory, objects).
pub(super) fn refuse_for(use_: &ArchiveUse, url: &StoreUrl) -> Result<(), OpenError> {
    if use_.wanted() {
        return Err(OpenError::Unsupported {
            url: url.to_string(),
            what: "only the redb and etcd stores are archived (the object store keeps its PLog in bundles already)",
        });
    }
    Ok(())
}

/// The archive an open store uses, if any.
#[derive(Default)]
pub(super) struct Opened {
    #[cfg(feature = "objects")]
    pub(super) archive: Option<Archive>,
}

impl Opened {
    /// No archive.
    pub(super) fn none() -> Self {
        Self::default()
    }

    /// The store's PLog as one read with the archive under `hot`, the archive opened again
    /// (another process may have archived more since).
    pub(super) fn reopened_over<'a>(
        &self,
        hot: &'a dyn StoreReader,
    ) -> Result<Box<dyn StoreReader + 'a>, OpenError> {
        #[cfg(feature = "objects")]
        if let Some(a) = &self.archive {
            let again = Archive::open(a.root())?;
            return Ok(Box::new(WithArchive::new(hot, Some(again))?));
        }
        Ok(Box::new(hot))
    }
}

/// Before anything is written: an archive that is there must line up with the store as it
/// is on disk (`hot`, read-only).
#[cfg(feature = "objects")]
pub(super) fn check_before_writing(hot: &dyn StoreReader, root: &Path) -> Result<(), OpenError> {
    if root.exists() {
        check_lines_up(hot, &Archive::open(root)?)?;
    }
    Ok(())
}

/// Opens the chosen archive (`root`, whether the store records it) over the open store
/// `hot`: for writing when asked (created if new, then checked to line up), else read-only
/// and checked; a new one is recorded through `record`.
#[cfg(feature = "objects")]
pub(super) fn open_chosen(
    options: &OpenOptions,
    (root, recorded): (PathBuf, bool),
    hot: &dyn Trim,
    record: impl FnOnce(&Path) -> Result<(), OpenError>,
) -> Result<Opened, OpenError> {
    let use_ = &options.archive;
    let archive = if use_.writes || !recorded {
        let bundle_events = (use_.bundle_events)
            .unwrap_or(crate::store::layers::archive::DEFAULT_ARCHIVE_BUNDLE_EVENTS);
        Archive::create_or_open(&root, bundle_events)?
    } else {
        Archive::open(&root)?
    };
    check_lines_up(hot, &archive)?;
    if !recorded {
        record(&root)?;
    }
    Ok(Opened {
        archive: Some(archive),
    })
}

/// Opens the archive a store records, read-only (for `check` and `inspect`).
#[cfg(feature = "objects")]
pub(super) fn open_recorded(recorded: Option<PathBuf>) -> Result<Option<Archive>, OpenError> {
    Ok(crate::store::layers::archive::open_recorded(recorded)?)
}
