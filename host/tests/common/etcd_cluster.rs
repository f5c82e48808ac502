//! A 3-member etcd cluster on loopback ports, for the tests that need etcd:
//! `scripts/etcd-cluster.sh` installs Debian's etcd into the project's tool cache if missing,
//! starts the cluster in a temp dir and stops exactly its processes (the guard stops it even
//! when a test panics). Its members can be killed and restarted, and stores connected to it.

use std::process::{Command, Stdio};
use std::time::Duration;

use sequencer_host::store::etcd::{EtcdConfig, EtcdStorage};

use super::{start_service, text};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/etcd-cluster.sh");
const ENSURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/etcd-ensure.sh");

/// A 3-member cluster in a temp dir; stopped on drop.
pub struct EtcdCluster {
    /// Where the members keep their data and logs (tests put their own logs beside them).
    pub dir: tempfile::TempDir,
    /// The members' client endpoints, `http://127.0.0.1:PORT`.
    pub endpoints: Vec<String>,
}

impl EtcdCluster {
    /// Starts a cluster, or `None` (skip) when etcd is unavailable outside CI. Puts etcd in
    /// the project's tool cache if it is not on PATH (no system install).
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

    /// The cluster as a store URL, `etcd://host:port,...`.
    pub fn url(&self) -> String {
        let hosts: Vec<&str> = self
            .endpoints
            .iter()
            .map(|e| e.trim_start_matches("http://"))
            .collect();
        format!("etcd://{}", hosts.join(","))
    }

    /// Kills `member` (0, 1 or 2).
    pub fn kill(&self, member: usize) {
        self.script("kill", &[&member.to_string()]);
    }

    /// Starts `member` again on its data.
    pub fn restart(&self, member: usize) {
        self.script("restart", &[&member.to_string()]);
    }

    /// Waits until every member is healthy.
    pub fn wait_healthy(&self) {
        self.script("wait", &[]);
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

    /// A plain etcd client on the cluster, with the runtime it runs on: for a test that writes
    /// or reads keys behind the store's back.
    pub fn client(&self) -> (tokio::runtime::Runtime, etcd_client::Client) {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let client = rt
            .block_on(etcd_client::Client::connect(self.endpoints.clone(), None))
            .expect("connect");
        (rt, client)
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

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(SCRIPT)
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}
