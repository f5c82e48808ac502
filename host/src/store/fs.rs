//! Small file helpers every store that keeps files in a directory uses (the redb data
//! directory, the object store's root, the archive): write a file durably, sync a directory,
//! and read or record the numbering layout's `LAYOUT` file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::store::layout::Layout;

/// The name of the file that records the numbering layout ([`Layout`]) in a store's directory.
pub const LAYOUT_FILE: &str = "LAYOUT";

/// A file operation that failed; the message names the path and what was being done.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A file-system operation failed.
    #[error("cannot {action} {}: {error}", path.display())]
    Io {
        /// Where.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        error: std::io::Error,
    },
    /// A `LAYOUT` file that does not hold a layout.
    #[error("corrupt data directory {}: {detail}", path.display())]
    CorruptLayout {
        /// The file.
        path: PathBuf,
        /// Why it is not a layout.
        detail: String,
    },
}

/// Names a failed `action` on `path`.
pub(crate) fn io(path: &Path, action: &'static str) -> impl FnOnce(std::io::Error) -> FileError {
    let path = path.to_path_buf();
    move |error| FileError::Io {
        path,
        action,
        error,
    }
}

/// Creates (or truncates) the file at `path` holding `bytes`, synced before it returns. Its
/// directory is not synced: a caller that renames the file into place syncs it after.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let mut f = fs::File::create(path).map_err(io(path, "create"))?;
    f.write_all(bytes).map_err(io(path, "write"))?;
    f.sync_all().map_err(io(path, "sync"))
}

/// Syncs the directory at `path`, so that the names created or renamed in it are durable.
pub(crate) fn sync_dir(path: &Path) -> Result<(), FileError> {
    fs::File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(io(path, "sync directory"))
}

/// The numbering layout recorded in the directory `dir`, read without writing anything;
/// `None` if none is recorded. A record that cannot be read is [`FileError::CorruptLayout`].
pub(crate) fn read_layout(dir: &Path) -> Result<Option<Layout>, FileError> {
    let file = dir.join(LAYOUT_FILE);
    let text = match fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(&file, "read")(e)),
    };
    Layout::parse(&text)
        .map(Some)
        .map_err(|detail| FileError::CorruptLayout { path: file, detail })
}

/// Records `layout` in the directory `dir`, durably: written aside, synced, renamed into
/// place, then the directory synced.
pub(crate) fn record_layout(dir: &Path, layout: &Layout) -> Result<(), FileError> {
    let tmp = dir.join(format!("{LAYOUT_FILE}.tmp"));
    write_synced(&tmp, layout.to_text().as_bytes())?;
    fs::rename(&tmp, dir.join(LAYOUT_FILE)).map_err(io(dir, "record the layout in"))?;
    sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::layout::LayoutSeq;

    #[test]
    fn a_recorded_layout_reads_back_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().expect("a folder");
        assert!(read_layout(dir.path()).expect("read").is_none());
        let layout = Layout {
            partitions: 4,
            kind: 1,
            sequences: vec![LayoutSeq {
                id: 1,
                name: "wlog-offset".into(),
                initial: 1,
            }],
        };
        record_layout(dir.path(), &layout).expect("record");
        assert_eq!(read_layout(dir.path()).expect("read"), Some(layout));
        assert!(!dir.path().join(format!("{LAYOUT_FILE}.tmp")).exists());
    }

    #[test]
    fn a_layout_file_that_is_not_a_layout_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().expect("a folder");
        write_synced(&dir.path().join(LAYOUT_FILE), b"not a layout\n").expect("write");
        let e = read_layout(dir.path()).expect_err("refused");
        assert!(matches!(e, FileError::CorruptLayout { .. }), "{e}");
        assert!(e.to_string().contains(LAYOUT_FILE), "{e}");
    }
}
