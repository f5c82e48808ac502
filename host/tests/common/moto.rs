//! A moto server (S3) on a free loopback port with a bucket, for the tests that need S3:
//! `scripts/s3-server.sh` installs moto into the project's tool cache (PyPI's moto[server]),
//! starts it and stops it (the guard stops it even when a test panics).

use std::sync::Arc;

use object_store::ObjectStore;
use sequencer_host::store::objects::RemotePlog;
use sequencer_host::store::objects::s3::{self, S3Location};

use super::{start_service, text};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/s3-server.sh");
const ENSURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/s3-ensure.sh");
/// The bucket the server starts with.
pub const BUCKET: &str = "sequencer";

/// A moto server in a temp dir; stopped on drop.
pub struct Moto {
    dir: tempfile::TempDir,
    /// Where it listens (`http://127.0.0.1:PORT`).
    pub endpoint: String,
}

impl Moto {
    /// Starts a server, or `None` (skip) when moto is unavailable outside CI.
    pub fn start() -> Option<Self> {
        let (dir, out) = start_service("moto", ENSURE, SCRIPT)?;
        let (stdout, stderr) = text(&out);
        let server = Self {
            endpoint: stdout.trim().to_string(),
            dir,
        };
        assert!(
            out.status.success() && server.endpoint.starts_with("http://127.0.0.1:"),
            "moto did not start:\n{stdout}{stderr}"
        );
        Some(server)
    }

    /// The client settings for this server.
    pub fn vars(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// The objects under `s3://sequencer/PREFIX`.
    pub fn objects(&self, prefix: &str) -> Arc<dyn ObjectStore> {
        self.remote(prefix).objects
    }

    /// A PLog at `s3://sequencer/PREFIX` on this server, for `ObjectStorage::open_with`.
    pub fn remote(&self, prefix: &str) -> RemotePlog {
        let location = S3Location::parse(&format!("s3://{BUCKET}/{prefix}")).expect("location");
        let s3 = s3::connect_with(&location, self.vars()).expect("connect");
        RemotePlog {
            url: location.url(),
            objects: s3.objects,
            failure: None,
            retries: Some(s3.retries),
        }
    }

    /// Stops the server now (everything it held goes with it: moto keeps objects in memory).
    pub fn stop(&self) {
        let _ = std::process::Command::new("bash")
            .arg(SCRIPT)
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}
