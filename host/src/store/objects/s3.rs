//! The object PLog's objects on S3 (feature `s3`): `s3://BUCKET/PREFIX` resolved with the
//! standard `AWS_*` environment variables, every request run on a small tokio runtime of its
//! own (the `object_store` crate's HTTP client needs one; the PLog's callers are plain threads)
//! and retried through [`RetryPolicy::S3_REQUEST`] when it failed on the transport.
//!
//! - **Configuration.** As `AmazonS3Builder::from_env` reads them: `AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY` (required: instance credentials are never looked up, so no request
//!   goes to a metadata service), `AWS_SESSION_TOKEN`, `AWS_REGION` (default `us-east-1`),
//!   `AWS_ENDPOINT_URL` for an S3-compatible server. Plain `http://` is allowed for a loopback
//!   endpoint (a test server), elsewhere only with `AWS_ALLOW_HTTP=true`.
//! - **Retries.** The client's own retry loop is off; a request that failed on the transport
//!   (a refused or lost connection, a timeout, a 5xx) is retried here with capped, jittered
//!   backoff and a deadline. A put with `PutMode::Create` retried after a lost response finds
//!   its own object: the PLog compares the stored bytes before it calls that a lost race.
//!   Errors that cannot clear (not found, precondition, permission) are returned at once.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{
    ClientOptions, CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, RetryConfig,
};

use crate::store::io_runtime::io_runtime;
use crate::store::retry::{RetryPolicy, WarnLimiter};
use crate::store::storage::StorageError;

/// Names a delete request takes at most (S3's DeleteObjects limit).
const DELETE_CHUNK: usize = 1000;

/// The URL scheme of an S3 location.
pub const S3_SCHEME: &str = "s3://";

/// An S3 location: a bucket and a key prefix (possibly empty) under which the PLog's objects
/// are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Location {
    /// The bucket.
    pub bucket: String,
    /// The key prefix, without leading or trailing `/` (empty: the bucket's root).
    pub prefix: String,
}

impl S3Location {
    /// Parses `s3://BUCKET` or `s3://BUCKET/PREFIX`; a clear error for anything else.
    pub fn parse(url: &str) -> Result<Self, StorageError> {
        let rest = url.strip_prefix(S3_SCHEME).ok_or_else(|| {
            StorageError(format!(
                "{url:?} is not an S3 location: expected s3://BUCKET/PREFIX"
            ))
        })?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let valid_bucket = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !valid_bucket {
            return Err(StorageError(format!(
                "{url:?}: {bucket:?} is not an S3 bucket name (3 to 63 lowercase letters, digits, '-' or '.')"
            )));
        }
        let prefix = prefix.trim_matches('/');
        if prefix.split('/').any(|p| p == "." || p == "..")
            || prefix.contains("//")
            || prefix.contains('\\')
        {
            return Err(StorageError(format!(
                "{url:?}: the prefix {prefix:?} has an empty, '.' or '..' part"
            )));
        }
        Ok(Self {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }

    /// The location as `s3://BUCKET/PREFIX`.
    pub fn url(&self) -> String {
        if self.prefix.is_empty() {
            format!("{S3_SCHEME}{}", self.bucket)
        } else {
            format!("{S3_SCHEME}{}/{}", self.bucket, self.prefix)
        }
    }
}

impl fmt::Display for S3Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url())
    }
}

/// Whether `endpoint` is a loopback address (`127.x.x.x`, `localhost`, `[::1]`).
fn loopback(endpoint: &str) -> bool {
    let rest = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
        .unwrap_or(endpoint);
    let host = rest.split('/').next().unwrap_or_default();
    let host = if host.starts_with('[') {
        host.split(']').next().map(|h| &h[1..]).unwrap_or_default()
    } else {
        host.split(':').next().unwrap_or_default()
    };
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback())
}

/// The objects under `location`, through a client configured from the `AWS_*` environment
/// variables (see the module documentation). Nothing is sent yet.
pub fn connect(location: &S3Location) -> Result<S3Objects, StorageError> {
    connect_with(location, std::env::vars())
}

/// A connected S3 location: its objects, how long they have not answered, and how often a
/// request was sent again.
pub struct S3Objects {
    /// The objects under the location (every request on the store's runtime, retried).
    pub objects: Arc<dyn ObjectStore>,
    /// Since when requests have failed with none answered in between.
    pub outage: Arc<Outage>,
    /// Requests sent again after a transport failure (each retry counts once).
    pub retries: Arc<AtomicU64>,
}

/// Since when a store's requests have failed on the transport (their retries spent) with no
/// request answered in between: what turns an S3 that stays away into the store's failure.
#[derive(Debug, Default)]
pub struct Outage(std::sync::Mutex<Option<(std::time::Instant, String)>>);

impl Outage {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(std::time::Instant, String)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn failed(&self, error: String) {
        let mut g = self.lock();
        match &mut *g {
            Some((_, last)) => *last = error,
            None => *g = Some((std::time::Instant::now(), error)),
        }
    }

    fn answered(&self) {
        *self.lock() = None;
    }

    /// The failure, once requests have failed for at least `wait` with none answered.
    pub fn longer_than(&self, wait: Duration) -> Option<String> {
        self.lock()
            .as_ref()
            .filter(|(since, _)| since.elapsed() >= wait)
            .map(|(since, e)| {
                format!(
                    "S3 has not answered for {:.0} s (the last error: {e})",
                    since.elapsed().as_secs_f64()
                )
            })
    }
}

/// [`connect`] with the `AWS_*` settings taken from `vars` instead of the environment (other
/// names are ignored): how a test points one process at several servers.
pub fn connect_with(
    location: &S3Location, vars: impl IntoIterator<Item = (String, String)>,
) -> Result<S3Objects, StorageError> {
    let url = location.url();
    let vars: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(k, v)| k.starts_with("AWS_") && !v.is_empty())
        .collect();
    let env = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if env("AWS_ACCESS_KEY_ID").is_none() || env("AWS_SECRET_ACCESS_KEY").is_none() {
        return Err(StorageError(format!(
            "store {url}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_ENDPOINT_URL for an S3-compatible server); instance credentials are not looked up"
        )));
    }
    let endpoint = env("AWS_ENDPOINT_URL").or_else(|| env("AWS_ENDPOINT"));
    // The HTTP client's TLS needs a process-wide cryptography provider: ring's, unless the
    // embedding process installed one first (which then stays).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut options = ClientOptions::new()
        .with_timeout(Duration::from_secs(10))
        .with_connect_timeout(Duration::from_secs(2));
    if let Some(e) = &endpoint
        && e.starts_with("http://")
        && loopback(e)
    {
        options = options.with_allow_http(true);
    }
    if env("AWS_ALLOW_HTTP").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        options = options.with_allow_http(true);
    }
    let mut builder = AmazonS3Builder::new();
    for (k, v) in &vars {
        if let Ok(key) = k.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            builder = builder.with_config(key, v);
        }
    }
    builder = builder
        .with_bucket_name(&location.bucket)
        .with_client_options(options)
        // One retry loop, ours (RetryPolicy::S3_REQUEST), not the client's as well.
        .with_retry(RetryConfig {
            max_retries: 0,
            ..RetryConfig::default()
        });
    if env("AWS_REGION").is_none() && env("AWS_DEFAULT_REGION").is_none() {
        builder = builder.with_region("us-east-1");
    }
    let s3 = builder
        .build()
        .map_err(|e| StorageError(format!("store {url}: {e}")))?;
    let inner: Arc<dyn ObjectStore> = if location.prefix.is_empty() {
        Arc::new(s3)
    } else {
        Arc::new(PrefixStore::new(s3, location.prefix.as_str()))
    };
    on_runtime(inner, url)
}

/// `inner` with every request run on a runtime of its own (see [`OnRuntime`]).
fn on_runtime(inner: Arc<dyn ObjectStore>, url: String) -> Result<S3Objects, StorageError> {
    // Each request is a task of its own on the runtime.
    let runtime = io_runtime("s3-io")
        .map_err(|e| StorageError(format!("store {url}: cannot start its I/O threads: {e}")))?;
    let outage = Arc::new(Outage::default());
    let retries = Arc::new(AtomicU64::new(0));
    let objects = Arc::new(OnRuntime {
        inner,
        runtime: Arc::new(runtime),
        url,
        warnings: Arc::new(WarnLimiter::new(Duration::from_secs(5))),
        calls: AtomicU64::new(0),
        outage: outage.clone(),
        retries: retries.clone(),
    });
    Ok(S3Objects {
        objects,
        outage,
        retries,
    })
}

/// An object store whose every request runs (and is retried) on a tokio runtime of its own,
/// so that callers may wait on it from any thread with any executor.
struct OnRuntime {
    inner: Arc<dyn ObjectStore>,
    runtime: Arc<tokio::runtime::Runtime>,
    url: String,
    warnings: Arc<WarnLimiter>,
    /// Requests made, seeding each one's jitter.
    calls: AtomicU64,
    outage: Arc<Outage>,
    /// Requests sent again ([`S3Objects::retries`]).
    retries: Arc<AtomicU64>,
}

impl fmt::Debug for OnRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OnRuntime({})", self.url)
    }
}

impl fmt::Display for OnRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

/// Whether a failed request may succeed when sent again: a transport failure, a timeout or a
/// server error, which the client reports as `Generic`; not a missing object, a failed
/// precondition, a refused permission or a bad configuration.
fn may_clear(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::Generic { .. })
}

impl OnRuntime {
    /// Runs `call` on the runtime, again after a transient failure (capped, jittered, with a
    /// deadline), and returns its last result.
    async fn call<T, F, Fut>(&self, what: String, call: F) -> object_store::Result<T>
    where
        T: Send + 'static,
        F: Fn(Arc<dyn ObjectStore>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = object_store::Result<T>> + Send,
    {
        let inner = self.inner.clone();
        let warnings = self.warnings.clone();
        let url = self.url.clone();
        let seed = self.calls.fetch_add(1, Ordering::Relaxed) ^ u64::from(std::process::id());
        let outage = self.outage.clone();
        let retries = self.retries.clone();
        let task = self.runtime.spawn(async move {
            let mut waits = RetryPolicy::S3_REQUEST.waits(seed);
            loop {
                match call(inner.clone()).await {
                    Err(e) if may_clear(&e) => match waits.next() {
                        Some(wait) => {
                            retries.fetch_add(1, Ordering::Relaxed);
                            warnings.warn("s3-retry", || {
                                format!("store {url}: {what} failed, retrying: {e}")
                            });
                            tokio::time::sleep(wait).await;
                        }
                        None => {
                            outage.failed(format!("{what}: {e}"));
                            return Err(e);
                        }
                    },
                    // Answered (a missing object and a failed precondition are answers too).
                    done => {
                        outage.answered();
                        return done;
                    }
                }
            }
        });
        task.await.map_err(|e| object_store::Error::Generic {
            store: "S3",
            source: Box::new(e),
        })?
    }
}

#[async_trait]
impl ObjectStore for OnRuntime {
    async fn put_opts(
        &self, location: &Path, payload: PutPayload, opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let loc = location.clone();
        self.call(format!("put {location}"), move |s| {
            let (loc, payload, opts) = (loc.clone(), payload.clone(), opts.clone());
            async move { s.put_opts(&loc, payload, opts).await }
        })
        .await
    }

    async fn put_multipart_opts(
        &self, location: &Path, _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        // Events and bundles are small: every object is one put.
        Err(object_store::Error::NotImplemented {
            operation: format!("multipart upload of {location}"),
            implementer: "the sequencer's S3 store".into(),
        })
    }

    async fn get_opts(
        &self, location: &Path, options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let loc = location.clone();
        // The body is read on the runtime too, then handed over whole.
        let (bytes, meta, range, attributes, extensions) = self
            .call(format!("get {location}"), move |s| {
                let (loc, options) = (loc.clone(), options.clone());
                async move {
                    let got = s.get_opts(&loc, options).await?;
                    let (meta, range) = (got.meta.clone(), got.range.clone());
                    let (attributes, extensions) = (got.attributes.clone(), got.extensions.clone());
                    let bytes = got.bytes().await?;
                    Ok((bytes, meta, range, attributes, extensions))
                }
            })
            .await?;
        Ok(GetResult {
            payload: GetResultPayload::Stream(stream::once(async move { Ok(bytes) }).boxed()),
            meta,
            range,
            attributes,
            extensions,
        })
    }

    async fn get_ranges(
        &self, location: &Path, ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<bytes::Bytes>> {
        let loc = location.clone();
        let ranges = ranges.to_vec();
        self.call(format!("get parts of {location}"), move |s| {
            let (loc, ranges) = (loc.clone(), ranges.clone());
            async move { s.get_ranges(&loc, &ranges).await }
        })
        .await
    }

    fn delete_stream(
        &self, locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        // In requests of many names (S3's DeleteObjects takes up to 1,000), each retried
        // whole when a name failed on the transport (deleting a name again is harmless).
        let this = self.clone_handle();
        locations
            .chunks(DELETE_CHUNK)
            .then(move |chunk| {
                let this = this.clone();
                async move {
                    let (paths, errors): (Vec<_>, Vec<_>) =
                        chunk.into_iter().partition(|r| r.is_ok());
                    let paths: Vec<Path> = paths.into_iter().flatten().collect();
                    let what = match (paths.first(), paths.len()) {
                        (Some(p), 1) => format!("delete {p}"),
                        (Some(p), n) => format!("delete {p} and {} more", n - 1),
                        (None, _) => "delete nothing".into(),
                    };
                    let done = if paths.is_empty() {
                        Vec::new()
                    } else {
                        this.call(what, move |s| {
                            let paths = paths.clone();
                            async move {
                                let mut done: Vec<object_store::Result<Path>> = s
                                    .delete_stream(stream::iter(paths.into_iter().map(Ok)).boxed())
                                    .collect()
                                    .await;
                                match done.iter().position(|r| r.as_ref().is_err_and(may_clear)) {
                                    Some(i) => Err(done.swap_remove(i).err().unwrap_or(
                                        object_store::Error::Generic {
                                            store: "S3",
                                            source: "a delete failed".into(),
                                        },
                                    )),
                                    None => Ok(done),
                                }
                            }
                        })
                        .await
                        .unwrap_or_else(|e| vec![Err(e)])
                    };
                    stream::iter(errors.into_iter().chain(done))
                }
            })
            .flatten()
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let prefix = prefix.cloned();
        let what = format!("list {}", prefix.clone().unwrap_or_default());
        self.listing(what, move |s| s.list(prefix.as_ref()))
    }

    fn list_with_offset(
        &self, prefix: Option<&Path>, offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let (prefix, offset) = (prefix.cloned(), offset.clone());
        let what = format!("list {} after {offset}", prefix.clone().unwrap_or_default());
        self.listing(what, move |s| s.list_with_offset(prefix.as_ref(), &offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let prefix = prefix.cloned();
        self.call(
            format!("list {}", prefix.clone().unwrap_or_default()),
            move |s| {
                let prefix = prefix.clone();
                async move { s.list_with_delimiter(prefix.as_ref()).await }
            },
        )
        .await
    }

    async fn copy_opts(
        &self, from: &Path, to: &Path, options: CopyOptions,
    ) -> object_store::Result<()> {
        let (f, t) = (from.clone(), to.clone());
        self.call(format!("copy {from} to {to}"), move |s| {
            let (f, t, options) = (f.clone(), t.clone(), options.clone());
            async move { s.copy_opts(&f, &t, options).await }
        })
        .await
    }
}

impl OnRuntime {
    /// A second handle on the same client, runtime and warnings (for streams that outlive
    /// the borrow of `self`).
    /// A listing `list` makes of the inner store, collected whole under the retries of
    /// [`call`](Self::call) (a page that failed is not half-delivered), then streamed.
    fn listing<L>(
        &self, what: String, list: L,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>>
    where
        L: Fn(Arc<dyn ObjectStore>) -> BoxStream<'static, object_store::Result<ObjectMeta>>
            + Send
            + Sync
            + 'static,
    {
        let this = self.clone_handle();
        let list = Arc::new(list);
        stream::once(async move {
            this.call(what, move |s| {
                let list = list.clone();
                async move { list(s).try_collect::<Vec<_>>().await }
            })
            .await
        })
        .map_ok(|v| stream::iter(v.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
    }

    fn clone_handle(&self) -> Arc<Self> {
        Arc::new(Self {
            inner: self.inner.clone(),
            runtime: self.runtime.clone(),
            url: self.url.clone(),
            warnings: self.warnings.clone(),
            calls: AtomicU64::new(self.calls.fetch_add(1 << 32, Ordering::Relaxed)),
            outage: self.outage.clone(),
            retries: self.retries.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-memory store whose every put takes `put_delay` (awaited, as a network answer is)
    /// and whose first `failing_puts` puts fail as a lost connection does.
    #[derive(Debug, Default)]
    struct Slow {
        objects: object_store::memory::InMemory,
        put_delay: Duration,
        failing_puts: std::sync::atomic::AtomicU32,
    }

    impl fmt::Display for Slow {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("Slow")
        }
    }

    #[async_trait]
    impl ObjectStore for Slow {
        async fn put_opts(
            &self, location: &Path, payload: PutPayload, opts: PutOptions,
        ) -> object_store::Result<PutResult> {
            tokio::time::sleep(self.put_delay).await;
            let failing =
                (self.failing_puts)
                    .try_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            if failing.is_ok() {
                return Err(object_store::Error::Generic {
                    store: "Slow",
                    source: "connection reset".into(),
                });
            }
            self.objects.put_opts(location, payload, opts).await
        }

        async fn put_multipart_opts(
            &self, location: &Path, opts: PutMultipartOptions,
        ) -> object_store::Result<Box<dyn MultipartUpload>> {
            self.objects.put_multipart_opts(location, opts).await
        }

        async fn get_opts(
            &self, location: &Path, options: GetOptions,
        ) -> object_store::Result<GetResult> {
            self.objects.get_opts(location, options).await
        }

        fn delete_stream(
            &self, locations: BoxStream<'static, object_store::Result<Path>>,
        ) -> BoxStream<'static, object_store::Result<Path>> {
            self.objects.delete_stream(locations)
        }

        fn list(
            &self, prefix: Option<&Path>,
        ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.objects.list(prefix)
        }

        async fn list_with_delimiter(
            &self, prefix: Option<&Path>,
        ) -> object_store::Result<ListResult> {
            self.objects.list_with_delimiter(prefix).await
        }

        async fn copy_opts(
            &self, from: &Path, to: &Path, options: CopyOptions,
        ) -> object_store::Result<()> {
            self.objects.copy_opts(from, to, options).await
        }
    }

    #[test]
    fn requests_of_many_threads_are_in_flight_together_on_the_stores_runtime() {
        let slow = Slow {
            put_delay: Duration::from_millis(200),
            ..Slow::default()
        };
        let s3 = on_runtime(Arc::new(slow), "s3://test".into()).expect("runtime");
        let objects = s3.objects;
        let started = std::time::Instant::now();
        // Eight callers (the partitions' command processors), each waiting on its put with an
        // executor of its own, as the PLog does.
        std::thread::scope(|s| {
            for p in 0..8 {
                let objects = objects.clone();
                s.spawn(move || {
                    futures::executor::block_on(objects.put_opts(
                        &Path::from(format!("events/{p:05}/1")),
                        PutPayload::from_static(b"x"),
                        PutOptions::default(),
                    ))
                    .expect("put");
                });
            }
        });
        // One after the other they would take 1.6 s.
        let took = started.elapsed();
        assert!(took < Duration::from_millis(800), "{took:?}");
    }

    #[test]
    fn a_request_sent_again_after_a_lost_connection_is_counted_once_per_retry() {
        let flaky = Slow {
            failing_puts: 2.into(),
            ..Slow::default()
        };
        let s3 = on_runtime(Arc::new(flaky), "s3://test".into()).expect("runtime");
        let put = |name: &str| {
            futures::executor::block_on(s3.objects.put_opts(
                &Path::from(name),
                PutPayload::from_static(b"x"),
                PutOptions::default(),
            ))
        };
        put("events/00000/1").expect("the third try succeeds");
        assert_eq!(s3.retries.load(Ordering::Relaxed), 2);
        put("events/00000/2").expect("no failure left");
        assert_eq!(s3.retries.load(Ordering::Relaxed), 2, "an answered request");
        assert!(s3.outage.longer_than(Duration::ZERO).is_none());
    }

    #[test]
    fn an_s3_url_names_a_bucket_and_a_prefix_and_a_bad_one_is_refused_clearly() {
        let l = S3Location::parse("s3://my-bucket/runs/a/").expect("valid");
        assert_eq!(
            (l.bucket.as_str(), l.prefix.as_str()),
            ("my-bucket", "runs/a")
        );
        assert_eq!(l.url(), "s3://my-bucket/runs/a");
        assert_eq!(S3Location::parse("s3://bkt").expect("valid").prefix, "");
        for bad in [
            "s3://",
            "s3://B/x",
            "s3://ab",
            "s3://bkt/a/../b",
            "s3://bkt/a//b",
            "file:///x",
        ] {
            let e = S3Location::parse(bad).expect_err(bad);
            assert!(e.0.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn only_loopback_endpoints_count_as_loopback() {
        for yes in [
            "http://127.0.0.1:9000",
            "http://localhost:1",
            "http://[::1]:80/x",
            "http://127.1.2.3",
        ] {
            assert!(loopback(yes), "{yes}");
        }
        for no in [
            "http://10.0.0.1:9000",
            "http://example.com",
            "http://127.0.0.1.example.com",
        ] {
            assert!(!loopback(no), "{no}");
        }
    }
}
