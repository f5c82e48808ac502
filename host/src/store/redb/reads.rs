//! The reads of the store's tables, each in a read transaction of its `ReadSource`: what the
//! live store, its snapshots and its read-only reader all answer `StoreReader` with.

use std::path::Path;

use redb::ReadableTable;
use sequencer::{Number, PLogOffset, SeqId, WsId};

use crate::store::codec::StoredEvent;
use crate::store::reader::partitions_of;
use crate::store::redb::source::ReadSource;
use crate::store::redb::tables::{NEXT_OFFSET, PLOG, SEQUENCES, err, plog_bounds_in};
use crate::store::storage::{PartitionId, StorageError};

/// Partitions that have a PLog or a stored next offset in `db`, ascending.
pub(crate) fn read_partitions(
    db: &impl ReadSource, path: &Path,
) -> Result<Vec<PartitionId>, StorageError> {
    (|| -> Result<Vec<PartitionId>, redb::Error> {
        let rx = db.begin_read()?;
        let mut stored: Vec<PartitionId> = Vec::new();
        for row in rx.open_table(NEXT_OFFSET)?.iter()? {
            stored.push(row?.0.value());
        }
        // Skip-scan the PLog: one seek per partition.
        let plog = rx.open_table(PLOG)?;
        let mut with_plog: Vec<PartitionId> = Vec::new();
        let mut from: u32 = 0;
        while let Some(row) = plog.range((from, 0)..)?.next() {
            let (p, _) = row?.0.value();
            with_plog.push(p);
            match p.checked_add(1) {
                Some(n) => from = n,
                None => break,
            }
        }
        Ok(partitions_of(stored, with_plog))
    })()
    .map_err(|e| err(path, "cannot list partitions", e))
}

/// The first and last offsets of a partition's PLog in `db`, `None` if it is empty.
pub(crate) fn read_plog_bounds(
    db: &impl ReadSource, path: &Path, partition: PartitionId,
) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
    (|| -> Result<_, redb::Error> {
        let rx = db.begin_read()?;
        plog_bounds_in(&rx.open_table(PLOG)?, partition)
    })()
    .map_err(|e| err(path, "cannot read the PLog's bounds", e))
}

/// The sequences view of a partition in `db`: (workspace, sequence, last), in key order.
pub(crate) fn read_view(
    db: &impl ReadSource, path: &Path, partition: PartitionId,
) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
    (|| -> Result<_, redb::Error> {
        let rx = db.begin_read()?;
        let t = rx.open_table(SEQUENCES)?;
        let mut out = Vec::new();
        for row in t.range((partition, 0, 0)..=(partition, u64::MAX, u16::MAX))? {
            let (k, v) = row?;
            let (_, ws, seq) = k.value();
            out.push((ws, seq, v.value()));
        }
        Ok(out)
    })()
    .map_err(|e| err(path, "cannot read the sequences view", e))
}

/// The stored next PLog offset of a partition in `db`, 0 if none.
pub(crate) fn read_next(
    db: &impl ReadSource, path: &Path, partition: PartitionId,
) -> Result<u64, StorageError> {
    (|| -> Result<u64, redb::Error> {
        let rx = db.begin_read()?;
        let t = rx.open_table(NEXT_OFFSET)?;
        Ok(t.get(partition)?.map_or(0, |v| v.value()))
    })()
    .map_err(|e| err(path, "cannot read the next PLog offset", e))
}

/// Up to `max` PLog events of a partition in `db` from `from` on, in offset order; an event that
/// fails its checksum comes back flagged.
pub(crate) fn read_events(
    db: &impl ReadSource, path: &Path, partition: PartitionId, from: PLogOffset, max: usize,
) -> Result<Vec<StoredEvent>, StorageError> {
    let rows = (|| -> Result<Vec<(u64, Vec<u8>)>, redb::Error> {
        let rx = db.begin_read()?;
        let t = rx.open_table(PLOG)?;
        let mut out = Vec::new();
        for row in t
            .range((partition, from)..=(partition, u64::MAX))?
            .take(max)
        {
            let (k, v) = row?;
            out.push((k.value().1, v.value().to_vec()));
        }
        Ok(out)
    })()
    .map_err(|e| err(path, "cannot read the PLog", e))?;
    // An event that fails its checksum comes back flagged: `read_plog` refuses it, `check`
    // lists it.
    rows.into_iter()
        .map(|(offset, bytes)| {
            StoredEvent::read(offset, &bytes).map_err(|e| {
                StorageError(format!(
                    "{}: PLog event {offset} of partition {partition} is corrupt ({e})",
                    path.display()
                ))
            })
        })
        .collect()
}
