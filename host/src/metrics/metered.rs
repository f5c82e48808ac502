//! The metered store: a layer over any store that counts and times, into a host's
//! [`Metrics`], every append (acknowledged, refused by the offset fence or by the epoch, or
//! failed), every flusher write and its rows, and every read of numbers, and keeps each
//! partition's PLog end and stored offset as the host last saw them. It changes no answer.
//! Made by [`Metrics::storage`].

use std::sync::Arc;
use std::time::Instant;

use futures::future::FutureExt;
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use super::Metrics;
use crate::store::forward::forward_storage;
use crate::store::storage::StorageFuture;
use crate::store::storage::{
    AppendError, EventBatch, PartitionId, PlogPage, Storage, StorageError,
};

/// A store whose calls are counted and timed into [`Metrics`] (see the module's
/// documentation).
pub struct Metered {
    inner: Arc<dyn Storage>,
    metrics: Metrics,
}

impl Metered {
    /// `inner`, metered into `metrics`.
    pub fn new(inner: Arc<dyn Storage>, metrics: Metrics) -> Self {
        Self { inner, metrics }
    }

    /// A failed operation `op`, counted.
    fn failed(&self, op: &'static str) {
        storage_error(&self.metrics, op);
    }

    /// `append`, an append of `n` events ending before `next`: timed, and counted by its
    /// answer.
    fn appended(
        &self, p: PartitionId, n: usize, next: PLogOffset,
        append: impl FnOnce() -> Result<(), AppendError>,
    ) -> Result<(), AppendError> {
        let began = Instant::now();
        let r = append();
        let m = self.metrics.partition(p);
        match &r {
            Ok(()) => {
                (self.metrics.families().append_seconds).observe(began.elapsed().as_secs_f64());
                m.appends.inc();
                m.appended_events.inc_by(n as u64);
                m.plog_next.set(next as i64);
            }
            Err(AppendError::WrongOffset { expected, .. }) => {
                m.refused_fence.inc();
                m.plog_next.set(*expected as i64);
            }
            Err(AppendError::NotOwner { .. }) => {
                m.refused_epoch.inc();
            }
            Err(AppendError::Storage(_)) => self.failed("append"),
        }
        r
    }

    /// `read`, a read of numbers: timed, or counted as failed.
    fn numbers_read(
        &self, read: impl FnOnce() -> Result<Vec<Number>, StorageError>,
    ) -> Result<Vec<Number>, StorageError> {
        let began = Instant::now();
        let r = read();
        match &r {
            Ok(_) => (self.metrics.families().numbers_read_seconds)
                .observe(began.elapsed().as_secs_f64()),
            Err(_) => self.failed("read_numbers"),
        }
        r
    }
}

fn storage_error(metrics: &Metrics, op: &'static str) {
    metrics
        .families()
        .storage_errors
        .get_or_create(&[("op", op)])
        .inc();
}

impl Storage for Metered {
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.numbers_read(|| self.inner.read_numbers(partition, ws, seqs))
    }

    fn read_numbers_many(
        &self, partition: PartitionId, ws: &[WsId], seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.numbers_read(|| self.inner.read_numbers_many(partition, ws, seqs))
    }

    fn read_next_offset(&self, partition: PartitionId) -> StorageFuture<PLogOffset> {
        let metrics = self.metrics.clone();
        (self.inner.read_next_offset(partition))
            .inspect(move |r| match r {
                Ok(o) => {
                    metrics.partition(partition).view_next.set(*o as i64);
                }
                Err(_) => storage_error(&metrics, "read_next_offset"),
            })
            .boxed()
    }

    fn write(
        &self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
    ) -> StorageFuture<()> {
        let metrics = self.metrics.clone();
        let rows = values.len() as u64;
        let began = Instant::now();
        (self.inner.write(partition, values, next_offset))
            .inspect(move |r| match r {
                Ok(()) => {
                    (metrics.families().view_write_seconds).observe(began.elapsed().as_secs_f64());
                    let m = metrics.partition(partition);
                    m.flushes.inc();
                    m.view_rows.inc_by(rows);
                    m.view_next.set(next_offset as i64);
                }
                Err(_) => storage_error(&metrics, "view_write"),
            })
            .boxed()
    }

    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        let metrics = self.metrics.clone();
        (self.inner.read_plog(partition, from, max_events))
            .inspect(move |r| match r {
                Ok(page) if page.end => {
                    metrics.partition(partition).plog_next.set(page.next as i64);
                }
                Ok(_) => {}
                Err(_) => storage_error(&metrics, "read_plog"),
            })
            .boxed()
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.appended(partition, batch.len(), batch.next(), || {
            self.inner.append_events(partition, batch)
        })
    }

    forward_storage!(inner: append_limits, view_write_interval, failure, damaged);
}
