//! The archive rule of an open, and the one place of `store::open` that knows whether this build
//! has archives (they are bundles of the object store, feature `objects`): which archive a store
//! uses (the recorded one, or the one asked for), the line-up check before anything is written,
//! recording a new one, and the archive layered under the store, under its readers and under its
//! check. A build without archives refuses one asked for and reads a store without its archive.
//! Only the redb and etcd openers use it.
#![cfg_attr(not(any(feature = "redb", feature = "etcd")), allow(dead_code))]

use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "objects")]
use crate::store::archive_record::ArchiveError;
#[cfg(feature = "objects")]
use crate::store::layers::archive::{
    Archive, DEFAULT_ARCHIVE_BUNDLE_EVENTS, WithArchive, check_lines_up,
};
use crate::store::reader::StoreReader;
use crate::store::storage::Storage;
use crate::store::trim::Trim;

use super::error::OpenError;
use super::options::{ArchiveUse, OpenOptions};
use super::url::StoreUrl;

/// The archive an opener chose before writing anything.
pub(super) enum Chosen {
    /// The store has none and none was asked for (always, in a build without archives).
    None,
    /// This one.
    #[cfg(feature = "objects")]
    Archive {
        /// Its directory.
        root: PathBuf,
        /// Whether the store records it already (else it is recorded once the store is open).
        recorded: bool,
    },
}

/// Chooses the archive of the store at `url`: `read_record` reads what the store records (called
/// only in a build with archives). The recorded one must exist and be the one asked for, if
/// any; a store with none takes the one asked for.
pub(super) fn choose(
    use_: &ArchiveUse, url: &StoreUrl,
    read_record: impl FnOnce() -> Result<Option<PathBuf>, OpenError>,
) -> Result<Chosen, OpenError> {
    #[cfg(feature = "objects")]
    {
        let recorded = read_record()?;
        if recorded.is_none() && !use_.wanted() {
            return Ok(Chosen::None);
        }
        let asked = use_.asked.as_deref().map(absolute);
        match (recorded, asked) {
            (Some(r), Some(a)) if r != a => Err(ArchiveError::Another {
                recorded: r,
                asked: a,
            }
            .into()),
            (Some(r), _) if !r.exists() => Err(ArchiveError::Missing(r).into()),
            (Some(root), _) => Ok(Chosen::Archive {
                root,
                recorded: true,
            }),
            (None, Some(root)) => Ok(Chosen::Archive {
                root,
                recorded: false,
            }),
            (None, None) => Err(OpenError::NoArchive {
                url: url.to_string(),
            }),
        }
    }
    #[cfg(not(feature = "objects"))]
    {
        let _ = read_record;
        match use_.wanted() {
            true => Err(OpenError::NotBuilt {
                url: url.to_string(),
                feature: "objects",
            }),
            false => Ok(Chosen::None),
        }
    }
}

/// Makes an archive path absolute (so the record holds wherever the command was run from).
#[cfg(feature = "objects")]
fn absolute(root: &Path) -> PathBuf {
    std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf())
}

/// Refuses an archive asked of a store that is not archived (memory, objects).
pub(super) fn refuse_for(use_: &ArchiveUse, url: &StoreUrl) -> Result<(), OpenError> {
    if use_.wanted() {
        let what = match url {
            StoreUrl::EtcdObjects { .. } => {
                "the composite store is not archived: its PLog on object storage is in bundles already"
            }
            _ => {
                "only the redb and etcd stores are archived (the object store keeps its PLog in bundles already)"
            }
        };
        return Err(OpenError::Unsupported {
            url: url.to_string(),
            what,
        });
    }
    Ok(())
}

impl Chosen {
    /// Before anything is written: a chosen archive that is there must line up with the store
    /// as it is on disk (`hot`, opened read-only only then). One not yet recorded may not be
    /// made yet, or be what an interrupted creation left (a killed `archive`): opening it for
    /// writing makes it, and nothing is there to line up. A recorded one must be whole.
    #[cfg_attr(not(feature = "objects"), allow(unused_variables))]
    #[cfg_attr(not(feature = "redb"), allow(dead_code))] // only redb's opener checks first
    pub(super) fn check_before_writing<R: StoreReader>(
        &self, hot: impl FnOnce() -> Result<R, OpenError>,
    ) -> Result<(), OpenError> {
        match self {
            Self::None => Ok(()),
            #[cfg(feature = "objects")]
            Self::Archive { root, recorded } => {
                let archive = if *recorded {
                    Some(Archive::open(root)?)
                } else {
                    Archive::open_if_made(root)?
                };
                if let Some(archive) = archive {
                    check_lines_up(&hot()?, &archive)?;
                }
                Ok(())
            }
        }
    }

    /// The open store `hot` with the chosen archive under it, and the archive as the open
    /// [`Store`](super::Store) keeps it: opened for writing when asked (created if new, then checked to line
    /// up), else read-only and checked; a new one is recorded through `record`.
    #[cfg_attr(not(feature = "objects"), allow(unused_variables))]
    pub(super) fn open_under<S: Storage + Trim + Clone>(
        self, options: &OpenOptions, hot: &S, record: impl FnOnce(&Path) -> Result<(), OpenError>,
    ) -> Result<(Opened, Arc<dyn Storage>), OpenError> {
        match self {
            Self::None => Ok((Opened::none(), Arc::new(hot.clone()))),
            #[cfg(feature = "objects")]
            Self::Archive { root, recorded } => {
                let use_ = &options.archive;
                let archive = if use_.writes || !recorded {
                    let bundle_events = use_.bundle_events.unwrap_or(DEFAULT_ARCHIVE_BUNDLE_EVENTS);
                    Archive::create_or_open(&root, bundle_events)?
                } else {
                    Archive::open(&root)?
                };
                check_lines_up(hot, &archive)?;
                if !recorded {
                    record(&root)?;
                }
                let storage = Arc::new(WithArchive::new(hot.clone(), Some(archive.clone()))?);
                let archive = Opened {
                    archive: Some(archive),
                };
                Ok((archive, storage))
            }
        }
    }
}

/// `reader` with the archive its store records (`read_record`), read-only: what `check` and
/// `inspect` read. A build without archives reads the store alone.
pub(super) fn reader_with_recorded<R: StoreReader + Send + Sync + 'static>(
    reader: R, read_record: impl FnOnce() -> Result<Option<PathBuf>, OpenError>,
) -> Result<Box<dyn StoreReader + Send + Sync>, OpenError> {
    #[cfg(feature = "objects")]
    {
        let archive = read_record()?
            .map(|root| Archive::open(&root))
            .transpose()?;
        Ok(Box::new(WithArchive::new(reader, archive)?))
    }
    #[cfg(not(feature = "objects"))]
    {
        let _ = read_record;
        Ok(Box::new(reader))
    }
}

/// The archive an open store uses, if any.
#[derive(Default)]
pub(super) struct Opened {
    #[cfg(feature = "objects")]
    archive: Option<Archive>,
}

impl Opened {
    /// No archive.
    pub(super) fn none() -> Self {
        Self::default()
    }

    /// The archive, if the store has one.
    #[cfg(feature = "objects")]
    pub(super) fn archive(&self) -> Option<&Archive> {
        self.archive.as_ref()
    }

    /// The store's PLog as one read with the archive under `hot`, the archive opened again
    /// (another process may have archived more since).
    pub(super) fn reopened_over<'a>(
        &self, hot: &'a dyn StoreReader,
    ) -> Result<Box<dyn StoreReader + 'a>, OpenError> {
        #[cfg(feature = "objects")]
        if let Some(a) = &self.archive {
            let again = Archive::open(a.root())?;
            return Ok(Box::new(WithArchive::new(hot, Some(again))?));
        }
        Ok(Box::new(hot))
    }
}
