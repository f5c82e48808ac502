//! Partitions owned through etcd leases, for many hosts on one cluster.
//!
//! - Each host holds one lease ([`HostLease`], TTL a few seconds, kept alive every third of
//!   it) and its key `hosts/<name>` under it: the live hosts are those keys.
//! - A partition is owned through `owners/<partition>`, created under the owner's lease only
//!   if absent. The owner's **epoch** is that key's create revision.
//! - Once a lease is registered on a store, every append and view write of a partition
//!   compares the epoch in the same transaction, beside the offset fence (which stays the
//!   last line): a host whose key was deleted (its lease expired, or it handed the partition
//!   over) and recreated by another writes nothing more
//!   ([`AppendError::NotOwner`](crate::store::storage::AppendError::NotOwner)).
//! - The owner stops writing before its lease can have expired: past its last acknowledged
//!   keepalive's send time plus the TTL less a margin ([`lease_margin`]), on the monotonic
//!   clock it was given, without waiting for the cluster to say so.
//! - An append whose outcome is unknown (its answer lost after the retries) is settled by a
//!   read of the PLog's tail before the next append of the partition.
//! - [`placement_keeping`]: the rendezvous hash that places partitions on live hosts, each
//!   host taking at most its even share, owners keeping what they own within it.
//!
//! | file | what it does |
//! |---|---|
//! | `error.rs` | [`OwnershipError`] |
//! | `fences.rs` | what each write checks: the epoch, the lease's deadline, an unsettled append |
//! | `lease.rs` | [`HostLease`]: granting, registering the host, keepalives, the deadline |
//! | `claims.rs` | taking and handing back partitions; [`Owners`], the cluster's view |
//! | `placement.rs` | [`placement_keeping`]: rendezvous hashing of (partition, host), even shares, sticky |
//! | `watch.rs` | [`OwnershipWatch`]: a callback on every change of the hosts' and owners' keys |

mod claims;
mod error;
pub(crate) mod fences;
mod lease;
mod placement;
mod watch;

pub use claims::{Owner, Owners};
pub use error::OwnershipError;
pub use lease::{HostLease, MIN_LEASE_TTL, lease_margin};
pub use placement::{placement, placement_keeping, placement_weight, preferred_host};
pub use watch::{OnChange, OwnershipWatch};
