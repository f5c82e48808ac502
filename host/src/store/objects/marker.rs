//! The object store root's format marker (`FORMAT`: the bundle size, and where the PLog is
//! when not in the root), read before anything is written so that a root that is not an
//! object store, or that holds the view of another PLog, is refused untouched.

use std::fs;
use std::path::Path;

use crate::store::fs::{sync_dir, write_synced};
use crate::store::storage::StorageError;

/// The name of the object store root's format marker.
pub const OBJECTS_FORMAT_FILE: &str = "FORMAT";
/// The name of the view database in an object store root.
pub const VIEW_DB_FILE: &str = "view.redb";
const MARKER: &str = "sequencer-objects";

/// The marker's line for bundles of `bundle_events` events, the PLog at `plog` (`None`: in
/// the root).
pub(super) fn marker_line(bundle_events: u64, plog: Option<&str>) -> String {
    match plog {
        Some(url) => format!("{MARKER} format=1 bundle-events={bundle_events} plog={url}\n"),
        None => format!("{MARKER} format=1 bundle-events={bundle_events}\n"),
    }
}

/// What a marker says: the bundle size, and where the PLog is when not in the root itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Marker {
    /// Events per bundle.
    pub(super) bundle: u64,
    /// Where the PLog is (`s3://BUCKET/PREFIX`), `None` in the root.
    pub(super) plog: Option<String>,
}

/// Parses a marker's text (`what` names it in errors).
pub(super) fn parse_marker(
    text: &str,
    what: impl Fn(&str) -> StorageError,
) -> Result<Marker, StorageError> {
    let line = text.lines().next().unwrap_or_default();
    let mut words = line.split_whitespace();
    if words.next() != Some(MARKER) || !line.contains("format=1") {
        return Err(what("is not an object store marker of format 1"));
    }
    let words: Vec<&str> = words.collect();
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
    Ok(Marker { bundle, plog })
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

/// Writes the marker of a new root (bundles of `bundle` events, the PLog at `plog`, `None`: in
/// the root), durably: written aside, synced, renamed into place, then the root and its
/// `parent` synced.
pub(super) fn write_marker(
    root: &Path,
    parent: &Path,
    bundle: u64,
    plog: Option<&str>,
) -> Result<(), StorageError> {
    let tmp = root.join(format!("{OBJECTS_FORMAT_FILE}.tmp"));
    write_synced(&tmp, marker_line(bundle, plog).as_bytes()).map_err(|e| err(root, e))?;
    fs::rename(&tmp, root.join(OBJECTS_FORMAT_FILE)).map_err(|e| err(root, e))?;
    sync_dir(root).map_err(|e| err(root, e))?;
    sync_dir(parent).map_err(|e| err(root, e))
}
