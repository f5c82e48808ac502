//! A 3-member etcd cluster on loopback ports, for the tests that need etcd:
//! `scripts/etcd-cluster.sh` installs Debian's etcd into the project's tool cache if missing,
//! starts the cluster in a temp dir and stops exactly its processes (the guard stops it even
//! when a test panics).

use std::process::Command;

use super::{start_service, text};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/etcd-cluster.sh");
const ENSURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/etcd-ensure.sh");

/// A 3-member cluster in a temp dir; stopped on drop.
pub struct EtcdCluster {
    dir: tempfile::TempDir,
    /// The members' client endpoints, `http://127.0.0.1:PORT`.
    pub endpoints: Vec<String>,
}

impl EtcdCluster {
    /// Starts a cluster, or `None` (skip) when etcd is unavailable outside CI.
    pub fn start() -> Option<Self> {
        let (dir, out) = start_service("etcd", ENSURE, SCRIPT)?;
        let (stdout, stderr) = text(&out);
        let cluster = Self {
            endpoints: stdout.trim().split(',').map(str::to_string).collect(),
            dir,
        };
        assert!(
            out.status.success(),
            "the etcd cluster did not start:\n{stdout}{stderr}"
        );
        assert_eq!(cluster.endpoints.len(), 3, "{stdout}");
        Some(cluster)
    }

    /// Runs `etcd-cluster.sh COMMAND DIR ARGS...` on this cluster; it must succeed.
    pub fn script(&self, command: &str, args: &[&str]) {
        let out = Command::new("bash")
            .arg(SCRIPT)
            .arg(command)
            .arg(self.dir.path())
            .args(args)
            .output()
            .expect("run etcd-cluster.sh");
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "etcd-cluster.sh {command} {args:?}:\n{stdout}{stderr}"
        );
    }

    /// Deletes every key: the cluster holds no store any more.
    pub fn wipe(&self) {
        self.script("wipe", &[]);
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(SCRIPT)
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}
