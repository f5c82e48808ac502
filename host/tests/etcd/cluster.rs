//! A 3-member etcd cluster on loopback ports (`scripts/etcd-cluster.sh`), its members killed and
//! restarted by the tests, and stores connected to it.

use std::process::{Command, Stdio};
use std::time::Duration;

use sequencer_host::{EtcdConfig, EtcdStorage};

use crate::common::{self, text};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/etcd-cluster.sh");
const ENSURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/etcd-ensure.sh");

/// A 3-member cluster in a temp dir; stopped on drop.
pub struct Cluster {
    /// Where the members keep their data and logs.
    pub dir: tempfile::TempDir,
    /// The members' client endpoints, `http://host:port`.
    pub endpoints: Vec<String>,
}

impl Cluster {
    /// Starts a cluster, or `None` (skip) when etcd is unavailable outside CI. Puts etcd in
    /// the project's tool cache if it is not on PATH (no system install).
    pub fn start() -> Option<Self> {
        let (dir, out) = common::start_service("etcd", ENSURE, SCRIPT)?;
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

    pub fn url(&self) -> String {
        let hosts: Vec<&str> = self
            .endpoints
            .iter()
            .map(|e| e.trim_start_matches("http://"))
            .collect();
        format!("etcd://{}", hosts.join(","))
    }

    pub fn script(&self, args: &[&str]) {
        let out = Command::new("bash")
            .arg(SCRIPT)
            .arg(args[0])
            .arg(self.dir.path())
            .args(&args[1..])
            .output()
            .expect("run etcd-cluster.sh");
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "etcd-cluster.sh {args:?}:\n{stdout}{stderr}"
        );
    }

    pub fn kill(&self, member: usize) {
        self.script(&["kill", &member.to_string()]);
    }

    pub fn restart(&self, member: usize) {
        self.script(&["restart", &member.to_string()]);
    }

    pub fn wait_healthy(&self) {
        self.script(&["wait"]);
    }

    /// Whether `member` is the leader, by `etcdctl endpoint status`.
    pub fn is_leader(&self, member: usize) -> bool {
        Command::new("bash")
            .arg(SCRIPT)
            .arg("leader")
            .arg(self.dir.path())
            .arg(member.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// A store on the whole cluster, retrying for `retry_for`.
    pub fn store(&self, retry_for: Duration) -> EtcdStorage {
        let mut config = EtcdConfig::new(self.endpoints.clone());
        config.retry_for = retry_for;
        EtcdStorage::connect(config).expect("connect to etcd")
    }

    /// A store that reads only `member`'s own copy.
    pub fn member_store(&self, member: usize) -> EtcdStorage {
        let mut config = EtcdConfig::new(vec![self.endpoints[member].clone()]);
        config.serializable_reads = true;
        EtcdStorage::connect(config).expect("connect to an etcd member")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(SCRIPT)
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}
