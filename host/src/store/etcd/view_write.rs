//! The flusher's write of the view (see "Values, then offset" in the module's doc): the
//! values merged by maximum into each workspace's key, in transactions that apply only if no
//! key changed since it was read (or remembered), the offset with the last of them.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, Txn, TxnOp, TxnOpResponse};
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::etcd::append::epoch_compare;
use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{next_key, prefix_end, ws_key};
use crate::store::etcd::view::{MAX_TXN_OPS, VIEW_ENTRY_BYTES, WsView};
use crate::store::storage::{PartitionId, StorageError};

/// The most workspaces in one view write transaction: a compare each, beside the epoch's.
/// Fewer when some may still hold rows of the earlier layout (a delete each, beside the
/// puts and the next offset); see `view_chunks`.
pub const VIEW_WS_PER_TXN: usize = MAX_TXN_OPS - 1;

/// How often a view write is tried when another writer keeps changing the same workspaces.
const VIEW_WRITE_ATTEMPTS: u32 = 10;

/// A workspace and the numbers a flusher write raises in it.
type WsNumbers = (WsId, Vec<(SeqId, Number)>);

/// A workspace's view value: (sequence u16 BE, number u64 BE) by ascending sequence.
fn encode_numbers(numbers: &BTreeMap<SeqId, Number>) -> Vec<u8> {
    let mut out = Vec::with_capacity(numbers.len() * VIEW_ENTRY_BYTES);
    for (seq, n) in numbers {
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&n.to_be_bytes());
    }
    out
}

/// The workspaces of a flusher write (`known[i]`: this store knows what `by_ws[i]`'s key holds,
/// without rows of the earlier layout), cut in order into transactions within etcd's
/// operations: a compare per workspace beside the epoch's; a put per workspace, a delete too
/// for one not known (it may still hold rows of the earlier layout), and the next offset. In a
/// partition this host owns, every workspace is known after its first write: one transaction
/// for up to [`VIEW_WS_PER_TXN`] workspaces.
fn view_chunks<'a>(by_ws: &'a [WsNumbers], known: &[bool]) -> Vec<&'a [WsNumbers]> {
    let mut chunks = Vec::new();
    let (mut start, mut ops) = (0, 0);
    for i in 0..by_ws.len() {
        let cost = if known.get(i) == Some(&true) { 1 } else { 2 };
        if i - start == VIEW_WS_PER_TXN || ops + cost > MAX_TXN_OPS - 1 {
            chunks.push(&by_ws[start..i]);
            (start, ops) = (i, 0);
        }
        ops += cost;
    }
    if start < by_ws.len() {
        chunks.push(&by_ws[start..]);
    }
    chunks
}

/// One chunk's write: the compares it applies under, the puts and deletes it makes, and the
/// values it writes by workspace (to remember once it applied).
#[derive(Default)]
struct ChunkWrite {
    compares: Vec<Compare>,
    ops: Vec<TxnOp>,
    written: Vec<(WsId, Vec<u8>)>,
}

impl ChunkWrite {
    /// The write of `chunk` over what the view holds of it (`views`; `from_memory`: remembered,
    /// not read), and of `offset` as the next offset, if given.
    fn merged(
        partition: PartitionId,
        chunk: &[WsNumbers],
        views: &[WsView],
        from_memory: bool,
        offset: Option<PLogOffset>,
    ) -> Self {
        let mut w = Self::default();
        for ((ws, new), stored) in chunk.iter().zip(views) {
            let mut merged = stored.numbers.clone();
            for &(seq, n) in new {
                let e = merged.entry(seq).or_default();
                *e = (*e).max(n);
            }
            let value = encode_numbers(&merged);
            let key = ws_key(partition, *ws);
            if value == stored.value && !stored.old_rows {
                if from_memory {
                    // Nothing to put, but what memory says must still hold: had the key
                    // changed or gone, the offset must not be stored over it.
                    w.compares.push(Compare::mod_revision(
                        key,
                        CompareOp::Equal,
                        stored.revision,
                    ));
                }
                continue;
            }
            w.compares.push(Compare::mod_revision(
                key.clone(),
                CompareOp::Equal,
                stored.revision,
            ));
            if stored.old_rows {
                // The earlier layout's rows of this workspace: merged above, gone now.
                let rows = format!("{key}/");
                let opts = DeleteOptions::new().with_range(prefix_end(&rows));
                w.ops.push(TxnOp::delete(rows, Some(opts)));
            }
            w.ops.push(TxnOp::put(key, value.clone(), None));
            w.written.push((*ws, value));
        }
        if let Some(o) = offset {
            w.ops.push(TxnOp::put(
                next_key(partition),
                o.to_be_bytes().to_vec(),
                None,
            ));
        }
        w
    }
}

impl EtcdStorage {
    pub(super) async fn write_async(
        self,
        partition: PartitionId,
        values: Vec<SeqValue>,
        next_offset: PLogOffset,
    ) -> Result<(), StorageError> {
        let mut by_ws: BTreeMap<WsId, Vec<(SeqId, Number)>> = BTreeMap::new();
        for v in &values {
            by_ws
                .entry(v.key.ws)
                .or_default()
                .push((v.key.seq, v.value));
        }
        let by_ws: Vec<WsNumbers> = by_ws.into_iter().collect();
        // Every chunk but the last at once (their order does not matter); then the last with
        // the offset, so the offset is durable only after every value is.
        let known = self
            .inner
            .known_view
            .knows(partition, by_ws.iter().map(|(ws, _)| *ws));
        let mut chunks = view_chunks(&by_ws, &known);
        let last = chunks.pop().unwrap_or_default();
        futures::future::try_join_all(
            chunks
                .into_iter()
                .map(|chunk| self.clone().merge_view(partition, chunk, None)),
        )
        .await?;
        self.clone()
            .merge_view(partition, last, Some(next_offset))
            .await?;
        self.inner.stats.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Raises the stored numbers of the workspaces of `chunk` to at least theirs (and stores
    /// `offset` as the next offset, if given), by read, merge and a write that applies only if
    /// none of those workspace keys changed since the read; read again and retry if one did
    /// (another host writing the same partition's view). So the view never moves back.
    async fn merge_view(
        self,
        partition: PartitionId,
        chunk: &[WsNumbers],
        offset: Option<PLogOffset>,
    ) -> Result<(), StorageError> {
        let mut delay = Duration::from_millis(2);
        for attempt in 0..VIEW_WRITE_ATTEMPTS {
            let (views, from_memory) = self.clone().chunk_views(partition, chunk, attempt).await?;
            let write = ChunkWrite::merged(partition, chunk, &views, from_memory, offset);
            if write.ops.is_empty() && write.compares.is_empty() {
                return Ok(());
            }
            if (write.ops.len() > MAX_TXN_OPS || write.compares.len() >= MAX_TXN_OPS)
                && chunk.len() > 1
            {
                // More rows of the earlier layout than the chunk was cut for (a workspace
                // known when it was cut, forgotten since): its halves, in order.
                let (first, second) = chunk.split_at(chunk.len() / 2);
                Box::pin(self.clone().merge_view(partition, first, None)).await?;
                return Box::pin(self.merge_view(partition, second, offset)).await;
            }
            if self.clone().send_chunk(partition, chunk, write).await? {
                return Ok(());
            }
            self.inner
                .stats
                .view_conflicts
                .fetch_add(1, Ordering::Relaxed);
            if attempt > 0 {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(100));
            }
        }
        Err(self.err(
            &format!("write the view of partition {partition}"),
            &format!(
                "another writer changed the same workspaces {VIEW_WRITE_ATTEMPTS} times in a row"
            ),
        ))
    }

    /// What the view holds of `chunk`'s workspaces, and whether it is remembered rather than
    /// read: what this host last wrote or read of them if it knows them all (only at the first
    /// attempt: after a conflict the keys are read, linearizably). The first read is served by
    /// the member the client talks to, without asking the leader (no read index round): if
    /// that member lags, the write's compares fail and the next read is linearizable.
    async fn chunk_views(
        self,
        partition: PartitionId,
        chunk: &[WsNumbers],
        attempt: u32,
    ) -> Result<(Vec<WsView>, bool), StorageError> {
        let stats = &self.inner.stats;
        let known = &self.inner.known_view;
        if attempt == 0
            && let Some(keys) = known.all_of(partition, chunk.iter().map(|(ws, _)| *ws))
        {
            stats.view_reads_skipped.fetch_add(1, Ordering::Relaxed);
            let views = keys
                .into_iter()
                .map(|k| WsView::remembered(k.revision, &k.value))
                .collect::<Option<_>>()
                .ok_or_else(|| self.err("write the view", "a view value is not ours"))?;
            return Ok((views, true));
        }
        let reads: Vec<TxnOp> = chunk
            .iter()
            .map(|(ws, _)| {
                let key = ws_key(partition, *ws);
                let opts = GetOptions::new().with_range(prefix_end(&key));
                let opts = if attempt == 0 {
                    opts.with_serializable()
                } else {
                    opts
                };
                TxnOp::get(key, Some(opts))
            })
            .collect();
        let read = Txn::new().and_then(reads);
        let resp = self
            .clone()
            .retrying(
                format!("read the view of partition {partition}"),
                |mut kv| {
                    stats.txns.fetch_add(1, Ordering::Relaxed);
                    let read = read.clone();
                    async move { kv.txn(read).await }
                },
            )
            .await?;
        let mut views = Vec::with_capacity(chunk.len());
        for ((ws, _), r) in chunk.iter().zip(resp.op_responses()) {
            let stored = match r {
                TxnOpResponse::Get(g) => WsView::of(g.kvs()),
                _ => None,
            };
            let stored =
                stored.ok_or_else(|| self.err("write the view", "a view key is not ours"))?;
            if !stored.old_rows {
                known.learn(partition, *ws, stored.revision, &stored.value);
            }
            views.push(stored);
        }
        if views.len() != chunk.len() {
            return Err(self.err("write the view", "the reply misses workspaces"));
        }
        Ok((views, false))
    }

    /// Sends `write` of `chunk` under the partition's fence: `true` once it applied (what it
    /// wrote remembered), `false` if a key changed meanwhile (another writer); an error if the
    /// partition is not this host's any more.
    async fn send_chunk(
        self,
        partition: PartitionId,
        chunk: &[WsNumbers],
        write: ChunkWrite,
    ) -> Result<bool, StorageError> {
        let stats = &self.inner.stats;
        let known = &self.inner.known_view;
        let chunk_ws = || chunk.iter().map(|(ws, _)| *ws);
        let what = || format!("write the view of partition {partition}");
        let fence = self.inner.fences.check(partition).map_err(|r| {
            stats.not_sent.fetch_add(1, Ordering::Relaxed);
            self.err(
                &what(),
                &format!("not this host's (epoch {}): {}", r.epoch, r.why),
            )
        })?;
        let ChunkWrite {
            mut compares,
            ops,
            written,
        } = write;
        let mut otherwise = Vec::new();
        let epoch = epoch_compare(partition, fence, &mut compares, &mut otherwise);
        let txn = Txn::new().when(compares).and_then(ops).or_else(otherwise);
        let resp = self
            .clone()
            .retrying(what(), |mut kv| {
                stats.txns.fetch_add(1, Ordering::Relaxed);
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
            .inspect_err(|_| known.forget(partition, chunk_ws()))?;
        if resp.succeeded() {
            // Every put of the transaction is at its revision.
            match resp.header().map(|h| h.revision()) {
                Some(revision) => {
                    for (ws, value) in &written {
                        known.learn(partition, *ws, revision, value);
                    }
                }
                None => known.forget(partition, written.iter().map(|(ws, _)| *ws)),
            }
            return Ok(true);
        }
        known.forget(partition, chunk_ws());
        if let Some(epoch) = epoch {
            let now = match resp.op_responses().first() {
                Some(TxnOpResponse::Get(g)) => g.kvs().first().map_or(0, |kv| kv.create_revision()),
                _ => 0,
            };
            if now != epoch as i64 {
                let refused = self.refused_by_epoch(partition, epoch, now);
                return Err(self.err(&what(), &refused.to_string()));
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(known: &[bool]) -> Vec<usize> {
        let by_ws: Vec<WsNumbers> = (0..known.len() as u64).map(|w| (w, vec![(1, w)])).collect();
        let chunks = view_chunks(&by_ws, known);
        // In order, every workspace once.
        let flat: Vec<WsId> = chunks
            .iter()
            .flat_map(|c| c.iter().map(|(w, _)| *w))
            .collect();
        assert_eq!(flat, (0..known.len() as u64).collect::<Vec<_>>());
        chunks.iter().map(|c| c.len()).collect()
    }

    #[test]
    fn a_view_write_of_known_workspaces_takes_a_transaction_per_127_and_unknown_ones_cost_two() {
        // Known: a compare and a put each, beside the epoch's compare and the offset's put.
        assert_eq!(sizes(&[true; 250]), vec![127, 123]);
        assert_eq!(sizes(&[true; 127]), vec![127]);
        // Not known: a delete too, in case of rows of the earlier layout.
        assert_eq!(sizes(&[false; 130]), vec![63, 63, 4]);
        // Mixed: the operations decide.
        let mut mixed = vec![true; 100];
        mixed.extend([false; 20]);
        assert_eq!(sizes(&mixed), vec![113, 7]);
        assert!(sizes(&[]).is_empty());
    }
}
