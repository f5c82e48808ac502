//! Partitions owned through the host's lease: `owners/<partition>` created under the lease
//! only if absent (its create revision is the epoch), deleted only by the epoch that created
//! it; and the cluster's view of who is alive and who owns what.

use std::collections::BTreeMap;

use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp, TxnOpResponse, TxnResponse};

use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{HOSTS_PREFIX, OWNERS_PREFIX, owner_key, prefix_end};
use crate::store::storage::{PartitionId, StorageError};

use super::error::OwnershipError;
use super::lease::HostLease;

/// A partition's owner as the cluster records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// The owning host's name.
    pub host: String,
    /// The owner's epoch: the create revision of `owners/<partition>`.
    pub epoch: u64,
    /// The lease the owner key is under.
    pub lease: i64,
}

/// Who is alive and who owns what, read in one linearizable transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Owners {
    /// Live hosts (their keys under their leases): name and lease, by name.
    pub hosts: BTreeMap<String, i64>,
    /// Owned partitions and their owners.
    pub owners: BTreeMap<PartitionId, Owner>,
    /// The cluster's revision when read.
    pub revision: u64,
}

impl EtcdStorage {
    /// Runs `txn`, retried for at most `within` and never longer (not even while the store
    /// waits for a lost majority): ownership acts on time or not at all.
    pub(super) fn txn_within(
        &self, what: String, within: std::time::Duration, txn: Txn,
    ) -> Result<TxnResponse, StorageError> {
        let this = self.clone();
        let label = self.label().to_string();
        self.block(async move {
            let retried = this.retrying_for(what.clone(), within, |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            });
            match tokio::time::timeout(within + within / 2, retried).await {
                Ok(r) => r,
                Err(_) => Err(StorageError(format!(
                    "{label}: {what}: no answer within {:.1} s",
                    within.as_secs_f64()
                ))),
            }
        })
    }

    /// The live hosts and the partitions' owners, as one snapshot (retried for at most
    /// `within`).
    pub fn owners(&self, within: std::time::Duration) -> Result<Owners, StorageError> {
        let range = |prefix: &str| {
            TxnOp::get(
                prefix,
                Some(GetOptions::new().with_range(prefix_end(prefix))),
            )
        };
        let txn = Txn::new().and_then(vec![range(HOSTS_PREFIX), range(OWNERS_PREFIX)]);
        let resp = self.txn_within("read the owners".into(), within, txn)?;
        let mut out = Owners {
            revision: resp
                .header()
                .map_or(0, |h| u64::try_from(h.revision()).unwrap_or(0)),
            ..Owners::default()
        };
        for r in resp.op_responses() {
            let TxnOpResponse::Get(g) = r else { continue };
            for kv in g.kvs() {
                let key = String::from_utf8_lossy(kv.key());
                let value = String::from_utf8_lossy(kv.value()).into_owned();
                if let Some(name) = key.strip_prefix(HOSTS_PREFIX) {
                    out.hosts.insert(name.to_string(), kv.lease());
                } else if let Some(p) = key.strip_prefix(OWNERS_PREFIX)
                    && let Ok(p) = p.parse::<PartitionId>()
                {
                    out.owners.insert(
                        p,
                        Owner {
                            host: value,
                            epoch: u64::try_from(kv.create_revision()).unwrap_or(0),
                            lease: kv.lease(),
                        },
                    );
                }
            }
        }
        Ok(out)
    }

    /// The seconds a lease has left (`None`: it does not exist any more).
    pub fn lease_time_to_live(&self, lease: i64) -> Result<Option<i64>, StorageError> {
        let mut client = self.inner.client.lease_client();
        let label = self.label().to_string();
        self.block(async move {
            match client.time_to_live(lease, None).await {
                Ok(r) if r.ttl() > 0 => Ok(Some(r.ttl())),
                Ok(_) => Ok(None),
                Err(e) => Err(StorageError(format!(
                    "{label}: read lease {lease}: {}",
                    crate::store::etcd::request::one_line(&e.to_string())
                ))),
            }
        })
    }
}

impl HostLease {
    /// Takes `partition` if no host owns it: creates `owners/<partition>` under the lease
    /// only if absent. Returns the epoch (the key's create revision), from which on every
    /// append and view write of the partition compares it; `None` if another host owns it.
    pub fn acquire(&self, partition: PartitionId) -> Result<Option<u64>, OwnershipError> {
        let resp = self.create_if_absent(
            owner_key(partition),
            self.id(),
            format!("take partition {partition}"),
            self.ttl() / 2,
        )?;
        // A retried create whose first answer was lost finds its own key: its lease is ours
        // (a key under our lease is ours; the epoch is then read back).
        if !resp.succeeded() {
            return self.own_after_lost_answer(partition);
        }
        let epoch = resp
            .header()
            .map_or(0, |h| u64::try_from(h.revision()).unwrap_or(0));
        self.store.inner.fences.own(partition, epoch);
        Ok(Some(epoch))
    }

    /// After a create refused: the key is ours if it is under our lease (an earlier attempt
    /// whose answer was lost), then at its create revision.
    fn own_after_lost_answer(&self, partition: PartitionId) -> Result<Option<u64>, OwnershipError> {
        let owners = self.store.owners(self.ttl() / 2)?;
        match owners.owners.get(&partition) {
            Some(o) if o.lease == self.id() => {
                self.store.inner.fences.own(partition, o.epoch);
                Ok(Some(o.epoch))
            }
            _ => Ok(None),
        }
    }

    /// Hands `partition` back: nothing is written under `epoch` any more, and its key is
    /// deleted if it still has that epoch (never a successor's).
    pub fn release(&self, partition: PartitionId, epoch: u64) -> Result<(), OwnershipError> {
        self.store.inner.fences.lose(partition, "handed over");
        let key = owner_key(partition);
        let txn = Txn::new()
            .when(vec![Compare::create_revision(
                key.clone(),
                CompareOp::Equal,
                i64::try_from(epoch).unwrap_or(i64::MAX),
            )])
            .and_then(vec![TxnOp::delete(key, None)]);
        self.txn(format!("hand partition {partition} over"), self.ttl(), txn)?;
        Ok(())
    }

    /// Marks `partition` lost (`why`): nothing more is written under its epoch.
    pub fn forget(&self, partition: PartitionId, why: &str) {
        self.store.inner.fences.lose(partition, why);
    }

    /// Why `partition` is not this host's any more (an append or view write refused by its
    /// epoch, the lease expired, handed over), if it was owned and is not.
    pub fn lost(&self, partition: PartitionId) -> Option<String> {
        self.store.inner.fences.lost(partition)
    }
}
