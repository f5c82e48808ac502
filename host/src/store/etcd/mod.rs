//! Storage on an etcd cluster (Raft-replicated, linearizable), for partitions spread over many
//! hosts that share one store.
//!
//! Keys (numbers zero-padded so that keys sort in numeric order):
//!
//! | key                                  | value                                              |
//! |--------------------------------------|----------------------------------------------------|
//! | `plog/<partition>/<offset:020>`      | the events of one append, up to `offset`: one event as [`encode_event`](crate::store::codec::encode_event) encodes it, or a pack of several ([`encode_pack`](crate::store::codec::encode_pack)) |
//! | `seq/<partition>/<ws:020>`           | the workspace's last numbers: (sequence u16, number u64) big-endian pairs by sequence |
//! | `next/<partition>`                   | the stored next PLog offset, 8 bytes BE            |
//! | `layout`                             | the numbering layout the first run recorded (text, as in a data directory's `LAYOUT`) |
//! | `plog-place`                         | where the PLog is when not in the cluster (the composite store's objects) |
//!
//! Stores written before packs and per-workspace view keys read on: a PLog key of one event is
//! a pack of one, and view rows `seq/<p>/<ws:020>/<seq:05>` (one number each) are merged with
//! the workspace key they extend, and folded into it by the next write of that workspace.
//!
//! - **The fence.** An append of the events `F..=L` is one transaction that puts their pack
//!   under `plog/P/L` only if no key exists from `plog/P/F` on (a range compare) and
//!   `plog/P/F-1` does (or `F` is 1). Two hosts that both believe they own a partition can
//!   never both commit an offset: the stale one's transaction fails and it gets
//!   [`AppendError::WrongOffset`](crate::store::storage::AppendError::WrongOffset) with the PLog's
//!   real next offset (read in the same transaction's else branch). A batch larger than a request
//!   ([`EtcdConfig::max_request_bytes`],
//!   [`PACK_MAX_EVENTS`]) is appended in parts, in order, each fenced so.
//! - **Ambiguous outcomes.** After a transport error or timeout the append may or may not have
//!   been applied. The writer retries the same conditional transaction; when a retry fails, its
//!   else branch also returns the key at `L`, and the append counts as the writer's own only if
//!   the stored value is byte-for-byte its pack (payloads should name their writer, so that two
//!   hosts' events are never equal).
//! - **Several partitions in one transaction** (`combine.rs`). Parts appended while another
//!   transaction is in flight go together: all their fences as compares, all their packs as
//!   puts, applied whole or not at all. When a compare fails each part is sent again on its own
//!   (the stale one is refused alone); when no answer comes, again on its own as after an
//!   ambiguous attempt.
//! - **Values, then offset.** A flusher write reads the view keys of the workspaces it touches
//!   (from the member it talks to first, linearizably after a conflict), merges its numbers
//!   into them by maximum, and writes them back only if none changed since (revision compares;
//!   read again otherwise), up to 63 workspaces per transaction, the chunks sent together,
//!   then the last with the next offset, which it only raises (read with the last chunk's
//!   keys, put only if higher, under a revision compare). So a stale host's late flusher
//!   write can never move the view or the stored offset backwards, and the offset is durable
//!   only after every value.
//! - **Reads** are linearizable (served through the leader's read index), so a read sees every
//!   completed write; PLog reads are range reads in pages of at most [`PAGE_EVENTS`] events.
//! - **Ownership** ([`ownership`]). Once a host registers its lease on the store, every append
//!   and view write also compares the partition's epoch (the create revision of its owner
//!   key), and nothing is written once the lease may have expired.
//! - Requests that fail on the transport (a member died, no leader) are retried with backoff
//!   until [`EtcdConfig::retry_for`] has passed, then reported as a one-line error.
//!
//! etcd-client is built on tonic, which needs a tokio runtime; the host's driver is a plain
//! `futures` loop. So the store owns a small multi-thread tokio runtime: every operation is
//! spawned on it and answered through a oneshot channel, which any executor (or a blocking
//! wait, for the synchronous `read_numbers` and `append_event`) can await.
//!
//! The files, one concern each:
//!
//! | file | what it does |
//! |---|---|
//! | `handle.rs` | [`EtcdStorage`]: the handle every operation works through, and its getters |
//! | `connect.rs` | opening the store (runtime, client, quorum) and probing the cluster |
//! | `config.rs` | [`EtcdConfig`]: endpoints, time limits, the request limit; parsing `etcd://` URLs |
//! | `keys.rs` | the key scheme above: building keys and reading offsets and numbers back |
//! | `request.rs` | the tokio bridge (spawn, block) and running one request with retries and backoff |
//! | `quorum.rs` | what the store does when requests keep failing: the majority, the store's failure |
//! | `append.rs` | fenced appends, split to fit a request, an ambiguous outcome read back |
//! | `combine.rs`, `combine_queue.rs` | several partitions' appends in one transaction; the parts waiting for it |
//! | `plog.rs` | PLog reads in pages sized by what earlier reads met |
//! | `plog_end.rs` | the PLog's end (last key), read from the last key this store has seen |
//! | `plog_end_hints.rs` | that last key seen, per partition: where the read of the end starts |
//! | `pack_shape.rs` | what PLog reads have met (events per key, largest value), sizing the next |
//! | `view.rs` | view reads (one workspace, many, a partition's whole view) and what a workspace's keys hold |
//! | `view_write.rs` | the flusher's revision-checked writes of the view, the offset last |
//! | `records.rs` | what the cluster records beside the data: the numbering layout, the archive |
//! | `tail_probe.rs` | [`TailProbe`](crate::store::TailProbe): the stored offset and the PLog's end in one read |
//! | `reader.rs` | [`StoreReader`](crate::store::reader::StoreReader): what `check` and `inspect` read |
//! | `trim.rs` | [`Trim`](crate::store::Trim): the archive's trim of old packs, and compacting the history after it |
//! | `storage.rs` | [`Storage`](crate::store::storage::Storage): each method on the store's runtime |
//! | `stats.rs` | [`EtcdStats`]: counters for reports |
//! | `ownership/` | many hosts: leases, partitions owned through them, the epoch fence, placement |

mod append;
mod combine;
mod combine_queue;
mod config;
mod connect;
mod handle;
mod keys;
pub mod ownership;
mod pack_shape;
mod plog;
mod plog_end;
mod plog_end_hints;
mod quorum;
mod reader;
mod records;
mod request;
mod stats;
mod storage;
mod tail_probe;
mod trim;
mod view;
mod view_write;

pub use append::PACK_MAX_EVENTS;
pub use config::{DEFAULT_MAX_REQUEST_BYTES, EtcdConfig};
pub use handle::EtcdStorage;
pub use plog::PAGE_EVENTS;
pub use stats::EtcdStats;
pub use view::{MAX_TXN_OPS, READS_PER_TXN};
pub use view_write::VIEW_WS_PER_TXN;

/// The shortest time between two flusher writes of a partition on etcd
/// ([`Storage::view_write_interval`](crate::Storage::view_write_interval)): a write's workspaces
/// are mostly the same ones again, so over this interval a partition puts each of its busy
/// workspaces once instead of once per write. What it costs: a restart replays up to this much
/// more of the PLog, and an actualization replays the events since the last write.
pub const VIEW_WRITE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);
