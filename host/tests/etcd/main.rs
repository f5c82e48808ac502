//! The etcd store against a real 3-member cluster on loopback ports (`scripts/etcd-cluster.sh`
//! installs Debian's etcd if missing, starts the cluster in a temp dir and stops exactly its
//! processes; a guard stops it even when a test panics).
//!
//! Without etcd these tests fail under CI (`CI` set) and are skipped with a message otherwise.
//! The only waits are bounded polls on real processes: cluster health, PLog progress.
//!
//! One test binary (`cargo test --test etcd`), its tests in modules by what they prove:
//!
//! | module | what it proves |
//! |---|---|
//! | `runs` | `sequencer-host run`, `check`, `inspect` and `archive` on the cluster, a host killed |
//! | `members` | members killed and restarted, a majority lost and back |
//! | `appends` | the fence between two hosts, batches split to fit a request, requests too large |
//! | `view` | the sequences view: many workspaces at once, the earlier layout, racing writers |
//! | `own_tail` | replays served from the host's own tail; a second writer seen, no number twice |
//! | `damage` | a bit flipped in a stored value: listed by `check`, refused by a replay |
//! | `ownership` | partitions owned through leases: the epoch fence, the lease deadline |
//! | `hosts` | many `run --host-name` processes: a host killed, paused past its TTL, two at once |
//! | `composite` | the composite store (PLog on objects, view and owners on etcd): runs, etcd writes counted, many hosts |
//! | `host_faults` | a host cut off from etcd behind a paused TCP proxy; the etcd leader killed in a takeover |
//!
//! `common::etcd_cluster` starts and stops the cluster (shared with `contract.rs`); `support`
//! holds what several tests do (start a run, wait for it, commit events through a driver,
//! build batches).

#![cfg(all(feature = "etcd", feature = "cli"))]

#[path = "../common/mod.rs"]
mod common;

mod support;

mod appends;
mod composite;
mod damage;
mod host_faults;
mod hosts;
mod members;
mod own_tail;
mod ownership;
mod runs;
mod view;
