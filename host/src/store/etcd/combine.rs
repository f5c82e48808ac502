//! Appends of several partitions in one transaction.
//!
//! The cluster's CPU, not its disk, bounds a busy host's appends: each transaction costs every
//! member a Raft entry, an MVCC revision and a bbolt update whatever it holds. So the appends
//! the partitions send while others are in flight wait here and go together: one transaction
//! whose compares are all of theirs (each partition's fence, unchanged) and whose puts are all
//! of their packs. It applies whole or not at all.
//!
//! - **Written**: every part was appended.
//! - **Not written** (a compare failed: one partition's offset or epoch is not what it
//!   thought): nothing was written, and each part is appended again on its own, whose else
//!   branch says why the one that failed did.
//! - **Unknown** (no answer): each part is appended again on its own as after an ambiguous
//!   attempt, so a pack found stored byte-for-byte is recognised as the writer's own.
//!
//! At most [`IN_FLIGHT`] combined transactions are in flight; a request holds at most
//! [`MAX_PARTS`] parts and the cluster's request size.
//!
//! A mechanism for speed (docs/ARCHITECTURE.md, "What exists only for speed"): with
//! `combine_queue.rs`, 179 lines, for the etcd main job 19,407 → 24,763 durable events/s (six
//! alternating rounds).

use std::sync::atomic::Ordering;

use etcd_client::{Compare, Txn, TxnOp};
use futures::channel::oneshot;

use crate::store::etcd::append::REQUEST_HEADROOM_BYTES;
use crate::store::etcd::combine_queue::{Combined, Part};
use crate::store::etcd::handle::EtcdStorage;

/// Combined transactions in flight at once: while they are, arriving parts wait for the next.
/// One: with two, fewer parts met per transaction and the main job was slower (measured:
/// `git show 93ef44e:docs/BENCHMARKS.md`).
const IN_FLIGHT: usize = 1;

/// The most parts in one transaction (each takes two or three of the 128 compares etcd allows).
pub(super) const MAX_PARTS: usize = 32;

impl EtcdStorage {
    /// Sends the part `put` (`bytes` long) under the compares `when` in a transaction with the
    /// parts of other partitions waiting now, and says what became of it.
    pub(super) async fn append_combined(
        &self, when: Vec<Compare>, put: TxnOp, bytes: usize,
    ) -> Combined {
        let (done, answer) = oneshot::channel();
        let send = {
            let mut state = self.inner.combiner.state();
            state.waiting.push(Part {
                when,
                put,
                bytes,
                done,
            });
            let send = state.in_flight < IN_FLIGHT;
            if send {
                state.in_flight += 1;
            }
            send
        };
        if send {
            tokio::spawn(self.clone().send_waiting());
        }
        answer.await.unwrap_or(Combined::Unknown)
    }

    /// Sends the waiting parts, a transaction at a time, until none wait.
    async fn send_waiting(self) {
        let limit = self
            .inner
            .config
            .max_request_bytes
            .saturating_sub(REQUEST_HEADROOM_BYTES);
        loop {
            let parts = {
                let mut state = self.inner.combiner.state();
                if state.waiting.is_empty() {
                    state.in_flight -= 1;
                    return;
                }
                // The oldest parts first, as many as one request takes (always at least one).
                let mut bytes = 0;
                let mut n = 0;
                for part in &state.waiting {
                    if n > 0 && (n == MAX_PARTS || bytes + part.bytes > limit) {
                        break;
                    }
                    bytes += part.bytes;
                    n += 1;
                }
                state.waiting.drain(..n).collect::<Vec<_>>()
            };
            let outcome = self.send_parts(&parts).await;
            for part in parts {
                let _ = part.done.send(outcome);
            }
        }
    }

    /// One transaction of `parts`, one attempt (a part unanswered is sent again on its own).
    async fn send_parts(&self, parts: &[Part]) -> Combined {
        let quorum = &self.inner.quorum;
        if quorum.failure().is_some() {
            // The store failed for good: each part on its own is refused with that failure.
            return Combined::NotWritten;
        }
        let stats = &self.inner.stats;
        let when: Vec<Compare> = parts.iter().flat_map(|p| p.when.iter().cloned()).collect();
        let puts: Vec<TxnOp> = parts.iter().map(|p| p.put.clone()).collect();
        let txn = Txn::new().when(when).and_then(puts);
        stats.txns.fetch_add(1, Ordering::Relaxed);
        stats.append_txns.fetch_add(1, Ordering::Relaxed);
        let several = parts.len() > 1;
        if several {
            stats.combined_txns.fetch_add(1, Ordering::Relaxed);
        }
        let mut kv = self.kv();
        let sent = tokio::time::timeout(self.inner.config.request_timeout, kv.txn(txn));
        match sent.await {
            Ok(Ok(resp)) if resp.succeeded() => {
                quorum.succeeded();
                Combined::Written
            }
            Ok(Ok(_)) => {
                if several {
                    stats.combined_refused.fetch_add(1, Ordering::Relaxed);
                }
                Combined::NotWritten
            }
            Ok(Err(_)) | Err(_) => Combined::Unknown,
        }
    }
}
