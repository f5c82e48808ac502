//! Opening the store: its tokio runtime, the client (connected lazily: members may come up
//! later), the quorum's clients of each member; and a probe that the cluster answers.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions};

use crate::store::etcd::config::EtcdConfig;
use crate::store::etcd::handle::{EtcdStorage, Inner};
use crate::store::etcd::pack_shape::PackShape;
use crate::store::etcd::quorum::Quorum;
use crate::store::etcd::request::one_line;
use crate::store::etcd::stats::EtcdStats;
use crate::store::io_runtime::io_runtime;
use crate::store::storage::{DamageLatch, StorageError};

impl EtcdStorage {
    /// Connects to the cluster (lazily: members may come up later; requests retry).
    pub fn connect(config: EtcdConfig) -> Result<Self, StorageError> {
        let label = format!("etcd {}", config.endpoints.join(","));
        let runtime = io_runtime("etcd-client")
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
                pack_shape: PackShape::new(),
                quorum,
                damage: DamageLatch::default(),
                fences: Default::default(),
                plog_ends: Default::default(),
                combiner: Default::default(),
            }),
        })
    }

    /// Connects to the cluster named by `etcd://host:port,...`.
    pub fn connect_url(url: &str) -> Result<Self, StorageError> {
        Self::connect(EtcdConfig::from_url(url)?)
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
