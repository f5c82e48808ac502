//! Running requests: the bridge from the host's executor to the store's tokio runtime (every
//! operation is spawned on it and answered through a oneshot channel), and one request run
//! with retries and backoff, the quorum consulted between attempts.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use etcd_client::{GetOptions, GetResponse, KvClient};
use futures::channel::oneshot;
use futures::future::{BoxFuture, FutureExt};
use tonic::Code as tonic_code;

use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::quorum::Next;
use crate::store::retry::RetryPolicy;
use crate::store::storage::StorageError;

/// The largest response the client accepts (etcd-client's default is 4 MiB).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

pub(super) fn one_line(s: &str) -> String {
    s.split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A request's failure: the transport (retry) or a definite answer (report).
enum Failure {
    Transient(String),
    Fatal(String),
}

/// Whether an etcd or gRPC error message says a request was larger than the cluster takes.
fn too_large(message: &str) -> bool {
    message.contains("request is too large") || message.contains("larger than max")
}

fn classify(e: etcd_client::Error) -> Failure {
    use etcd_client::Error as E;
    match &e {
        E::GRpcStatus(s) => match s.code() {
            tonic_code::InvalidArgument
            | tonic_code::FailedPrecondition
            | tonic_code::OutOfRange
            | tonic_code::PermissionDenied
            | tonic_code::Unauthenticated
            | tonic_code::Unimplemented => Failure::Fatal(one_line(s.message())),
            // A request over the member's gRPC message limit ("received message larger than
            // max"): sending it again cannot help.
            tonic_code::ResourceExhausted if too_large(s.message()) => {
                Failure::Fatal(one_line(s.message()))
            }
            _ => Failure::Transient(one_line(&format!("{:?}: {}", s.code(), s.message()))),
        },
        _ => Failure::Transient(one_line(&e.to_string())),
    }
}

impl EtcdStorage {
    pub(super) fn kv(&self) -> KvClient {
        self.inner
            .client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
    }

    pub(super) fn err(&self, what: &str, e: &str) -> StorageError {
        StorageError(format!("{}: {what}: {e}", self.inner.label))
    }

    pub(super) fn get_options(&self) -> GetOptions {
        if self.inner.config.serializable_reads {
            GetOptions::new().with_serializable()
        } else {
            GetOptions::new()
        }
    }

    /// Runs `fut` on the store's runtime; the returned future answers on any executor.
    pub(super) fn spawn<T: Send + 'static, E: From<StorageError> + Send + 'static>(
        &self, fut: impl Future<Output = Result<T, E>> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, E>> {
        let (tx, rx) = oneshot::channel();
        let closed = self.err("the store is closed", "its runtime stopped");
        match &self.inner.runtime {
            Some(rt) => {
                rt.spawn(async move {
                    let _ = tx.send(fut.await);
                });
            }
            None => return futures::future::ready(Err(E::from(closed))).boxed(),
        }
        async move { rx.await.unwrap_or_else(|_| Err(E::from(closed))) }.boxed()
    }

    /// Runs `fut` on the store's runtime and waits for it on this (non-tokio) thread.
    pub(super) fn block<T: Send + 'static, E: From<StorageError> + Send + 'static>(
        &self, fut: impl Future<Output = Result<T, E>> + Send + 'static,
    ) -> Result<T, E> {
        futures::executor::block_on(self.spawn(fut))
    }

    /// A read of `key` (a range from it, as `opts` say), retried as [`retrying`](Self::retrying)
    /// retries; `what` names it in errors.
    pub(super) async fn get_retrying(
        self, what: String, key: impl Into<String>, opts: GetOptions,
    ) -> Result<GetResponse, StorageError> {
        let key = key.into();
        self.retrying(what, |mut kv| {
            let (key, opts) = (key.clone(), opts.clone());
            async move { kv.get(key, Some(opts)).await }
        })
        .await
    }

    /// Retries `attempt` on transient failures, with backoff, until `retry_for` has passed.
    pub(super) async fn retrying<T, F, Fut>(
        self, what: String, attempt: F,
    ) -> Result<T, StorageError>
    where
        F: FnMut(KvClient) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let retry_for = self.inner.config.retry_for;
        self.retrying_for(what, retry_for, attempt).await
    }

    /// Retries `attempt` on transient failures, with backoff, until `retry_for` has passed.
    pub(super) async fn retrying_for<T, F, Fut>(
        self, what: String, retry_for: Duration, mut attempt: F,
    ) -> Result<T, StorageError>
    where
        F: FnMut(KvClient) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let mut deadline = Instant::now() + retry_for;
        let policy = RetryPolicy::ETCD_REQUEST;
        let mut waits = policy.waits(self.inner.stats.retries.load(Ordering::Relaxed));
        let mut failing_since: Option<Instant> = None;
        let mut waited_for_majority = false;
        let quorum = &self.inner.quorum;
        loop {
            if let Some(failure) = quorum.failure() {
                return Err(self.err(&what, &failure));
            }
            match attempt(self.kv()).await.map_err(classify) {
                Ok(v) => {
                    quorum.succeeded();
                    return Ok(v);
                }
                Err(Failure::Fatal(e)) if too_large(&e) => {
                    // The cluster's limit is below this store's: nothing sent again can pass.
                    let failure = format!(
                        "the cluster refused a request as too large ({e}); its --max-request-bytes is below this store's limit ({} bytes): give the store the cluster's limit, or raise the cluster's",
                        self.inner.config.max_request_bytes
                    );
                    quorum.fail(format!("{}: {failure}", self.inner.label));
                    return Err(self.err(&what, &failure));
                }
                Err(Failure::Fatal(e)) => return Err(self.err(&what, &e)),
                Err(Failure::Transient(e)) => {
                    let delay = waits.next().unwrap_or(policy.max_wait);
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    match quorum.after_failing(&what, since).await {
                        Next::GiveUp(failure) => return Err(self.err(&what, &failure)),
                        Next::WaitForMajority => waited_for_majority = true,
                        Next::Retry => {
                            if waited_for_majority {
                                // The majority is back: the request gets its own time again.
                                waited_for_majority = false;
                                deadline = Instant::now() + retry_for;
                            }
                            if Instant::now() + delay > deadline {
                                let total = quorum.members();
                                let reachable = quorum.reachable().await;
                                return Err(self.err(
                                    &what,
                                    &format!(
                                        "{e} (gave up after {:.1} s: is a majority of the cluster up? {reachable} of {total} members reachable)",
                                        retry_for.as_secs_f64()
                                    ),
                                ));
                            }
                        }
                    }
                    self.inner.stats.retries.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!("{}: {what}: {e}; retrying", self.inner.label);
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }
}
