//! The sequences view: reading a workspace's numbers (one workspace, or many in read-only
//! transactions), the whole view of a partition, the stored next offset, and the flusher's
//! write (see "Values, then offset" in the module's doc).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, Txn, TxnOp, TxnOpResponse};
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::etcd::append::epoch_compare;
use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{next_key, parse_u64, prefix_end, seq_prefix, ws_key};
use crate::store::etcd::plog::PAGE_EVENTS;
use crate::store::storage::{PartitionId, StorageError};

/// Workspaces per read-only transaction of `read_numbers_many` (etcd allows 128 operations per
/// transaction by default).
pub const READS_PER_TXN: usize = 100;

/// The most operations etcd takes in each part of a transaction: its compares, the operations
/// it applies, and those of its else branch (`--max-txn-ops`, 128 by default).
pub const MAX_TXN_OPS: usize = 128;

/// The most workspaces in one view write transaction: a compare each, beside the epoch's.
/// Fewer when some may still hold rows of the earlier layout (a delete each, beside the
/// puts and the next offset); see [`view_chunks`].
pub const VIEW_WS_PER_TXN: usize = MAX_TXN_OPS - 1;

/// How often a view write is tried when another writer keeps changing the same workspaces.
const VIEW_WRITE_ATTEMPTS: u32 = 10;

/// A workspace and the numbers a flusher write raises in it.
type WsNumbers = (WsId, Vec<(SeqId, Number)>);

/// Bytes per (sequence, number) in a workspace's view value.
const VIEW_ENTRY_BYTES: usize = 2 + 8;

/// A workspace's view value: (sequence u16 BE, number u64 BE) by ascending sequence.
fn encode_numbers(numbers: &BTreeMap<SeqId, Number>) -> Vec<u8> {
    let mut out = Vec::with_capacity(numbers.len() * VIEW_ENTRY_BYTES);
    for (seq, n) in numbers {
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&n.to_be_bytes());
    }
    out
}

/// One view key and value as (workspace, sequence, number) rows: a workspace key with its
/// numbers, or a row key of the earlier layout; `None` if it is neither.
fn view_rows(key: &[u8], value: &[u8]) -> Option<Vec<(WsId, SeqId, Number)>> {
    let key = std::str::from_utf8(key).ok()?;
    let mut parts = key.split('/').skip(2);
    let ws: WsId = parts.next()?.parse().ok()?;
    match parts.next() {
        None if value.len().is_multiple_of(VIEW_ENTRY_BYTES) => Some(
            value
                .as_chunks::<VIEW_ENTRY_BYTES>()
                .0
                .iter()
                .map(|c| {
                    let seq = u16::from_be_bytes([c[0], c[1]]);
                    (ws, seq, parse_u64(&c[2..]).unwrap_or_default())
                })
                .collect(),
        ),
        Some(seq) if parts.next().is_none() => {
            Some(vec![(ws, seq.parse().ok()?, parse_u64(value)?)])
        }
        _ => None,
    }
}

/// What the view holds of one workspace, from the keys of its range.
#[derive(Default)]
struct WsView {
    /// Its numbers, the largest of every key that names them.
    numbers: BTreeMap<SeqId, Number>,
    /// The workspace key's value and revision (0 if it does not exist).
    value: Vec<u8>,
    revision: i64,
    /// Keys of the earlier layout exist.
    old_rows: bool,
}

impl WsView {
    fn of(kvs: &[etcd_client::KeyValue]) -> Option<Self> {
        let mut v = Self::default();
        for kv in kvs {
            let rows = view_rows(kv.key(), kv.value())?;
            if kv.key().iter().filter(|&&b| b == b'/').count() == 2 {
                v.value = kv.value().to_vec();
                v.revision = kv.mod_revision();
            } else {
                v.old_rows = true;
            }
            for (_, seq, n) in rows {
                let e = v.numbers.entry(seq).or_default();
                *e = (*e).max(n);
            }
        }
        Some(v)
    }

    /// A workspace key's value as this host last wrote or read it, at `revision`; `None` if
    /// the value is not (sequence, number) pairs.
    fn remembered(revision: i64, value: &[u8]) -> Option<Self> {
        if !value.len().is_multiple_of(VIEW_ENTRY_BYTES) {
            return None;
        }
        let numbers = value
            .as_chunks::<VIEW_ENTRY_BYTES>()
            .0
            .iter()
            .map(|c| {
                let seq = u16::from_be_bytes([c[0], c[1]]);
                parse_u64(&c[2..]).map(|n| (seq, n))
            })
            .collect::<Option<_>>()?;
        Some(Self {
            numbers,
            value: value.to_vec(),
            revision,
            old_rows: false,
        })
    }

    /// The numbers of `seqs`, 0 for one never stored.
    fn numbers_of<'a>(&'a self, seqs: &'a [SeqId]) -> impl Iterator<Item = Number> + 'a {
        seqs.iter()
            .map(|s| self.numbers.get(s).copied().unwrap_or(0))
    }
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

impl EtcdStorage {
    pub(super) async fn get_u64(
        self,
        key: String,
        what: String,
    ) -> Result<Option<u64>, StorageError> {
        let opts = self.get_options();
        let resp = self
            .clone()
            .retrying(what.clone(), |mut kv| {
                let (key, opts) = (key.clone(), opts.clone());
                async move { kv.get(key, Some(opts)).await }
            })
            .await?;
        match resp.kvs().first() {
            None => Ok(None),
            Some(kv) => parse_u64(kv.value())
                .map(Some)
                .ok_or_else(|| self.err(&what, "the stored value is not a number")),
        }
    }

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
        let stats = &self.inner.stats;
        // The first read is served by the member the client talks to, without asking the
        // leader (no read index round): if that member lags, the write's compares fail and
        // the next read is linearizable.
        let read = |serializable: bool| {
            let reads: Vec<TxnOp> = chunk
                .iter()
                .map(|(ws, _)| {
                    let key = ws_key(partition, *ws);
                    let opts = GetOptions::new().with_range(prefix_end(&key));
                    let opts = if serializable {
                        opts.with_serializable()
                    } else {
                        opts
                    };
                    TxnOp::get(key, Some(opts))
                })
                .collect();
            Txn::new().and_then(reads)
        };
        let known = &self.inner.known_view;
        let chunk_ws = || chunk.iter().map(|(ws, _)| *ws);
        let mut delay = Duration::from_millis(2);
        for attempt in 0..VIEW_WRITE_ATTEMPTS {
            // What this host last wrote or read of these workspaces, if it knows them all
            // (only at the first attempt: after a conflict the keys are read linearizably).
            let remembered = if attempt == 0 {
                known.all_of(partition, chunk_ws())
            } else {
                None
            };
            let from_memory = remembered.is_some();
            let views: Vec<WsView> = match remembered {
                Some(keys) => {
                    stats.view_reads_skipped.fetch_add(1, Ordering::Relaxed);
                    keys.into_iter()
                        .map(|k| WsView::remembered(k.revision, &k.value))
                        .collect::<Option<_>>()
                        .ok_or_else(|| self.err("write the view", "a view value is not ours"))?
                }
                None => {
                    let read = read(attempt == 0);
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
                        let stored = stored
                            .ok_or_else(|| self.err("write the view", "a view key is not ours"))?;
                        if !stored.old_rows {
                            known.learn(partition, *ws, stored.revision, &stored.value);
                        }
                        views.push(stored);
                    }
                    if views.len() != chunk.len() {
                        return Err(self.err("write the view", "the reply misses workspaces"));
                    }
                    views
                }
            };
            let mut compares = Vec::new();
            let mut ops = Vec::new();
            let mut written = Vec::with_capacity(chunk.len());
            for ((ws, new), stored) in chunk.iter().zip(&views) {
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
                        compares.push(Compare::mod_revision(
                            key,
                            CompareOp::Equal,
                            stored.revision,
                        ));
                    }
                    continue;
                }
                compares.push(Compare::mod_revision(
                    key.clone(),
                    CompareOp::Equal,
                    stored.revision,
                ));
                if stored.old_rows {
                    // The earlier layout's rows of this workspace: merged above, gone now.
                    let rows = format!("{key}/");
                    let opts = DeleteOptions::new().with_range(prefix_end(&rows));
                    ops.push(TxnOp::delete(rows, Some(opts)));
                }
                ops.push(TxnOp::put(key, value.clone(), None));
                written.push((*ws, value));
            }
            if let Some(o) = offset {
                ops.push(TxnOp::put(
                    next_key(partition),
                    o.to_be_bytes().to_vec(),
                    None,
                ));
            }
            if ops.is_empty() && compares.is_empty() {
                return Ok(());
            }
            if (ops.len() > MAX_TXN_OPS || compares.len() >= MAX_TXN_OPS) && chunk.len() > 1 {
                // More rows of the earlier layout than the chunk was cut for (a workspace
                // known when it was cut, forgotten since): its halves, in order.
                let (first, second) = chunk.split_at(chunk.len() / 2);
                Box::pin(self.clone().merge_view(partition, first, None)).await?;
                return Box::pin(self.merge_view(partition, second, offset)).await;
            }
            let fence = self.inner.fences.check(partition).map_err(|r| {
                stats.not_sent.fetch_add(1, Ordering::Relaxed);
                self.err(
                    &format!("write the view of partition {partition}"),
                    &format!("not this host's (epoch {}): {}", r.epoch, r.why),
                )
            })?;
            let mut otherwise = Vec::new();
            let epoch = epoch_compare(partition, fence, &mut compares, &mut otherwise);
            let write = Txn::new().when(compares).and_then(ops).or_else(otherwise);
            let resp = self
                .clone()
                .retrying(
                    format!("write the view of partition {partition}"),
                    |mut kv| {
                        stats.txns.fetch_add(1, Ordering::Relaxed);
                        let write = write.clone();
                        async move { kv.txn(write).await }
                    },
                )
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
                return Ok(());
            }
            known.forget(partition, chunk_ws());
            if let Some(epoch) = epoch {
                let now = match resp.op_responses().first() {
                    Some(TxnOpResponse::Get(g)) => {
                        g.kvs().first().map_or(0, |kv| kv.create_revision())
                    }
                    _ => 0,
                };
                if now != epoch as i64 {
                    let refused = self.refused_by_epoch(partition, epoch, now);
                    return Err(self.err(
                        &format!("write the view of partition {partition}"),
                        &refused.to_string(),
                    ));
                }
            }
            stats.view_conflicts.fetch_add(1, Ordering::Relaxed);
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

    pub(super) async fn numbers_async(
        self,
        partition: PartitionId,
        ws: WsId,
        seqs: Vec<SeqId>,
    ) -> Result<Vec<Number>, StorageError> {
        let prefix = ws_key(partition, ws);
        let opts = self.get_options().with_range(prefix_end(&prefix));
        let resp = self
            .clone()
            .retrying(
                format!("read numbers of partition {partition} workspace {ws}"),
                |mut kv| {
                    let (prefix, opts) = (prefix.clone(), opts.clone());
                    async move { kv.get(prefix, Some(opts)).await }
                },
            )
            .await?;
        let view = WsView::of(resp.kvs())
            .ok_or_else(|| self.err("read numbers", "a view key is not ours"))?;
        Ok(view.numbers_of(&seqs).collect())
    }

    /// [`numbers_async`](Self::numbers_async) for many workspaces: read-only transactions of
    /// one range read per workspace (at most [`READS_PER_TXN`] each), sent together.
    pub(super) async fn numbers_many_async(
        self,
        partition: PartitionId,
        ws: Vec<WsId>,
        seqs: Vec<SeqId>,
    ) -> Result<Vec<Number>, StorageError> {
        let reads = ws.chunks(READS_PER_TXN).map(|chunk| {
            let gets: Vec<TxnOp> = chunk
                .iter()
                .map(|&w| {
                    let prefix = ws_key(partition, w);
                    let opts = self.get_options().with_range(prefix_end(&prefix));
                    TxnOp::get(prefix, Some(opts))
                })
                .collect();
            let txn = Txn::new().and_then(gets);
            self.clone().retrying(
                format!(
                    "read numbers of partition {partition}, {} workspaces",
                    chunk.len()
                ),
                move |mut kv| {
                    let txn = txn.clone();
                    async move { kv.txn(txn).await }
                },
            )
        });
        let mut out = Vec::with_capacity(ws.len() * seqs.len());
        for resp in futures::future::try_join_all(reads).await? {
            for r in resp.op_responses() {
                let view = match r {
                    TxnOpResponse::Get(g) => WsView::of(g.kvs()),
                    _ => None,
                };
                let view =
                    view.ok_or_else(|| self.err("read numbers", "a view key is not ours"))?;
                out.extend(view.numbers_of(&seqs));
            }
        }
        if out.len() != ws.len() * seqs.len() {
            return Err(self.err("read numbers", "the reply misses workspaces"));
        }
        Ok(out)
    }

    pub(super) async fn view_async(
        self,
        partition: PartitionId,
    ) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        let prefix = seq_prefix(partition);
        let mut out: BTreeMap<(WsId, SeqId), Number> = BTreeMap::new();
        let mut start = prefix.clone();
        loop {
            let opts = self
                .get_options()
                .with_range(prefix_end(&prefix))
                .with_limit(i64::try_from(PAGE_EVENTS * 8).unwrap_or(i64::MAX));
            let resp = self
                .clone()
                .retrying(
                    format!("read the view of partition {partition}"),
                    |mut kv| {
                        let (start, opts) = (start.clone(), opts.clone());
                        async move { kv.get(start, Some(opts)).await }
                    },
                )
                .await?;
            for kv in resp.kvs() {
                let rows = view_rows(kv.key(), kv.value()).ok_or_else(|| {
                    self.err("view key is not ours", &String::from_utf8_lossy(kv.key()))
                })?;
                for (ws, seq, n) in rows {
                    let e = out.entry((ws, seq)).or_default();
                    *e = (*e).max(n);
                }
            }
            match resp.kvs().last() {
                Some(last) if resp.more() => {
                    let mut next = last.key().to_vec();
                    next.push(0);
                    start = String::from_utf8_lossy(&next).into_owned();
                }
                _ => return Ok(out.into_iter().map(|((w, s), n)| (w, s, n)).collect()),
            }
        }
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
