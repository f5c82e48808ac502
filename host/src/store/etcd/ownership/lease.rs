//! The host's lease: granted with its key `hosts/<name>` created under it only if absent, kept
//! alive, and its deadline (the last acknowledged keepalive's send time plus the TTL less a
//! margin, on the clock passed in) handed to the store's fences.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp, TxnResponse};
use sequencer::Instant;

use crate::clock::Clock;
use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::host_key;
use crate::store::etcd::request::one_line;
use crate::store::storage::StorageError;

use super::error::OwnershipError;

/// The shortest lease etcd grants (a TTL is whole seconds).
pub const MIN_LEASE_TTL: Duration = Duration::from_secs(1);

/// How long before its lease can have expired a host stops writing: a sixth of the TTL, at
/// least 200 ms (room for a request in flight and for clock rates that differ a little).
pub fn lease_margin(ttl: Duration) -> Duration {
    (ttl / 6).max(Duration::from_millis(200))
}

/// One host's lease on the cluster, and its key `hosts/<name>` under it. Dropping it does not
/// revoke the lease (it expires after its TTL); [`revoke`](Self::revoke) does.
pub struct HostLease {
    pub(super) store: EtcdStorage,
    pub(super) name: String,
    ttl: Duration,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) id: AtomicI64,
}

impl EtcdStorage {
    /// The time left before this store's lease may have expired (zero once it may have, or
    /// before a host registered one).
    pub fn lease_time_left(&self) -> Duration {
        self.inner.fences.time_left()
    }

    /// Registers this host as `name` with a lease of `ttl` (whole seconds, at least one):
    /// grants the lease and creates `hosts/<name>` under it only if absent. A key of the same
    /// name held by another lease (a process of that name killed within its TTL) is waited
    /// for, up to twice the TTL. From now on every append and view write of this store
    /// carries the epoch of a partition owned through this lease ([`HostLease::acquire`]) and
    /// a partition not owned is refused; nothing is written once the lease may have expired,
    /// judged on `clock`.
    pub fn register_host(
        &self, name: &str, ttl: Duration, clock: Arc<dyn Clock>,
    ) -> Result<HostLease, OwnershipError> {
        if name.is_empty() || name.contains(['/', '\n']) || name.len() > 200 {
            return Err(OwnershipError::BadName {
                store: self.label().to_string(),
                name: name.to_string(),
            });
        }
        let ttl = Duration::from_secs(ttl.as_secs_f64().ceil().max(1.0) as u64);
        let lease = HostLease {
            store: self.clone(),
            name: name.to_string(),
            ttl,
            clock,
            id: AtomicI64::new(0),
        };
        let waited_from = std::time::Instant::now();
        loop {
            let sent = lease.clock.now();
            let id = lease.grant()?;
            if lease.create_host_key(id)? {
                lease.id.store(id, Ordering::Relaxed);
                self.inner
                    .fences
                    .register(lease.clock.clone(), lease.deadline_after(sent));
                return Ok(lease);
            }
            lease.revoke_id(id);
            if waited_from.elapsed() > ttl * 2 {
                return Err(OwnershipError::NameInUse {
                    store: self.label().to_string(),
                    name: name.to_string(),
                    waited: waited_from.elapsed(),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl HostLease {
    /// The host's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The lease's TTL.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The lease's id on the cluster.
    pub fn id(&self) -> i64 {
        self.id.load(Ordering::Relaxed)
    }

    /// The clock the lease's deadline is on.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Whether the lease may have expired: no keepalive acknowledged within the TTL less the
    /// margin, on the lease's clock (nothing is written past that).
    pub fn may_have_expired(&self) -> bool {
        self.store.inner.fences.past_deadline()
    }

    /// The time left before the lease may have expired (zero once it may have).
    pub fn time_left(&self) -> Duration {
        self.store.inner.fences.time_left()
    }

    /// The store the lease is on.
    pub fn store(&self) -> &EtcdStorage {
        &self.store
    }

    /// Past this instant (a keepalive sent at `sent` acknowledged) the lease may have expired.
    fn deadline_after(&self, sent: Instant) -> Instant {
        sent.saturating_add(self.ttl.saturating_sub(lease_margin(self.ttl)))
    }

    fn err(&self, what: &str, e: impl std::fmt::Display) -> OwnershipError {
        OwnershipError::Lease {
            store: self.store.label().to_string(),
            name: self.name.clone(),
            what: what.to_string(),
            error: one_line(&e.to_string()),
        }
    }

    /// A new lease of the TTL (one request, bounded by the TTL).
    fn grant(&self) -> Result<i64, OwnershipError> {
        let mut lease = self.store.inner.client.lease_client();
        let (ttl, within) = (self.ttl.as_secs() as i64, self.ttl);
        self.store
            .block(async move {
                match tokio::time::timeout(within, lease.grant(ttl, None)).await {
                    Ok(Ok(r)) => Ok(r.id()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!("no answer within {within:?}")),
                }
                .map_err(StorageError)
            })
            .map_err(|e| self.err("grant a lease", e))
    }

    /// Creates `hosts/<name>` under lease `id` if absent; false if another lease holds it.
    fn create_host_key(&self, id: i64) -> Result<bool, OwnershipError> {
        let resp = self.create_if_absent(
            host_key(&self.name),
            id,
            "register the host".into(),
            self.ttl,
        )?;
        Ok(resp.succeeded())
    }

    /// Puts `key` (the host's name as its value) under lease `id` only if it does not exist:
    /// one transaction, retried for at most `within`.
    pub(super) fn create_if_absent(
        &self, key: String, id: i64, what: String, within: Duration,
    ) -> Result<TxnResponse, StorageError> {
        let txn = Txn::new()
            .when(vec![Compare::create_revision(
                key.clone(),
                CompareOp::Equal,
                0,
            )])
            .and_then(vec![TxnOp::put(
                key,
                self.name.clone(),
                Some(PutOptions::new().with_lease(id)),
            )]);
        self.txn(what, within, txn)
    }

    /// Runs `txn` on the store's runtime, retried for at most `within`.
    pub(super) fn txn(
        &self, what: String, within: Duration, txn: Txn,
    ) -> Result<TxnResponse, StorageError> {
        self.store.txn_within(what, within, txn)
    }

    /// Renews the lease once (a keepalive, bounded by a third of the TTL) and returns the
    /// new deadline: the keepalive's send time plus the TTL less the margin. A lease the
    /// cluster no longer knows is [`OwnershipError::LeaseExpired`] and expires the fences.
    pub fn keep_alive(&self) -> Result<Instant, OwnershipError> {
        self.keep_alive_within(self.ttl / 3)
    }

    /// [`keep_alive`](Self::keep_alive), waiting at most `within` for the answer.
    pub fn keep_alive_within(&self, within: Duration) -> Result<Instant, OwnershipError> {
        let sent = self.clock.now();
        let mut lease = self.store.inner.client.lease_client();
        let id = self.id();
        let answer = self.store.block(async move {
            Ok::<_, StorageError>(
                match tokio::time::timeout(within, lease.keep_alive(id)).await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err(Some(e.to_string())),
                    Err(_) => Err(None),
                },
            )
        })?;
        match answer {
            Ok(()) => {
                let until = self.deadline_after(sent);
                self.store.inner.fences.renewed(until);
                Ok(until)
            }
            Err(Some(e)) if e.contains("lease not found") => {
                self.store.inner.fences.expire("the host's lease expired");
                Err(OwnershipError::LeaseExpired {
                    store: self.store.label().to_string(),
                    name: self.name.clone(),
                })
            }
            Err(Some(e)) => Err(self.err("keep the lease alive", e)),
            Err(None) => Err(self.err(
                "keep the lease alive",
                format!("no answer within {within:?}"),
            )),
        }
    }

    /// Revokes the lease: its keys (the host's, the partitions it owns) are deleted at once,
    /// and this store writes nothing more under it.
    pub fn revoke(&self) {
        self.store
            .inner
            .fences
            .expire("the host's lease was revoked");
        self.revoke_id(self.id());
    }

    fn revoke_id(&self, id: i64) {
        let mut lease = self.store.inner.client.lease_client();
        let within = self.ttl;
        let _ = self.store.block(async move {
            let _ = tokio::time::timeout(within, lease.revoke(id)).await;
            Ok::<_, StorageError>(())
        });
    }
}
