//! Storage on an etcd cluster (Raft-replicated, linearizable), for partitions spread over many
//! hosts that share one store.
//!
//! Keys (numbers zero-padded so that keys sort in numeric order):
//!
//! | key                                  | value                                              |
//! |--------------------------------------|----------------------------------------------------|
//! | `plog/<partition>/<offset:020>`      | the events of one append, up to `offset`: one event as [`encode_event`] encodes it, or a pack of several ([`encode_pack`]) |
//! | `seq/<partition>/<ws:020>`           | the workspace's last numbers: (sequence u16, number u64) big-endian pairs by sequence |
//! | `next/<partition>`                   | the stored next PLog offset, 8 bytes BE            |
//! | `layout`                             | the numbering layout the first run recorded (text, as in a data directory's `LAYOUT`) |
//!
//! Stores written before packs and per-workspace view keys read on: a PLog key of one event is
//! a pack of one, and view rows `seq/<p>/<ws:020>/<seq:05>` (one number each) are merged with
//! the workspace key they extend, and folded into it by the next write of that workspace.
//!
//! - **The fence.** An append of the events `F..=L` is one transaction that puts their pack
//!   under `plog/P/L` only if no key exists from `plog/P/F` on (a range compare) and
//!   `plog/P/F-1` does (or `F` is 1). Two hosts that both believe they own a partition can
//!   never both commit an offset: the stale one's transaction fails and it gets
//!   [`AppendError::WrongOffset`] with the PLog's real next offset (read in the same
//!   transaction's else branch). A batch larger than a request ([`EtcdConfig::max_request_bytes`],
//!   [`PACK_MAX_EVENTS`]) is appended in parts, in order, each fenced so.
//! - **Ambiguous outcomes.** After a transport error or timeout the append may or may not have
//!   been applied. The writer retries the same conditional transaction; when a retry fails, its
//!   else branch also returns the key at `L`, and the append counts as the writer's own only if
//!   the stored value is byte-for-byte its pack (payloads should name their writer, so that two
//!   hosts' events are never equal).
//! - **Values, then offset.** A flusher write reads the view keys of the workspaces it touches
//!   (from the member it talks to first, linearizably after a conflict), merges its numbers
//!   into them by maximum, and writes them back only if none changed since (revision compares;
//!   read again otherwise), at most 60 workspaces per transaction, the
//!   chunks sent together, then the last with the next offset. So a stale host's late flusher
//!   write can never move the view backwards, and the offset is durable only after every value.
//! - **Reads** are linearizable (served through the leader's read index), so a read sees every
//!   completed write; PLog reads are range reads in pages of at most [`PAGE_EVENTS`] events.
//! - Requests that fail on the transport (a member died, no leader) are retried with backoff
//!   until [`EtcdConfig::retry_for`] has passed, then reported as a one-line error.
//!
//! etcd-client is built on tonic, which needs a tokio runtime; the host's driver is a plain
//! `futures` loop. So the store owns a small multi-thread tokio runtime: every operation is
//! spawned on it and answered through a oneshot channel, which any executor (or a blocking
//! wait, for the synchronous `read_numbers` and `append_event`) can await.

mod quorum;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, KvClient, SortOrder,
    SortTarget, Txn, TxnOp, TxnOpResponse,
};
use futures::channel::oneshot;
use futures::future::{BoxFuture, FutureExt};
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};
use tonic::Code as tonic_code;

use crate::store::codec::{StoredEvent, decode_event, encode_pack, split_pack};
use crate::store::etcd::quorum::{Next, Quorum};
use crate::store::layout::Layout;
use crate::store::retry::RetryPolicy;
use crate::store::storage::{
    AppendError, AppendLimits, EventBatch, PartitionId, PlogPage, Storage, StorageError,
};

/// Workspaces per read-only transaction of `read_numbers_many` (etcd allows 128 operations per
/// transaction by default).
pub const READS_PER_TXN: usize = 100;

/// Workspaces per view write transaction: a put each, and a delete each for workspaces still
/// in the earlier layout, plus the next offset, within etcd's 128 operations.
pub const VIEW_WS_PER_TXN: usize = 60;

/// How often a view write is tried when another writer keeps changing the same workspaces.
const VIEW_WRITE_ATTEMPTS: u32 = 10;

/// Most PLog events one range read returns (keeps responses well under the client's limit).
pub const PAGE_EVENTS: usize = 1024;

/// The largest response the client accepts (etcd-client's default is 4 MiB).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// etcd's default `--max-request-bytes` (1.5 MiB).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// The most events one PLog key (one append transaction) holds.
pub const PACK_MAX_EVENTS: usize = 1024;

/// Room in an append request for the key, the compares, the else branch and gRPC framing.
const REQUEST_HEADROOM_BYTES: usize = 16 * 1024;

/// The most a PLog range read asks for, in stored bytes (keys × the largest value seen), well
/// under the client's response limit.
const READ_BUDGET_BYTES: usize = 16 * 1024 * 1024;

/// How the store talks to the cluster.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Client endpoints, `http://host:port`.
    pub endpoints: Vec<String>,
    /// Time limit of one request.
    pub request_timeout: Duration,
    /// How long a failing request is retried before its error is reported.
    pub retry_for: Duration,
    /// Serve reads from the member the client is connected to, without asking the leader
    /// (for looking at one member's copy; not for running a partition).
    pub serializable_reads: bool,
    /// The cluster's `--max-request-bytes`: an append request is kept below it (events and
    /// framing), splitting a batch as needed.
    pub max_request_bytes: usize,
    /// How long a lost majority is waited for. `None`: not at all (a request gives up after
    /// `retry_for`). `Some(d)`: a request that fails while fewer than half the members answer
    /// goes on retrying (saying so, once per few seconds) until the majority is back or has
    /// been lost for `d`; then the store fails ([`Storage::failure`]) and every request after
    /// it is refused at once.
    pub quorum_wait: Option<Duration>,
}

impl EtcdConfig {
    /// Defaults for `endpoints`: 2 s per request, retried for 10 s, linearizable reads, etcd's
    /// default request limit (1.5 MiB).
    pub fn new(endpoints: Vec<String>) -> Self {
        Self {
            endpoints,
            request_timeout: Duration::from_secs(2),
            retry_for: Duration::from_secs(10),
            serializable_reads: false,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            quorum_wait: None,
        }
    }

    /// Parses `etcd://host:port,host:port,...` into a configuration with defaults.
    pub fn from_url(url: &str) -> Result<Self, StorageError> {
        let rest = url.strip_prefix("etcd://").ok_or_else(|| {
            StorageError(format!("{url:?} is not an etcd URL (etcd://HOST:PORT,...)"))
        })?;
        let endpoints: Vec<String> = rest
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                if s.starts_with("http://") {
                    s.to_string()
                } else {
                    format!("http://{s}")
                }
            })
            .collect();
        if endpoints.is_empty() {
            return Err(StorageError(format!("{url:?} names no etcd endpoint")));
        }
        Ok(Self::new(endpoints))
    }
}

/// Counters of what the store did, for reports.
#[derive(Debug, Default)]
pub struct EtcdStats {
    /// PLog events appended by this store.
    pub appends: AtomicU64,
    /// Append transactions sent (one per batch, or per part of a batch split to fit etcd's
    /// request limit), retries included.
    pub append_txns: AtomicU64,
    /// Appends refused by the fence.
    pub fenced: AtomicU64,
    /// Flusher writes (values and next offset) applied.
    pub writes: AtomicU64,
    /// Transactions sent (appends, view chunks, offsets), retries included.
    pub txns: AtomicU64,
    /// Requests retried after a transport error or timeout.
    pub retries: AtomicU64,
    /// Appends found committed by an earlier attempt whose answer was lost.
    pub read_backs: AtomicU64,
    /// View writes tried again because another writer changed the same workspaces.
    pub view_conflicts: AtomicU64,
    /// The cluster's revision after the last PLog trim (what `archive` compacts up to).
    pub trim_revision: AtomicU64,
}

/// Storage of many partitions on an etcd cluster. Clones share the client and its runtime.
#[derive(Clone)]
pub struct EtcdStorage {
    inner: Arc<Inner>,
}

struct Inner {
    runtime: Option<tokio::runtime::Runtime>,
    client: Client,
    config: EtcdConfig,
    label: String,
    stats: EtcdStats,
    pack_shape: PackShape,
    quorum: Quorum,
}

/// What PLog reads have met, to size the next read: events per key (last read) and the
/// largest value (ever; 0 before the first read).
struct PackShape {
    events_per_key: AtomicU64,
    largest_value: AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn one_line(s: &str) -> String {
    s.split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The key of the numbering layout the first run recorded ([`Layout::to_text`]).
const LAYOUT_KEY: &str = "layout";

/// The key that records where the store's archive of old PLog events is
/// (`ArchiveRecord::to_text`).
#[cfg(feature = "objects")]
const ARCHIVE_KEY: &str = "archive";

/// The most PLog keys (packs) one trim request deletes.
#[cfg(feature = "objects")]
const TRIM_KEYS: i64 = 512;

fn plog_prefix(p: PartitionId) -> String {
    format!("plog/{p}/")
}

fn plog_key(p: PartitionId, offset: PLogOffset) -> String {
    format!("plog/{p}/{offset:020}")
}

fn seq_prefix(p: PartitionId) -> String {
    format!("seq/{p}/")
}

/// The key of a workspace's numbers. Keys of the earlier layout, one per (workspace,
/// sequence), are `seq/<p>/<ws:020>/<seq:05>`: this key is their prefix, so a range read from
/// it to [`prefix_end`] finds both.
fn ws_key(p: PartitionId, ws: WsId) -> String {
    format!("seq/{p}/{ws:020}")
}

fn next_key(p: PartitionId) -> String {
    format!("next/{p}")
}

/// The end of a prefix range: the prefix with its last byte incremented ('/' + 1 is '0').
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

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
                .chunks_exact(VIEW_ENTRY_BYTES)
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

    /// The numbers of `seqs`, 0 for one never stored.
    fn numbers_of<'a>(&'a self, seqs: &'a [SeqId]) -> impl Iterator<Item = Number> + 'a {
        seqs.iter()
            .map(|s| self.numbers.get(s).copied().unwrap_or(0))
    }
}

fn parse_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

fn offset_of(key: &[u8]) -> Option<PLogOffset> {
    std::str::from_utf8(key)
        .ok()?
        .rsplit('/')
        .next()?
        .parse()
        .ok()
}

/// A request's failure: the transport (retry) or a definite answer (report).
enum Failure {
    Transient(String),
    Fatal(String),
}

/// Whether an etcd or gRPC error message says a request was larger than the cluster takes.
fn too_large(message: &str) -> bool {
    message.contains("request is too large") || message.contains("larger than max")
}

fn classify(e: etcd_client::Error) -> Failure {
    use etcd_client::Error as E;
    match &e {
        E::GRpcStatus(s) => match s.code() {
            tonic_code::InvalidArgument
            | tonic_code::FailedPrecondition
            | tonic_code::OutOfRange
            | tonic_code::PermissionDenied
            | tonic_code::Unauthenticated
            | tonic_code::Unimplemented => Failure::Fatal(one_line(s.message())),
            // A request over the member's gRPC message limit ("received message larger than
            // max"): sending it again cannot help.
            tonic_code::ResourceExhausted if too_large(s.message()) => {
                Failure::Fatal(one_line(s.message()))
            }
            _ => Failure::Transient(one_line(&format!("{:?}: {}", s.code(), s.message()))),
        },
        _ => Failure::Transient(one_line(&e.to_string())),
    }
}

impl EtcdStorage {
    /// Connects to the cluster (lazily: members may come up later; requests retry).
    pub fn connect(config: EtcdConfig) -> Result<Self, StorageError> {
        let label = format!("etcd {}", config.endpoints.join(","));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("etcd-client")
            .enable_all()
            .build()
            .map_err(|e| StorageError(format!("{label}: cannot start the client runtime: {e}")))?;
        let options = ConnectOptions::new()
            .with_timeout(config.request_timeout)
            .with_connect_timeout(config.request_timeout)
            // Without a leader a member answers at once instead of holding the request.
            .with_require_leader(true);
        let endpoints = config.endpoints.clone();
        let client = runtime
            .block_on(async move { Client::connect(endpoints, Some(options)).await })
            .map_err(|e| {
                StorageError(format!(
                    "{label}: cannot connect: {}",
                    one_line(&e.to_string())
                ))
            })?;
        let quorum = runtime.block_on(Quorum::connect(
            label.clone(),
            &config.endpoints,
            config.quorum_wait,
        ));
        Ok(Self {
            inner: Arc::new(Inner {
                runtime: Some(runtime),
                client,
                config,
                label,
                stats: EtcdStats::default(),
                pack_shape: PackShape {
                    events_per_key: AtomicU64::new(1),
                    largest_value: AtomicU64::new(0),
                },
                quorum,
            }),
        })
    }

    /// Connects to the cluster named by `etcd://host:port,...`.
    pub fn connect_url(url: &str) -> Result<Self, StorageError> {
        Self::connect(EtcdConfig::from_url(url)?)
    }

    /// The configuration in use.
    pub fn config(&self) -> &EtcdConfig {
        &self.inner.config
    }

    /// "etcd http://…": names the cluster in messages.
    pub fn label(&self) -> &str {
        &self.inner.label
    }

    /// What the store has done so far.
    pub fn stats(&self) -> &EtcdStats {
        &self.inner.stats
    }

    fn kv(&self) -> KvClient {
        self.inner
            .client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
    }

    fn err(&self, what: &str, e: &str) -> StorageError {
        StorageError(format!("{}: {what}: {e}", self.inner.label))
    }

    fn get_options(&self) -> GetOptions {
        if self.inner.config.serializable_reads {
            GetOptions::new().with_serializable()
        } else {
            GetOptions::new()
        }
    }

    /// Runs `fut` on the store's runtime; the returned future answers on any executor.
    fn spawn<T: Send + 'static, E: From<StorageError> + Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T, E>> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, E>> {
        let (tx, rx) = oneshot::channel();
        let closed = self.err("the store is closed", "its runtime stopped");
        match &self.inner.runtime {
            Some(rt) => {
                rt.spawn(async move {
                    let _ = tx.send(fut.await);
                });
            }
            None => return futures::future::ready(Err(E::from(closed))).boxed(),
        }
        async move { rx.await.unwrap_or_else(|_| Err(E::from(closed))) }.boxed()
    }

    /// Runs `fut` on the store's runtime and waits for it on this (non-tokio) thread.
    fn block<T: Send + 'static, E: From<StorageError> + Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T, E>> + Send + 'static,
    ) -> Result<T, E> {
        futures::executor::block_on(self.spawn(fut))
    }

    /// Retries `attempt` on transient failures, with backoff, until `retry_for` has passed.
    async fn retrying<T, F, Fut>(self, what: String, attempt: F) -> Result<T, StorageError>
    where
        F: FnMut(KvClient) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let retry_for = self.inner.config.retry_for;
        self.retrying_for(what, retry_for, attempt).await
    }

    /// Retries `attempt` on transient failures, with backoff, until `retry_for` has passed.
    async fn retrying_for<T, F, Fut>(
        self,
        what: String,
        retry_for: Duration,
        mut attempt: F,
    ) -> Result<T, StorageError>
    where
        F: FnMut(KvClient) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let mut deadline = Instant::now() + retry_for;
        let policy = RetryPolicy::ETCD_REQUEST;
        let mut waits = policy.waits(self.inner.stats.retries.load(Ordering::Relaxed));
        let mut failing_since: Option<Instant> = None;
        let mut waited_for_majority = false;
        let quorum = &self.inner.quorum;
        loop {
            if let Some(failure) = quorum.failure() {
                return Err(self.err(&what, &failure));
            }
            match attempt(self.kv()).await.map_err(classify) {
                Ok(v) => {
                    quorum.succeeded();
                    return Ok(v);
                }
                Err(Failure::Fatal(e)) if too_large(&e) => {
                    // The cluster's limit is below this store's: nothing sent again can pass.
                    let failure = format!(
                        "the cluster refused a request as too large ({e}); its --max-request-bytes is below this store's limit ({} bytes): give the store the cluster's limit, or raise the cluster's",
                        self.inner.config.max_request_bytes
                    );
                    quorum.fail(format!("{}: {failure}", self.inner.label));
                    return Err(self.err(&what, &failure));
                }
                Err(Failure::Fatal(e)) => return Err(self.err(&what, &e)),
                Err(Failure::Transient(e)) => {
                    let delay = waits.next().unwrap_or(policy.max_wait);
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    match quorum.after_failing(&what, since).await {
                        Next::GiveUp(failure) => return Err(self.err(&what, &failure)),
                        Next::WaitForMajority => waited_for_majority = true,
                        Next::Retry => {
                            if waited_for_majority {
                                // The majority is back: the request gets its own time again.
                                waited_for_majority = false;
                                deadline = Instant::now() + retry_for;
                            }
                            if Instant::now() + delay > deadline {
                                let total = quorum.members();
                                let reachable = quorum.reachable().await;
                                return Err(self.err(
                                    &what,
                                    &format!(
                                        "{e} (gave up after {:.1} s: is a majority of the cluster up? {reachable} of {total} members reachable)",
                                        retry_for.as_secs_f64()
                                    ),
                                ));
                            }
                        }
                    }
                    self.inner.stats.retries.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!("{}: {what}: {e}; retrying", self.inner.label);
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    /// One fenced append transaction: stores the events from `first` to `last` (encoded as
    /// one value, `pack`) under `last`'s key if `first` is the PLog's next offset, else nothing.
    async fn append_part_async(
        self,
        partition: PartitionId,
        first: PLogOffset,
        last: PLogOffset,
        pack: Vec<u8>,
    ) -> Result<(), AppendError> {
        if first == 0 {
            return Err(AppendError::WrongOffset {
                expected: self
                    .clone()
                    .next_plog_offset_async(partition)
                    .await
                    .map_err(AppendError::Storage)?,
                offered: 0,
            });
        }
        let count = last + 1 - first;
        let key = plog_key(partition, last);
        let prefix = plog_prefix(partition);
        // The fence: no key at or after `first` (no event there: a key holds the events up to
        // its offset), and a key at `first - 1` (the PLog ends exactly there).
        let mut when = vec![
            Compare::create_revision(plog_key(partition, first), CompareOp::Equal, 0)
                .with_range(prefix_end(&prefix)),
        ];
        if first > 1 {
            when.push(Compare::create_revision(
                plog_key(partition, first - 1),
                CompareOp::Greater,
                0,
            ));
        }
        let txn = Txn::new()
            .when(when)
            .and_then(vec![TxnOp::put(key.clone(), pack.clone(), None)])
            .or_else(vec![
                TxnOp::get(key.clone(), None),
                TxnOp::get(
                    prefix.clone(),
                    Some(
                        GetOptions::new()
                            .with_range(prefix_end(&prefix))
                            .with_sort(SortTarget::Key, SortOrder::Descend)
                            .with_limit(1)
                            .with_keys_only(),
                    ),
                ),
            ]);
        let stats = &self.inner.stats;
        let mut attempts = 0u32;
        let what = if count == 1 {
            format!("append at partition {partition} offset {first}")
        } else {
            format!("append at partition {partition} offset {first} ({count} events, to {last})")
        };
        let resp = self
            .clone()
            .retrying(what, |mut kv| {
                attempts += 1;
                stats.txns.fetch_add(1, Ordering::Relaxed);
                stats.append_txns.fetch_add(1, Ordering::Relaxed);
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
            .map_err(AppendError::Storage)?;
        if resp.succeeded() {
            stats.appends.fetch_add(count, Ordering::Relaxed);
            return Ok(());
        }
        let mut at_last: Option<Vec<u8>> = None;
        let mut plog_last: PLogOffset = 0;
        for (i, r) in resp.op_responses().into_iter().enumerate() {
            if let TxnOpResponse::Get(g) = r {
                match i {
                    0 => at_last = g.kvs().first().map(|kv| kv.value().to_vec()),
                    _ => {
                        plog_last = g
                            .kvs()
                            .first()
                            .and_then(|kv| offset_of(kv.key()))
                            .unwrap_or(0);
                    }
                }
            }
        }
        // Only after an attempt whose outcome is unknown can the events be ours: a first
        // attempt that was answered "no" wrote nothing (and another writer's events may be
        // byte-for-byte equal to ours).
        if attempts > 1 && at_last.as_deref() == Some(pack.as_slice()) {
            stats.read_backs.fetch_add(1, Ordering::Relaxed);
            stats.appends.fetch_add(count, Ordering::Relaxed);
            return Ok(());
        }
        stats.fenced.fetch_add(1, Ordering::Relaxed);
        Err(AppendError::WrongOffset {
            expected: plog_last + 1,
            offered: first,
        })
    }

    async fn next_plog_offset_async(
        self,
        partition: PartitionId,
    ) -> Result<PLogOffset, StorageError> {
        let prefix = plog_prefix(partition);
        let opts = self
            .get_options()
            .with_range(prefix_end(&prefix))
            .with_sort(SortTarget::Key, SortOrder::Descend)
            .with_limit(1);
        let resp = self
            .clone()
            .retrying(
                format!("read the PLog end of partition {partition}"),
                |mut kv| {
                    let (prefix, opts) = (prefix.clone(), opts.clone());
                    async move { kv.get(prefix, Some(opts)).await }
                },
            )
            .await?;
        Ok(resp
            .kvs()
            .first()
            .and_then(|kv| offset_of(kv.key()))
            .unwrap_or(0)
            + 1)
    }

    async fn events_async(
        self,
        partition: PartitionId,
        from: PLogOffset,
        max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        let max = max.min(PAGE_EVENTS);
        let prefix = plog_prefix(partition);
        let mut out: Vec<StoredEvent> = Vec::new();
        let mut start = plog_key(partition, from);
        while out.len() < max {
            // A key holds a pack of events: ask for as many keys as should hold what is still
            // wanted, and no more than keeps the response within READ_BUDGET_BYTES.
            let shape = &self.inner.pack_shape;
            let per_key = shape.events_per_key.load(Ordering::Relaxed).max(1);
            // Until a read has seen one, a value may be as large as a request.
            let key_bytes = match shape.largest_value.load(Ordering::Relaxed) {
                0 => self.inner.config.max_request_bytes as u64,
                seen => seen,
            };
            let keys = (max - out.len())
                .div_ceil(usize::try_from(per_key).unwrap_or(1))
                .min(READ_BUDGET_BYTES / usize::try_from(key_bytes).unwrap_or(usize::MAX))
                .clamp(1, PAGE_EVENTS);
            let opts = self
                .get_options()
                .with_range(prefix_end(&prefix))
                .with_limit(i64::try_from(keys).unwrap_or(i64::MAX));
            let resp = self
                .clone()
                .retrying(
                    format!("read the PLog of partition {partition} from {from}"),
                    |mut kv| {
                        let (start, opts) = (start.clone(), opts.clone());
                        async move { kv.get(start, Some(opts)).await }
                    },
                )
                .await?;
            let (mut events_read, mut largest) = (0u64, 0u64);
            for kv in resp.kvs() {
                let last = offset_of(kv.key()).ok_or_else(|| {
                    self.err("PLog key is not ours", &String::from_utf8_lossy(kv.key()))
                })?;
                let corrupt = || {
                    self.err(
                        "corrupt PLog event",
                        &format!("partition {partition}, the events up to offset {last}"),
                    )
                };
                let pack = split_pack(kv.value()).ok_or_else(corrupt)?;
                let first = (last + 1)
                    .checked_sub(pack.len() as u64)
                    .ok_or_else(corrupt)?;
                events_read += pack.len() as u64;
                largest = largest.max(kv.value().len() as u64);
                for (offset, bytes) in (first..).zip(pack) {
                    if offset < from || out.len() >= max {
                        continue;
                    }
                    let (values, payload) = decode_event(bytes).ok_or_else(corrupt)?;
                    out.push(StoredEvent {
                        offset,
                        values,
                        payload: payload.to_vec(),
                    });
                }
            }
            if let Some(n) = events_read.checked_div(resp.kvs().len() as u64) {
                shape.events_per_key.store(n.max(1), Ordering::Relaxed);
                shape.largest_value.fetch_max(largest, Ordering::Relaxed);
            }
            match resp.kvs().last() {
                Some(last) if resp.more() => {
                    let mut next = last.key().to_vec();
                    next.push(0);
                    start = String::from_utf8_lossy(&next).into_owned();
                }
                _ => break,
            }
        }
        Ok(out)
    }

    async fn get_u64(self, key: String, what: String) -> Result<Option<u64>, StorageError> {
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

    async fn write_async(
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
        let mut delay = Duration::from_millis(2);
        for attempt in 0..VIEW_WRITE_ATTEMPTS {
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
            let mut compares = Vec::new();
            let mut ops = Vec::new();
            for ((ws, new), r) in chunk.iter().zip(resp.op_responses()) {
                let stored = match r {
                    TxnOpResponse::Get(g) => WsView::of(g.kvs()),
                    _ => None,
                };
                let stored =
                    stored.ok_or_else(|| self.err("write the view", "a view key is not ours"))?;
                let mut merged = stored.numbers.clone();
                for &(seq, n) in new {
                    let e = merged.entry(seq).or_default();
                    *e = (*e).max(n);
                }
                let value = encode_numbers(&merged);
                if value == stored.value && !stored.old_rows {
                    continue;
                }
                let key = ws_key(partition, *ws);
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
                ops.push(TxnOp::put(key, value, None));
            }
            if let Some(o) = offset {
                ops.push(TxnOp::put(
                    next_key(partition),
                    o.to_be_bytes().to_vec(),
                    None,
                ));
            }
            if ops.is_empty() {
                return Ok(());
            }
            let write = Txn::new().when(compares).and_then(ops);
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
                .await?;
            if resp.succeeded() {
                return Ok(());
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

    async fn numbers_async(
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
    async fn numbers_many_async(
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

    async fn view_async(
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

    async fn partitions_async(self) -> Result<Vec<PartitionId>, StorageError> {
        let mut out = Vec::new();
        // next/<p> keys.
        let opts = self.get_options().with_range(prefix_end("next/"));
        let resp = self
            .clone()
            .retrying("list partitions".into(), |mut kv| {
                let opts = opts.clone();
                async move { kv.get("next/", Some(opts)).await }
            })
            .await?;
        out.extend(
            resp.kvs()
                .iter()
                .filter_map(|kv| offset_of(kv.key()).and_then(|p| u32::try_from(p).ok())),
        );
        // Skip-scan the PLog: one read per partition.
        let mut start = "plog/".to_string();
        loop {
            let opts = self
                .get_options()
                .with_range(prefix_end("plog/"))
                .with_limit(1);
            let resp = self
                .clone()
                .retrying("list partitions".into(), |mut kv| {
                    let (start, opts) = (start.clone(), opts.clone());
                    async move { kv.get(start, Some(opts)).await }
                })
                .await?;
            let Some(kv) = resp.kvs().first() else { break };
            let key = String::from_utf8_lossy(kv.key()).into_owned();
            let Some(p) = key.split('/').nth(1).and_then(|p| p.parse::<u32>().ok()) else {
                return Err(self.err("PLog key is not ours", &key));
            };
            out.push(p);
            start = String::from_utf8_lossy(&prefix_end(&plog_prefix(p))).into_owned();
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// The numbering layout recorded in the cluster (key `layout`), `None` if none is.
    pub fn read_layout(&self) -> Result<Option<Layout>, StorageError> {
        let this = self.clone();
        let resp = self.block(async move {
            let opts = this.get_options();
            this.retrying("read the numbering layout".into(), |mut kv| {
                let opts = opts.clone();
                async move { kv.get(LAYOUT_KEY, Some(opts)).await }
            })
            .await
        })?;
        match resp.kvs().first() {
            None => Ok(None),
            Some(kv) => {
                let text = String::from_utf8_lossy(kv.value());
                Layout::parse(&text).map(Some).map_err(|e| {
                    self.err(
                        "read the numbering layout",
                        &format!("the record is damaged: {e}"),
                    )
                })
            }
        }
    }

    /// Records `layout` in the cluster unless one is recorded already (one conditional
    /// transaction, so two first runs cannot both record theirs); returns the layout recorded
    /// now (`layout`, or the one another run recorded first).
    pub fn record_layout(&self, layout: &Layout) -> Result<Layout, StorageError> {
        let text = layout.to_text();
        let this = self.clone();
        let txn = Txn::new()
            .when(vec![Compare::create_revision(
                LAYOUT_KEY,
                CompareOp::Equal,
                0,
            )])
            .and_then(vec![TxnOp::put(LAYOUT_KEY, text, None)]);
        let recorded = self.block(async move {
            this.retrying("record the numbering layout".into(), |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
        })?;
        if recorded.succeeded() {
            return Ok(layout.clone());
        }
        self.read_layout()?.ok_or_else(|| {
            self.err(
                "record the numbering layout",
                "another run recorded one and it is gone again",
            )
        })
    }

    /// Checks that the cluster answers a linearizable read (so has a leader and a majority),
    /// retrying for at most `within`.
    pub fn probe(&self, within: Duration) -> Result<(), StorageError> {
        let this = self.clone();
        self.block(async move {
            this.retrying_for("reach the cluster".into(), within, |mut kv| async move {
                kv.get("next/0", None).await
            })
            .await
            .map(|_| ())
        })
    }
}

#[cfg(feature = "objects")]
impl EtcdStorage {
    /// Where the store's archive is (key `archive`), `None` if none is recorded.
    pub fn read_archive(&self) -> Result<Option<std::path::PathBuf>, StorageError> {
        let this = self.clone();
        let resp = self.block(async move {
            let opts = this.get_options();
            this.retrying("read the archive record".into(), |mut kv| {
                let opts = opts.clone();
                async move { kv.get(ARCHIVE_KEY, Some(opts)).await }
            })
            .await
        })?;
        resp.kvs()
            .first()
            .map(|kv| {
                crate::store::layers::archive::ArchiveRecord::parse(
                    &String::from_utf8_lossy(kv.value()),
                    &format!("{}: key {ARCHIVE_KEY}", self.inner.label),
                )
            })
            .transpose()
    }

    /// Records `root` as the store's archive unless one is recorded already (one conditional
    /// transaction); a different one recorded first is an error naming both.
    pub fn record_archive(&self, root: &std::path::Path) -> Result<(), StorageError> {
        let text = crate::store::layers::archive::ArchiveRecord::to_text(root);
        let this = self.clone();
        let txn = Txn::new()
            .when(vec![Compare::create_revision(
                ARCHIVE_KEY,
                CompareOp::Equal,
                0,
            )])
            .and_then(vec![TxnOp::put(ARCHIVE_KEY, text, None)]);
        let done = self.block(async move {
            this.retrying("record the archive".into(), |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
        })?;
        match self.read_archive()? {
            Some(r) if r == root => Ok(()),
            _ if done.succeeded() => Ok(()),
            other => Err(self.err(
                "record the archive",
                &format!("another one is recorded: {other:?}"),
            )),
        }
    }
}

#[cfg(feature = "objects")]
impl crate::store::layers::trim::Trim for EtcdStorage {
    /// Deletes the PLog keys (packs) of a partition whose events all lie below `below`, the
    /// stored next offset and the PLog's last event, at most [`TRIM_KEYS`] per request (one
    /// range delete); a pack holding any event at or past those stays whole.
    fn trim_below(
        &self,
        partition: PartitionId,
        below: PLogOffset,
    ) -> Result<crate::store::layers::trim::Trimmed, StorageError> {
        use crate::store::reader::StoreReader;
        let Some((first, last)) = self.plog_bounds(partition)? else {
            return Ok(crate::store::layers::trim::Trimmed::default());
        };
        let stored = self.stored_next_offset(partition)?;
        let end = below.min(stored).min(last);
        let none = crate::store::layers::trim::Trimmed {
            deleted: 0,
            first_kept: first,
        };
        if end <= first {
            return Ok(none);
        }
        // Keys are packs' last offsets: the keys below `end` hold only events below it.
        let (from, to) = (plog_key(partition, 0), plog_key(partition, end));
        let this = self.clone();
        let opts = self
            .get_options()
            .with_range(to.clone())
            .with_keys_only()
            .with_limit(TRIM_KEYS);
        let keys = self.block(async move {
            this.retrying(
                format!("list PLog keys of partition {partition} to trim"),
                |mut kv| {
                    let (from, opts) = (from.clone(), opts.clone());
                    async move { kv.get(from, Some(opts)).await }
                },
            )
            .await
        })?;
        let Some(upto) = keys.kvs().last().and_then(|kv| offset_of(kv.key())) else {
            return Ok(none);
        };
        let this = self.clone();
        let (from, to) = (plog_key(partition, 0), plog_key(partition, upto + 1));
        let deleted = self.block(async move {
            this.retrying(
                format!("trim the PLog of partition {partition}"),
                |mut kv| {
                    let (from, to) = (from.clone(), to.clone());
                    async move {
                        kv.delete(from, Some(DeleteOptions::new().with_range(to)))
                            .await
                    }
                },
            )
            .await
        })?;
        if let Some(h) = deleted.header() {
            self.inner
                .stats
                .trim_revision
                .fetch_max(u64::try_from(h.revision()).unwrap_or(0), Ordering::Relaxed);
        }
        Ok(crate::store::layers::trim::Trimmed {
            deleted: upto + 1 - first,
            first_kept: upto + 1,
        })
    }

    /// Compacts the cluster's history up to the revision of the last trim, so the deleted
    /// packs' space can be reused (defragmentation, which returns it to the file system, is
    /// left to the operator: it blocks a member while it runs).
    fn after_trim(&self) -> Result<Option<String>, StorageError> {
        let rev = i64::try_from(self.inner.stats.trim_revision.load(Ordering::Relaxed))
            .unwrap_or(i64::MAX);
        if rev <= 0 {
            return Ok(None);
        }
        let this = self.clone();
        let outcome = self.block(async move {
            this.retrying(
                format!("compact the history up to revision {rev}"),
                |mut kv| async move { kv.compact(rev, None).await },
            )
            .await
        });
        match outcome {
            Ok(_) => Ok(Some(format!("etcd history compacted up to revision {rev}"))),
            // Compacted already (by another archive pass or the cluster's own compaction).
            Err(e) if e.0.contains("compacted") => Ok(Some(format!(
                "etcd history already compacted past revision {rev}"
            ))),
            Err(e) => Err(e),
        }
    }
}

impl crate::store::reader::StoreReader for EtcdStorage {
    fn describe(&self) -> String {
        self.label().to_string()
    }

    fn layout(&self) -> Result<Option<Layout>, StorageError> {
        self.read_layout()
    }

    /// Partitions that have a PLog or a stored next offset, ascending.
    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        self.block(self.clone().partitions_async())
    }

    /// The first and last offsets of a partition's PLog, `None` if it is empty.
    fn plog_bounds(
        &self,
        partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        let first = self.events(partition, 0, 1)?.first().map(|e| e.offset);
        let Some(first) = first else { return Ok(None) };
        let next = self.block(self.clone().next_plog_offset_async(partition))?;
        Ok(Some((first, next - 1)))
    }

    /// Up to `max` events of a partition's PLog from `from` on (at most [`PAGE_EVENTS`] per
    /// call), in offset order.
    fn events(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        self.block(self.clone().events_async(partition, from, max))
    }

    /// The stored next PLog offset of a partition, 0 if none.
    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        self.block(self.clone().get_u64(
            next_key(partition),
            format!("read the next offset of partition {partition}"),
        ))
        .map(Option::unwrap_or_default)
    }

    /// The sequences view of a partition: (workspace, sequence, last), in key order.
    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        self.block(self.clone().view_async(partition))
    }
}

impl Storage for EtcdStorage {
    fn read_numbers(
        &self,
        partition: PartitionId,
        ws: WsId,
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.block(self.clone().numbers_async(partition, ws, seqs.to_vec()))
    }

    fn read_numbers_many(
        &self,
        partition: PartitionId,
        ws: &[WsId],
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.block(
            self.clone()
                .numbers_many_async(partition, ws.to_vec(), seqs.to_vec()),
        )
    }

    fn read_next_offset(
        &self,
        partition: PartitionId,
    ) -> BoxFuture<'static, Result<PLogOffset, StorageError>> {
        let fut = self.clone().get_u64(
            next_key(partition),
            format!("read the next offset of partition {partition}"),
        );
        self.spawn(async move { fut.await.map(Option::unwrap_or_default) })
    }

    fn write(
        &self,
        partition: PartitionId,
        values: Vec<SeqValue>,
        next_offset: PLogOffset,
    ) -> BoxFuture<'static, Result<(), StorageError>> {
        self.spawn(self.clone().write_async(partition, values, next_offset))
    }

    fn read_plog(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max_events: usize,
    ) -> BoxFuture<'static, Result<PlogPage, StorageError>> {
        let this = self.clone();
        self.spawn(async move {
            // One event more than asked for tells whether the PLog ends with the page.
            let want = max_events.min(PAGE_EVENTS - 1);
            let events = this.events_async(partition, from, want + 1).await?;
            Ok(PlogPage::collect(
                from,
                want,
                events.into_iter().map(|e| (e.offset, e.values)),
            ))
        })
    }

    fn append_event(
        &self,
        partition: PartitionId,
        offset: PLogOffset,
        values: &[SeqValue],
        payload: &[u8],
    ) -> Result<(), AppendError> {
        self.append_events(partition, &EventBatch::single(offset, values, payload))
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        let limits = self.append_limits();
        batch.append_in_parts(limits, |part| {
            if part.encoded_len() > limits.max_bytes {
                // One event alone over this store's own limit: refused here, before etcd would
                // refuse the request (which would mean the limits disagree, see `too_large`).
                return Err(AppendError::Storage(self.err(
                    &format!(
                        "append at partition {partition} offset {}",
                        part.first()
                    ),
                    &format!(
                        "the event is {} bytes, more than one request of this store takes ({} bytes)",
                        part.encoded_len(),
                        limits.max_bytes
                    ),
                )));
            }
            let pack = encode_pack(part.iter().map(|(_, e)| e));
            self.block(self.clone().append_part_async(
                partition,
                part.first(),
                part.next() - 1,
                pack,
            ))
        })
    }

    fn failure(&self) -> Option<String> {
        self.inner.quorum.failure()
    }

    fn append_limits(&self) -> AppendLimits {
        // The pack's lengths, the key, the compares, the else branch and gRPC framing take at
        // most this much beside the events.
        let overhead = 4 * PACK_MAX_EVENTS + REQUEST_HEADROOM_BYTES;
        AppendLimits {
            max_events: PACK_MAX_EVENTS,
            max_bytes: self
                .inner
                .config
                .max_request_bytes
                .saturating_sub(overhead)
                .max(1),
        }
    }
}
