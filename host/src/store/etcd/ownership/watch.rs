//! [`OwnershipWatch`]: a watch on the hosts' and owners' keys that calls back on every change,
//! so a membership reacts to a host joining or leaving and to a partition let go at once
//! instead of at its next poll.
//!
//! The watch only makes things sooner: what the membership does is decided by its own
//! snapshot read, so a lost or failing watch costs time (back to polling), never safety. A
//! failing watch is set up again after a jittered backoff (100 ms doubling to 2 s) for as long
//! as the guard lives; its errors go to the debug log, one per backoff.

use std::sync::Arc;
use std::time::Duration;

use crate::rng::Rng;
use etcd_client::WatchOptions;

use crate::store::etcd::EtcdStorage;
use crate::store::etcd::keys::{HOSTS_PREFIX, OWNERS_PREFIX};

/// What a watch calls on each change it sees.
pub type OnChange = Arc<dyn Fn() + Send + Sync>;

/// A running watch on `hosts/` and `owners/`; dropping it stops the watch.
pub struct OwnershipWatch {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for OwnershipWatch {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl EtcdStorage {
    /// Watches the hosts' and the owners' keys and calls `on_change` after every batch of
    /// changes (and once each time the watch is set up again, as changes may have been
    /// missed meanwhile). `None` if the store has no runtime left (it is being dropped).
    pub fn watch_ownership(&self, on_change: OnChange) -> Option<OwnershipWatch> {
        let runtime = self.inner.runtime.as_ref()?;
        let tasks = [HOSTS_PREFIX, OWNERS_PREFIX]
            .into_iter()
            .map(|prefix| runtime.spawn(watch_prefix(self.clone(), prefix, on_change.clone())))
            .collect();
        Some(OwnershipWatch { tasks })
    }
}

/// Watches `prefix` until aborted, set up again after each failure.
async fn watch_prefix(store: EtcdStorage, prefix: &'static str, on_change: OnChange) {
    let mut backoff = Duration::from_millis(100);
    let mut rng = Rng::new(u64::from(std::process::id()) ^ (prefix.len() as u64 * 0x9e37_79b9));
    loop {
        let mut client = store.inner.client.clone();
        let result = async {
            let options = WatchOptions::new().with_prefix();
            let mut stream = client.watch(prefix, Some(options)).await?;
            // Changes may have been missed while no watch ran.
            on_change();
            while let Some(resp) = stream.message().await? {
                backoff = Duration::from_millis(100);
                if !resp.events().is_empty() {
                    on_change();
                }
            }
            Ok::<(), etcd_client::Error>(())
        }
        .await;
        match result {
            Ok(()) => tracing::debug!("{}: the watch on {prefix} ended", store.label()),
            Err(e) => tracing::debug!("{}: the watch on {prefix} failed: {e}", store.label()),
        }
        let half = backoff.as_millis() as u64 / 2;
        let wait = Duration::from_millis(half + rng.below(half + 1));
        tokio::time::sleep(wait).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}
