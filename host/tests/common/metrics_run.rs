//! `sequencer-host run --metrics PORT` as the metrics tests start it: a loopback port, the
//! run's log in a file, the process killed if a test fails before the run ends.

use std::ffi::OsStr;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use super::{component_path, host};

/// A loopback port free now (the host binds it a moment later).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("its address").port()
}

/// The arguments of a workload of `partitions` x `events` commands over 50 workspaces, at
/// `rate` commands a second, on a redb store in `data`.
pub fn redb_workload(data: &Path, partitions: usize, events: u64, rate: u64) -> Vec<String> {
    let data = data.to_str().expect("a UTF-8 path").to_string();
    let (p, e, r) = (partitions.to_string(), events.to_string(), rate.to_string());
    ["--data", &data, "--partitions", &p, "--workspaces", "50"]
        .into_iter()
        .chain(["--events", &e, "--rate", &r])
        .map(str::to_string)
        .collect()
}

/// A running `sequencer-host run --metrics`, killed on drop if it has not ended.
pub struct MetricsRun {
    /// The process.
    pub child: Child,
    /// The port its metrics are served on (loopback).
    pub port: u16,
    /// Its standard error.
    pub log: PathBuf,
}

impl MetricsRun {
    /// Starts `run` with `args` (store, workload), the tests' component, `--metrics` on a free
    /// loopback port and its log in `dir/LOG_NAME`.
    pub fn start<S: AsRef<OsStr>>(dir: &Path, log_name: &str, args: &[S]) -> Self {
        let port = free_port();
        let log = dir.join(log_name);
        let child = host()
            .arg("run")
            .args(args)
            .arg("--component")
            .arg(component_path())
            // A port alone: loopback.
            .args(["--metrics", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start sequencer-host run --metrics");
        Self { child, port, log }
    }

    /// `127.0.0.1:PORT`.
    pub fn target(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for MetricsRun {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
