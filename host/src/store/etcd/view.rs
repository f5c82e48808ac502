//! The sequences view: reading a workspace's numbers (one workspace, or many in read-only
//! transactions), the whole view of a partition, and the stored next offset; what the view
//! holds of one workspace ([`WsView`]). The flusher's write is `view_write.rs`.

use std::collections::BTreeMap;

use etcd_client::{Txn, TxnOp, TxnOpResponse};
use sequencer::{Number, SeqId, WsId};

use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{parse_u64, prefix_end, seq_prefix, ws_key};
use crate::store::etcd::plog::PAGE_EVENTS;
use crate::store::storage::{PartitionId, StorageError};

/// Workspaces per read-only transaction of `read_numbers_many` (etcd allows 128 operations per
/// transaction by default).
pub const READS_PER_TXN: usize = 100;

/// The most operations etcd takes in each part of a transaction: its compares, the operations
/// it applies, and those of its else branch (`--max-txn-ops`, 128 by default).
pub const MAX_TXN_OPS: usize = 128;

/// Bytes per (sequence, number) in a workspace's view value.
pub(super) const VIEW_ENTRY_BYTES: usize = 2 + 8;

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
pub(super) struct WsView {
    /// Its numbers, the largest of every key that names them.
    pub(super) numbers: BTreeMap<SeqId, Number>,
    /// The workspace key's value (empty if it does not exist).
    pub(super) value: Vec<u8>,
    /// Keys of the earlier layout exist.
    pub(super) old_rows: bool,
}

impl WsView {
    /// What the keys `kvs` of one workspace's range hold; `None` if one is not a view key.
    pub(super) fn of(kvs: &[etcd_client::KeyValue]) -> Option<Self> {
        let mut v = Self::default();
        for kv in kvs {
            let rows = view_rows(kv.key(), kv.value())?;
            if kv.key().iter().filter(|&&b| b == b'/').count() == 2 {
                v.value = kv.value().to_vec();
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

    /// The numbers of `seqs`, 0 for one never stored.
    fn numbers_of<'a>(&'a self, seqs: &'a [SeqId]) -> impl Iterator<Item = Number> + 'a {
        seqs.iter()
            .map(|s| self.numbers.get(s).copied().unwrap_or(0))
    }
}

impl EtcdStorage {
    pub(super) async fn get_u64(
        self, key: String, what: String,
    ) -> Result<Option<u64>, StorageError> {
        let opts = self.get_options();
        let resp = self.clone().get_retrying(what.clone(), key, opts).await?;
        match resp.kvs().first() {
            None => Ok(None),
            Some(kv) => parse_u64(kv.value())
                .map(Some)
                .ok_or_else(|| self.err(&what, "the stored value is not a number")),
        }
    }

    pub(super) async fn numbers_async(
        self, partition: PartitionId, ws: WsId, seqs: Vec<SeqId>,
    ) -> Result<Vec<Number>, StorageError> {
        let prefix = ws_key(partition, ws);
        let opts = self.get_options().with_range(prefix_end(&prefix));
        let what = format!("read numbers of partition {partition} workspace {ws}");
        let resp = self.clone().get_retrying(what, prefix, opts).await?;
        let view = WsView::of(resp.kvs())
            .ok_or_else(|| self.err("read numbers", "a view key is not ours"))?;
        Ok(view.numbers_of(&seqs).collect())
    }

    /// [`numbers_async`](Self::numbers_async) for many workspaces: read-only transactions of
    /// one range read per workspace (at most [`READS_PER_TXN`] each), sent together.
    pub(super) async fn numbers_many_async(
        self, partition: PartitionId, ws: Vec<WsId>, seqs: Vec<SeqId>,
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
        self, partition: PartitionId,
    ) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        let prefix = seq_prefix(partition);
        let mut out: BTreeMap<(WsId, SeqId), Number> = BTreeMap::new();
        let mut start = prefix.clone();
        loop {
            let opts = self
                .get_options()
                .with_range(prefix_end(&prefix))
                .with_limit(i64::try_from(PAGE_EVENTS * 8).unwrap_or(i64::MAX));
            let what = format!("read the view of partition {partition}");
            let resp = self.clone().get_retrying(what, start.clone(), opts).await?;
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
