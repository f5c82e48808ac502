//! A Prometheus server on a free loopback port, for the test that points it at a running host:
//! `scripts/prometheus-server.sh` installs Debian's Prometheus into the project's tool cache
//! (`scripts/prometheus-ensure.sh`), starts it scraping every second the targets of a file in its
//! folder, and stops it (the guard stops it even when a test panics). Queries go to its HTTP API.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{start_service, text};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../scripts/prometheus-server.sh"
);
const ENSURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../scripts/prometheus-ensure.sh"
);

/// A Prometheus server in a temp dir; stopped on drop.
pub struct Prometheus {
    dir: tempfile::TempDir,
    /// Where it listens (`127.0.0.1:PORT`).
    pub addr: String,
}

impl Prometheus {
    /// Starts a server, or `None` (skip) when Prometheus is unavailable outside CI.
    pub fn start() -> Option<Self> {
        let (dir, out) = start_service("Prometheus", ENSURE, SCRIPT)?;
        let (stdout, stderr) = text(&out);
        let addr = stdout.trim().trim_start_matches("http://").to_string();
        assert!(
            out.status.success() && addr.starts_with("127.0.0.1:"),
            "Prometheus did not start:\n{stdout}{stderr}"
        );
        Some(Self { dir, addr })
    }

    /// Scrapes `targets` (`127.0.0.1:PORT` each) from now on, every second, in the job
    /// `sequencer`.
    pub fn scrape(&self, targets: &[&str]) {
        let path = self.dir.path().join("targets.json");
        let tmp = self.dir.path().join("targets.json.new");
        let list: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
        let json = format!("[{{\"targets\": [{}]}}]", list.join(", "));
        std::fs::write(&tmp, json).expect("targets");
        std::fs::rename(&tmp, &path).expect("targets in place");
    }

    /// The server's log (for a failure's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// `promtool`, from the same package.
    pub fn promtool() -> PathBuf {
        let out = Command::new("bash").arg(ENSURE).output().expect("ensure");
        let prometheus = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Path::new(&prometheus).with_file_name("promtool")
    }

    /// An instant query through the HTTP API: each result's labels and value.
    pub fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        let body = self.get(&format!("/api/v1/query?query={}", encode(promql)));
        let answer: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{promql}: not JSON ({e}): {body}"));
        assert_eq!(answer["status"], "success", "{promql}: {body}");
        (answer["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default())
        .into_iter()
        .map(|r| {
            let v = r["value"][1]
                .as_str()
                .unwrap_or("NaN")
                .parse()
                .unwrap_or(f64::NAN);
            (r["metric"].clone(), v)
        })
        .collect()
    }

    /// `GET path` (HTTP/1.0: the answer is not chunked); the body.
    fn get(&self, path: &str) -> String {
        let mut s = TcpStream::connect(&self.addr).expect("connect to Prometheus");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        write!(s, "GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr).expect("request");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("answer");
        out.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or(out)
    }
}

/// `s` percent-encoded for a query string.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(SCRIPT)
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}
