//! [`EtcdStorage`]: the handle every operation of the store works through (the client and its
//! runtime, the configuration, what requests share between them), and its getters.

use std::sync::Arc;

use etcd_client::Client;

use crate::store::etcd::combine_queue::Combiner;
use crate::store::etcd::config::EtcdConfig;
use crate::store::etcd::ownership::fences::Fences;
use crate::store::etcd::pack_shape::PackShape;
use crate::store::etcd::plog_end_hints::PlogEnds;
use crate::store::etcd::quorum::Quorum;
use crate::store::etcd::stats::EtcdStats;
use crate::store::storage::DamageLatch;

/// Storage of many partitions on an etcd cluster. Clones share the client and its runtime.
#[derive(Clone)]
pub struct EtcdStorage {
    pub(super) inner: Arc<Inner>,
}

/// What the clones of one store share.
pub(super) struct Inner {
    /// The tokio runtime every request runs on (taken, and shut down, on drop).
    pub(super) runtime: Option<tokio::runtime::Runtime>,
    pub(super) client: Client,
    pub(super) config: EtcdConfig,
    /// "etcd http://…": names the cluster in messages.
    pub(super) label: String,
    pub(super) stats: EtcdStats,
    pub(super) pack_shape: PackShape,
    pub(super) quorum: Quorum,
    /// The first PLog event a replay refused for its checksum.
    pub(super) damage: DamageLatch,
    /// The partitions this host owns and the lease's deadline (open while no lease is
    /// registered).
    pub(super) fences: Fences,
    /// The last PLog key seen of each partition: where a read of the PLog's end starts.
    pub(super) plog_ends: PlogEnds,
    /// The appends waiting to go with others in one transaction.
    pub(super) combiner: Combiner,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl EtcdStorage {
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
}
