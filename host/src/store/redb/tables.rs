//! The database's schema: its tables and its format record (the table in the module's doc),
//! made in a new file and checked in an existing one; and how a failure names the file.

use std::path::Path;

use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError, WriteTransaction};
use sequencer::PLogOffset;

use crate::store::storage::{PartitionId, StorageError};

/// The format version of the database this build reads and writes.
pub const DB_FORMAT_VERSION: u64 = 1;

pub(super) const PLOG: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("plog");
pub(super) const SEQUENCES: TableDefinition<(u32, u64, u16), u64> =
    TableDefinition::new("sequences");
pub(super) const NEXT_OFFSET: TableDefinition<u32, u64> = TableDefinition::new("next_offset");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const FORMAT_KEY: &str = "format";

/// `what` failed on the database at `path` with `e`, in one line naming the file.
pub(crate) fn err(path: &Path, what: &str, e: impl std::fmt::Display) -> StorageError {
    StorageError(format!("{}: {what}: {e}", path.display()))
}

/// Makes the empty tables and the format record of a new database.
pub(super) fn create_tables(tx: &WriteTransaction) -> Result<(), redb::Error> {
    tx.open_table(PLOG)?;
    tx.open_table(SEQUENCES)?;
    tx.open_table(NEXT_OFFSET)?;
    tx.open_table(META)?.insert(FORMAT_KEY, DB_FORMAT_VERSION)?;
    Ok(())
}

/// Refuses a database that is not a sequencer database of this build's format.
pub(crate) fn check_format(db: &impl ReadableDatabase, path: &Path) -> Result<(), StorageError> {
    let version = (|| -> Result<Option<u64>, redb::Error> {
        let rx = db.begin_read()?;
        let meta = match rx.open_table(META) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        rx.open_table(PLOG)?;
        rx.open_table(SEQUENCES)?;
        rx.open_table(NEXT_OFFSET)?;
        Ok(meta.get(FORMAT_KEY)?.map(|v| v.value()))
    })()
    .map_err(|e| err(path, "not a sequencer database", e))?;
    match version {
        Some(DB_FORMAT_VERSION) => Ok(()),
        Some(v) => Err(StorageError(format!(
            "{}: database format {v} is not supported (this build reads format {DB_FORMAT_VERSION})",
            path.display()
        ))),
        None => Err(StorageError(format!(
            "{}: not a sequencer database: it has no format record",
            path.display()
        ))),
    }
}

/// The first and last offsets of partition `p`'s events in the PLog table `plog`, `None` if it
/// holds none.
pub(super) fn plog_bounds_in(
    plog: &impl ReadableTable<(u32, u64), &'static [u8]>, p: PartitionId,
) -> Result<Option<(PLogOffset, PLogOffset)>, redb::Error> {
    let mut range = plog.range((p, 0)..=(p, u64::MAX))?;
    let first = match range.next() {
        Some(r) => r?.0.value().1,
        None => return Ok(None),
    };
    let last = match range.next_back() {
        Some(r) => r?.0.value().1,
        None => first,
    };
    Ok(Some((first, last)))
}
