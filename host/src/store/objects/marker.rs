//! The object store root's format marker (`FORMAT`: the format of its event objects, the
//! bundle size, and where the PLog is when not in the root), read before anything is written
//! so that a root that is not an object store, or that holds the view of another PLog, is
//! refused untouched.
//!
//! `format=1`: the event objects hold one event each (stores written by older versions);
//! `format=2`: one object per append part (either kind may be there: a format 1 store opened
//! to write is upgraded to 2, then continued with objects of format 2). A release that knows
//! only format 1 refuses a store of format 2 rather than misread it.

use std::fs;
use std::path::Path;

use crate::store::fs::{sync_dir, write_synced};
use crate::store::objects::object::ObjectFormat;
use crate::store::storage::StorageError;

/// The name of the object store root's format marker.
pub const OBJECTS_FORMAT_FILE: &str = "FORMAT";
/// The name of the view database in an object store root.
pub const VIEW_DB_FILE: &str = "view.redb";
const MARKER: &str = "sequencer-objects";

/// The marker's line for event objects of `format`, bundles of `bundle_events` events, the
/// PLog at `plog` (`None`: in the root).
pub(super) fn marker_line(format: ObjectFormat, bundle_events: u64, plog: Option<&str>) -> String {
    let n = format.number();
    match plog {
        Some(url) => format!("{MARKER} format={n} bundle-events={bundle_events} plog={url}\n"),
        None => format!("{MARKER} format={n} bundle-events={bundle_events}\n"),
    }
}

/// What a marker says: the format of the event objects, the bundle size, and where the PLog is
/// when not in the root itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Marker {
    /// The format of the event objects.
    pub(super) format: ObjectFormat,
    /// Events per bundle.
    pub(super) bundle: u64,
    /// Where the PLog is (`s3://BUCKET/PREFIX`), `None` in the root.
    pub(super) plog: Option<String>,
}

/// Parses a marker's text (`what` names it in errors).
pub(super) fn parse_marker(
    text: &str, what: impl Fn(&str) -> StorageError,
) -> Result<Marker, StorageError> {
    let line = text.lines().next().unwrap_or_default();
    let mut words = line.split_whitespace();
    if words.next() != Some(MARKER) {
        return Err(what("is not an object store marker"));
    }
    let words: Vec<&str> = words.collect();
    let format = words
        .iter()
        .find_map(|w| w.strip_prefix("format="))
        .and_then(|v| v.parse().ok())
        .and_then(ObjectFormat::from_number)
        .ok_or_else(|| what("is not an object store marker of format 1 or 2"))?;
    let bundle = words
        .iter()
        .find_map(|w| w.strip_prefix("bundle-events="))
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&n| n >= 2)
        .ok_or_else(|| what("names no bundle size"))?;
    let plog = words
        .iter()
        .find_map(|w| w.strip_prefix("plog="))
        .map(str::to_string);
    Ok(Marker {
        format,
        bundle,
        plog,
    })
}

/// An error about the store at `root`.
pub(super) fn err(root: &Path, what: impl std::fmt::Display) -> StorageError {
    StorageError(format!("object store {}: {what}", root.display()))
}

/// Reads the root's marker: `Ok(None)` when the root is missing, empty, or holds only what an
/// interrupted creation leaves (no marker yet); its bundle size otherwise.
pub(super) fn read_marker(root: &Path) -> Result<Option<Marker>, StorageError> {
    if !root.exists() {
        return Ok(None);
    }
    if !root.is_dir() {
        return Err(err(root, "not a directory"));
    }
    match fs::read_to_string(root.join(OBJECTS_FORMAT_FILE)) {
        Ok(text) => parse_marker(&text, |what| {
            err(root, format!("{OBJECTS_FORMAT_FILE} {what}"))
        })
        .map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let others: Vec<String> = fs::read_dir(root)
                .map_err(|e| err(root, e))?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != VIEW_DB_FILE && !n.starts_with(VIEW_DB_FILE))
                .collect();
            if others.is_empty() {
                Ok(None)
            } else {
                Err(err(
                    root,
                    format!(
                        "not a sequencer object store: it is not empty and has no {OBJECTS_FORMAT_FILE} file"
                    ),
                ))
            }
        }
        Err(e) => Err(err(root, e)),
    }
}

/// Refuses a root whose marker names another PLog than `url` (`None`: the root's own).
pub(super) fn same_plog(root: &Path, m: &Marker, url: Option<&str>) -> Result<(), StorageError> {
    if m.plog.as_deref() == url {
        return Ok(());
    }
    let name = |p: Option<&str>| match p {
        Some(u) => u.to_string(),
        None => format!("the PLog in {}", root.display()),
    };
    Err(err(
        root,
        format!(
            "holds the view of {}, not of {}: give it another data directory",
            name(m.plog.as_deref()),
            name(url)
        ),
    ))
}

/// Writes the marker `m` of a root (a new one, or one upgraded to another format), durably:
/// written aside, synced, renamed into place, then the root and its `parent` synced.
pub(super) fn write_marker(root: &Path, parent: &Path, m: &Marker) -> Result<(), StorageError> {
    let tmp = root.join(format!("{OBJECTS_FORMAT_FILE}.tmp"));
    let line = marker_line(m.format, m.bundle, m.plog.as_deref());
    write_synced(&tmp, line.as_bytes()).map_err(|e| err(root, e))?;
    fs::rename(&tmp, root.join(OBJECTS_FORMAT_FILE)).map_err(|e| err(root, e))?;
    sync_dir(root).map_err(|e| err(root, e))?;
    sync_dir(parent).map_err(|e| err(root, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_names_its_format_and_an_unknown_one_is_refused() {
        let what = |w: &str| StorageError(w.to_string());
        for format in [ObjectFormat::OneEvent, ObjectFormat::Ranges] {
            let line = marker_line(format, 64, Some("s3://b/p"));
            let m = parse_marker(&line, what).expect("a marker");
            assert_eq!(
                (m.format, m.bundle, m.plog.as_deref()),
                (format, 64, Some("s3://b/p"))
            );
        }
        let e = parse_marker("sequencer-objects format=3 bundle-events=8", what).expect_err("3");
        assert!(e.0.contains("format 1 or 2"), "{e}");
    }
}
