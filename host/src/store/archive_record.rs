//! Where a store's archive of old PLog events is, as the store records it ([`ArchiveRecord`]):
//! one text every backend that can be archived keeps in its own place (a data directory's
//! `ARCHIVE` file, etcd's `archive` key), so that `run`, `check` and `inspect` find the archive
//! without a flag. A record format beside [`Layout`](crate::Layout)'s; the archive itself is a
//! layer (`layers::archive`).

use std::path::{Path, PathBuf};

use crate::store::storage::StorageError;

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
