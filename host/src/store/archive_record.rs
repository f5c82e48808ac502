//! Where a store's archive of old PLog events is, as the store records it ([`ArchiveRecord`]):
//! one text every backend that can be archived keeps in its own place (a data directory's
//! `ARCHIVE` file, etcd's `archive` key), so that `run`, `check` and `inspect` find the archive
//! without a flag; and what can be wrong with an archive ([`ArchiveError`]). A record format
//! beside [`Layout`](crate::Layout)'s; the archive itself is a layer (`layers::archive`).

use std::path::{Path, PathBuf};

use sequencer::PLogOffset;

use crate::store::storage::{PartitionId, StorageError};

/// The first line of a record.
const RECORD_HEADER: &str = "sequencer-archive-location 1";

/// Where a store's archive is, as recorded with the store.
pub struct ArchiveRecord;

impl ArchiveRecord {
    /// The text recorded: a header line, then `objects:ABSOLUTE_DIR`.
    pub fn to_text(root: &Path) -> String {
        format!("{RECORD_HEADER}\nobjects:{}\n", root.display())
    }

    /// Parses [`to_text`](Self::to_text); `what` names where it was read, for errors.
    pub fn parse(text: &str, what: &str) -> Result<PathBuf, StorageError> {
        let mut lines = text.lines();
        let dir = (lines.next() == Some(RECORD_HEADER))
            .then(|| lines.next())
            .flatten()
            .and_then(|l| l.strip_prefix("objects:"))
            .filter(|d| !d.is_empty());
        dir.map(PathBuf::from).ok_or_else(|| {
            StorageError(format!(
                "{what} is not an archive record (expected {RECORD_HEADER:?} then objects:DIR)"
            ))
        })
    }
}

/// What went wrong with an archive; each message names the archive, the partition, the
/// offsets or the object.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The recorded archive directory is not there.
    #[error(
        "the archive {} recorded for this store is missing: the store's old PLog events are only there; put it back in place",
        .0.display()
    )]
    Missing(PathBuf),
    /// The directory is not an archive, or its format marker is damaged.
    #[error("{} is not a sequencer archive: {detail}", path.display())]
    NotAnArchive {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The store already records another archive.
    #[error(
        "this store's archive is {} (recorded), not {}: archive into the recorded one",
        recorded.display(),
        asked.display()
    )]
    Another {
        /// The recorded archive.
        recorded: PathBuf,
        /// The one asked for.
        asked: PathBuf,
    },
    /// The archive and the hot store do not make one dense PLog, or disagree on an event.
    #[error("the archive {} does not line up with the store: partition {partition}: {detail}", archive.display())]
    DoesNotLineUp {
        /// The archive.
        archive: PathBuf,
        /// The partition.
        partition: PartitionId,
        /// The offsets (and the bundle) involved.
        detail: String,
    },
    /// A bundle could not be written (a conflicting one, a corrupt read-back).
    #[error("archive {}: {error}", archive.display())]
    Bundle {
        /// The archive.
        archive: PathBuf,
        /// What the object store said.
        error: StorageError,
    },
    /// An event to archive fails its checksum: it is damaged, and neither archived nor
    /// trimmed (nor is anything after it in its partition; the pass archived and trimmed
    /// what it could before it, and the other partitions).
    #[error(
        "partition {partition}: event at offset {offset} fails its checksum: not archived, and the store keeps it (`check` lists every damaged event)"
    )]
    Damaged {
        /// The partition.
        partition: PartitionId,
        /// The event's offset.
        offset: PLogOffset,
    },
    /// The hot store or the archive's object store failed.
    #[error("{0}")]
    Storage(#[from] StorageError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_parses_back_to_its_directory_and_anything_else_is_refused_naming_it() {
        let root = Path::new("/data/archive");
        assert_eq!(
            ArchiveRecord::parse(&ArchiveRecord::to_text(root), "ARCHIVE"),
            Ok(root.to_path_buf())
        );
        for text in [
            "",
            "objects:/a\n",
            "sequencer-archive-location 1\nobjects:\n",
        ] {
            let e = ArchiveRecord::parse(text, "key archive").expect_err("refused");
            assert!(
                e.0.starts_with("key archive is not an archive record"),
                "{e}"
            );
        }
    }
}
