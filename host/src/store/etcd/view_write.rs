//! The flusher's write of the view (see "Values, then offset" in the module's doc): the
//! values merged by maximum into each workspace's key, in transactions that apply only if no
//! key changed since it was read, the offset with the last of them, and only ever raised.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, Txn, TxnOp, TxnOpResponse};
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::etcd::append::epoch_compare;
use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{next_key, parse_u64, prefix_end, ws_key};
use crate::store::etcd::view::{MAX_TXN_OPS, VIEW_ENTRY_BYTES, WsView};
use crate::store::storage::{PartitionId, StorageError};

/// The most workspaces in one view write transaction: a compare each beside the epoch's, and a
/// put and a delete each (a workspace may still hold rows of the earlier layout) beside the next
/// offset's put.
pub const VIEW_WS_PER_TXN: usize = (MAX_TXN_OPS - 1) / 2;
const _: () = assert!(2 * VIEW_WS_PER_TXN < MAX_TXN_OPS);

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

/// What a write read of its chunk: each workspace's view, the stored next offset (0 if there
/// is none, or if it was not read), and the revision the read saw.
struct ChunkRead {
    views: Vec<WsView>,
    offset: PLogOffset,
    revision: i64,
}

impl ChunkRead {
    /// Applies only if no key from `key` to `end` (`key` alone if `None`) changed since the
    /// read: a read served by a member that lags misses what came after its revision, and this
    /// compare, made by the leader, sees it (the view's keys are never deleted).
    fn unchanged(&self, key: &str, end: Option<Vec<u8>>) -> Compare {
        let compare = Compare::mod_revision(key, CompareOp::Less, self.revision + 1);
        match end {
            Some(end) => compare.with_range(end),
            None => compare,
        }
    }
}

/// One chunk's write: the compares it applies under, and the puts and deletes it makes.
#[derive(Default)]
struct ChunkWrite {
    compares: Vec<Compare>,
    ops: Vec<TxnOp>,
}

impl ChunkWrite {
    /// The write of `chunk` over what `read` found of it, and of `offset` as the next offset,
    /// if given and above the stored one: the offset only ever rises. It applies only if none
    /// of the keys it writes (a workspace's whole range: its key, rows of the earlier layout)
    /// changed since the read.
    fn merged(
        partition: PartitionId, chunk: &[WsNumbers], read: &ChunkRead, offset: Option<PLogOffset>,
    ) -> Self {
        let mut w = Self::default();
        for ((ws, new), stored) in chunk.iter().zip(&read.views) {
            let mut merged = stored.numbers.clone();
            for &(seq, n) in new {
                let e = merged.entry(seq).or_default();
                *e = (*e).max(n);
            }
            let value = encode_numbers(&merged);
            let key = ws_key(partition, *ws);
            if value == stored.value && !stored.old_rows {
                continue;
            }
            w.compares
                .push(read.unchanged(&key, Some(prefix_end(&key))));
            if stored.old_rows {
                // The earlier layout's rows of this workspace: merged above, gone now.
                let rows = format!("{key}/");
                let opts = DeleteOptions::new().with_range(prefix_end(&rows));
                w.ops.push(TxnOp::delete(rows, Some(opts)));
            }
            w.ops.push(TxnOp::put(key, value, None));
        }
        if let Some(o) = offset.filter(|&o| o > read.offset) {
            w.compares.push(read.unchanged(&next_key(partition), None));
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
        self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
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
        let mut chunks: Vec<&[WsNumbers]> = by_ws.chunks(VIEW_WS_PER_TXN).collect();
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

    /// Raises the stored numbers of the workspaces of `chunk` to at least theirs (and the
    /// stored next offset to `offset`, if given and higher), by read, merge and a write that
    /// applies only if none of those keys changed since the read; read again and retry if one
    /// did (another host writing the same partition's view). So neither the view nor the
    /// stored next offset ever moves back.
    async fn merge_view(
        self, partition: PartitionId, chunk: &[WsNumbers], offset: Option<PLogOffset>,
    ) -> Result<(), StorageError> {
        let mut delay = Duration::from_millis(2);
        for attempt in 0..VIEW_WRITE_ATTEMPTS {
            let read = (self.clone())
                .chunk_views(partition, chunk, offset.is_some(), attempt)
                .await?;
            let write = ChunkWrite::merged(partition, chunk, &read, offset);
            if write.ops.is_empty() && write.compares.is_empty() {
                return Ok(());
            }
            if self.clone().send_chunk(partition, write).await? {
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

    /// What the view holds of `chunk`'s workspaces, and the stored next offset if `with_offset`
    /// (else 0). The first attempt's read is served by the member the client talks to, without
    /// asking the leader (no read index round): if that member lags, the write's compares fail
    /// and the next read is linearizable.
    async fn chunk_views(
        self, partition: PartitionId, chunk: &[WsNumbers], with_offset: bool, attempt: u32,
    ) -> Result<ChunkRead, StorageError> {
        let stats = &self.inner.stats;
        let serializable = |opts: GetOptions| {
            if attempt == 0 {
                opts.with_serializable()
            } else {
                opts
            }
        };
        let mut reads: Vec<TxnOp> = chunk
            .iter()
            .map(|(ws, _)| {
                let key = ws_key(partition, *ws);
                let opts = serializable(GetOptions::new().with_range(prefix_end(&key)));
                TxnOp::get(key, Some(opts))
            })
            .collect();
        if with_offset {
            reads.push(TxnOp::get(
                next_key(partition),
                Some(serializable(GetOptions::new())),
            ));
        }
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
        let responses = resp.op_responses();
        let mut gets: Vec<&[etcd_client::KeyValue]> = responses
            .iter()
            .map(|r| match r {
                TxnOpResponse::Get(g) => Some(g.kvs()),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.err("write the view", "a reply is not a read"))?;
        let mut offset = 0;
        if with_offset && let Some(kv) = gets.pop().and_then(|kvs| kvs.first()) {
            offset = parse_u64(kv.value()).ok_or_else(|| {
                self.err("write the view", "the stored next offset is not 8 bytes")
            })?;
        }
        let views = gets
            .into_iter()
            .map(WsView::of)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.err("write the view", "a view key is not ours"))?;
        if views.len() != chunk.len() {
            return Err(self.err("write the view", "the reply misses workspaces"));
        }
        let revision = resp
            .header()
            .map(|h| h.revision())
            .ok_or_else(|| self.err("write the view", "a reply without its revision"))?;
        Ok(ChunkRead {
            views,
            offset,
            revision,
        })
    }

    /// Sends `write` under the partition's fence: `true` once it applied, `false` if a key
    /// changed meanwhile (another writer); an error if the partition is not this host's any
    /// more.
    async fn send_chunk(
        self, partition: PartitionId, write: ChunkWrite,
    ) -> Result<bool, StorageError> {
        let stats = &self.inner.stats;
        let what = || format!("write the view of partition {partition}");
        let fence = self.inner.fences.check(partition).map_err(|r| {
            stats.not_sent.fetch_add(1, Ordering::Relaxed);
            self.err(
                &what(),
                &format!("not this host's (epoch {}): {}", r.epoch, r.why),
            )
        })?;
        let ChunkWrite { mut compares, ops } = write;
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
            .await?;
        if resp.succeeded() {
            return Ok(true);
        }
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
