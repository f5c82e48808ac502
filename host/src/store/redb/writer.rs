//! The store's one writer: a thread that takes every request that queued during the previous
//! commit (flusher writes, appends, trims of every partition) and applies them in one
//! transaction, committed once (group commit), answering each only after that commit.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, mpsc};

use futures::channel::oneshot;
use redb::{Database, ReadableTable, WriteTransaction};
use sequencer::{PLogOffset, SeqValue};

use crate::store::redb::stats::StoreStats;
use crate::store::redb::tables::{NEXT_OFFSET, PLOG, SEQUENCES, err, plog_bounds_in};
use crate::store::storage::{AppendError, EventBatch, PartitionId, StorageError};
use crate::store::trim::Trimmed;

/// The most requests one group commit takes; the rest wait for the next one.
const MAX_GROUP: usize = 8192;

/// The most PLog events one trim transaction deletes, so that the appends and flusher writes
/// committed in the same group never wait long behind it.
pub const TRIM_CHUNK: u64 = 16_384;

/// What the writer is asked to do, with where to answer.
pub(super) enum Request {
    /// A flusher write: the values, then the next offset, in the group's transaction.
    Write {
        partition: PartitionId,
        values: Vec<SeqValue>,
        next_offset: PLogOffset,
        reply: oneshot::Sender<Result<(), StorageError>>,
    },
    /// A batch of events (one or many): all of it or nothing, in the group's transaction.
    Append {
        partition: PartitionId,
        events: EventBatch,
        reply: oneshot::Sender<Result<(), AppendError>>,
    },
    /// Deletes PLog events below `below` (at most [`TRIM_CHUNK`]), never at or past the stored
    /// next offset and never the partition's last event (checked in the transaction).
    Trim {
        partition: PartitionId,
        below: PLogOffset,
        reply: oneshot::Sender<Result<Trimmed, StorageError>>,
    },
}

/// What one request did inside the group's transaction.
enum Applied {
    Ok,
    Refused(AppendError),
    Trimmed(Trimmed),
}

/// Serves `requests` on `db` until every sender is gone: a group at a time, each in one
/// transaction, committed while holding `commits` (which a reader copying the file holds).
pub(super) fn writer_loop(
    db: &Database, path: &Path, requests: &mpsc::Receiver<Request>, stats: &StoreStats,
    commits: &Mutex<()>,
) {
    // After an I/O error redb refuses every later write with "previous I/O error": the first
    // error is the cause an operator needs (a full disk, say), so it is kept and named.
    let mut cause: Option<String> = None;
    while let Ok(first) = requests.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match requests.try_recv() {
                Ok(r) => group.push(r),
                Err(_) => break,
            }
        }
        match commit_group(db, &group, stats, commits) {
            Ok(applied) => answer(group, applied, stats),
            Err(e) => {
                let e = commit_failed(path, e, &mut cause, stats);
                refuse(group, &e);
            }
        }
    }
}

/// Applies `group` in one transaction and commits it (redb's default durability,
/// `Durability::Immediate`: the commit returns once durable).
fn commit_group(
    db: &Database, group: &[Request], stats: &StoreStats, commits: &Mutex<()>,
) -> Result<Vec<Applied>, redb::Error> {
    // No commit while a reader copies the file (`hold_commits`).
    let _gate = commits.lock().unwrap_or_else(|p| p.into_inner());
    let tx = db.begin_write()?;
    let mut applied = Vec::with_capacity(group.len());
    for req in group {
        applied.push(apply(&tx, req, stats)?);
    }
    let started = std::time::Instant::now();
    tx.commit()?;
    stats.commit_nanos.fetch_add(
        u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    stats.commits.fetch_add(1, Ordering::Relaxed);
    Ok(applied)
}

fn apply(tx: &WriteTransaction, req: &Request, stats: &StoreStats) -> Result<Applied, redb::Error> {
    match req {
        Request::Write {
            partition,
            values,
            next_offset,
            ..
        } => {
            let mut view = tx.open_table(SEQUENCES)?;
            for v in values {
                view.insert((*partition, v.key.ws, v.key.seq), v.value)?;
            }
            tx.open_table(NEXT_OFFSET)?
                .insert(*partition, *next_offset)?;
            stats.writes.fetch_add(1, Ordering::Relaxed);
            stats
                .values_written
                .fetch_add(values.len() as u64, Ordering::Relaxed);
            Ok(Applied::Ok)
        }
        Request::Append {
            partition, events, ..
        } => apply_append(tx, *partition, events),
        Request::Trim {
            partition, below, ..
        } => apply_trim(tx, *partition, *below).map(Applied::Trimmed),
    }
}

/// Inserts `events` if they start at the partition's next PLog offset, else refuses them all.
fn apply_append(
    tx: &WriteTransaction, partition: PartitionId, events: &EventBatch,
) -> Result<Applied, redb::Error> {
    let mut plog = tx.open_table(PLOG)?;
    let expected = match plog
        .range((partition, 0)..=(partition, u64::MAX))?
        .next_back()
    {
        Some(last) => last?.0.value().1 + 1,
        None => 1,
    };
    if events.first() != expected {
        return Ok(Applied::Refused(AppendError::WrongOffset {
            expected,
            offered: events.first(),
        }));
    }
    for (offset, event) in events.whole().iter() {
        plog.insert((partition, offset), event)?;
    }
    Ok(Applied::Ok)
}

/// Deletes up to [`TRIM_CHUNK`] of partition `p`'s oldest events below `below`, never at or past
/// its stored next offset (replay starts there) nor its last event (the fence needs it).
fn apply_trim(
    tx: &WriteTransaction, p: PartitionId, below: PLogOffset,
) -> Result<Trimmed, redb::Error> {
    let stored = tx.open_table(NEXT_OFFSET)?.get(p)?.map_or(0, |v| v.value());
    let mut plog = tx.open_table(PLOG)?;
    let Some((first, last)) = plog_bounds_in(&plog, p)? else {
        return Ok(Trimmed::default());
    };
    let end = below
        .min(stored)
        .min(last)
        .min(first.saturating_add(TRIM_CHUNK));
    if end <= first {
        return Ok(Trimmed {
            deleted: 0,
            first_kept: first,
        });
    }
    plog.retain_in((p, first)..(p, end), |_, _| false)?;
    Ok(Trimmed {
        deleted: end - first,
        first_kept: end,
    })
}

/// Answers each request of a committed group with what it did.
fn answer(group: Vec<Request>, applied: Vec<Applied>, stats: &StoreStats) {
    for (req, done) in group.into_iter().zip(applied) {
        match (req, done) {
            (Request::Write { reply, .. }, _) => {
                let _ = reply.send(Ok(()));
            }
            (Request::Append { reply, events, .. }, Applied::Ok) => {
                stats
                    .appends
                    .fetch_add(events.len() as u64, Ordering::Relaxed);
                stats.append_writes.fetch_add(1, Ordering::Relaxed);
                let _ = reply.send(Ok(()));
            }
            (Request::Append { reply, .. }, Applied::Refused(e)) => {
                let _ = reply.send(Err(e));
            }
            (Request::Trim { reply, .. }, Applied::Trimmed(t)) => {
                let _ = reply.send(Ok(t));
            }
            (Request::Append { reply, .. }, Applied::Trimmed(_)) => {
                let _ = reply.send(Ok(()));
            }
            (Request::Trim { reply, .. }, _) => {
                let _ = reply.send(Ok(Trimmed::default()));
            }
        }
    }
}

/// The error a failed commit answers its group with. The first I/O error is kept as `cause`
/// (and as the store's failure): after it redb only says "previous I/O error".
fn commit_failed(
    path: &Path, e: redb::Error, cause: &mut Option<String>, stats: &StoreStats,
) -> StorageError {
    match (&e, &cause) {
        (redb::Error::PreviousIo, Some(cause)) => err(
            path,
            "commit failed",
            format!("the store takes no writes since an earlier error: {cause}"),
        ),
        _ => {
            // Only an I/O error stops redb taking writes; others leave no cause.
            if matches!(e, redb::Error::Io(_) | redb::Error::PreviousIo) {
                let first = cause.get_or_insert_with(|| e.to_string());
                stats.failed(first.clone());
            }
            tracing::error!("{}", err(path, "commit failed", &e));
            err(path, "commit failed", e)
        }
    }
}

/// Answers every request of a group whose commit failed with `e`.
fn refuse(group: Vec<Request>, e: &StorageError) {
    for req in group {
        match req {
            Request::Write { reply, .. } => {
                let _ = reply.send(Err(e.clone()));
            }
            Request::Append { reply, .. } => {
                let _ = reply.send(Err(AppendError::Storage(e.clone())));
            }
            Request::Trim { reply, .. } => {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
}
