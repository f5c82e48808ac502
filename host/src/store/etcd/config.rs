//! How the store talks to the cluster: [`EtcdConfig`], and parsing `etcd://` URLs.

use std::time::Duration;

use crate::store::storage::StorageError;

/// etcd's default `--max-request-bytes` (1.5 MiB).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// How the store talks to the cluster.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Client endpoints, `http://host:port`.
    pub endpoints: Vec<String>,
    /// Time limit of one request.
    pub request_timeout: Duration,
    /// How long a failing request is retried before its error is reported.
    pub retry_for: Duration,
    /// Serve reads from the member the client is connected to, without asking the leader
    /// (for looking at one member's copy; not for running a partition).
    pub serializable_reads: bool,
    /// The cluster's `--max-request-bytes`: an append request is kept below it (events and
    /// framing), splitting a batch as needed.
    pub max_request_bytes: usize,
    /// How long a lost majority is waited for. `None`: not at all (a request gives up after
    /// `retry_for`). `Some(d)`: a request that fails while fewer than half the members answer
    /// goes on retrying (saying so, once per few seconds) until the majority is back or has
    /// been lost for `d`; then the store fails
    /// ([`Storage::failure`](crate::store::storage::Storage::failure)) and every request after
    /// it is refused at once.
    pub quorum_wait: Option<Duration>,
}

impl EtcdConfig {
    /// Defaults for `endpoints`: 2 s per request, retried for 10 s, linearizable reads, etcd's
    /// default request limit (1.5 MiB).
    pub fn new(endpoints: Vec<String>) -> Self {
        Self {
            endpoints,
            request_timeout: Duration::from_secs(2),
            retry_for: Duration::from_secs(10),
            serializable_reads: false,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            quorum_wait: None,
        }
    }

    /// Parses `etcd://host:port,host:port,...` into a configuration with defaults.
    pub fn from_url(url: &str) -> Result<Self, StorageError> {
        let rest = url.strip_prefix("etcd://").ok_or_else(|| {
            StorageError(format!("{url:?} is not an etcd URL (etcd://HOST:PORT,...)"))
        })?;
        let endpoints: Vec<String> = rest
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                if s.starts_with("http://") {
                    s.to_string()
                } else {
                    format!("http://{s}")
                }
            })
            .collect();
        if endpoints.is_empty() {
            return Err(StorageError(format!("{url:?} names no etcd endpoint")));
        }
        Ok(Self::new(endpoints))
    }
}
