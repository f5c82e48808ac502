//! The tokio runtime a network store's client runs its requests on (etcd's client, the S3
//! requests of the object store): the store's own, so its callers need none.

/// A runtime of two worker threads named `thread_name`, with its I/O and time drivers: callers
/// on many threads (one per partition, the merger, the reads) have their requests in flight
/// together, two threads driving them all.
pub(crate) fn io_runtime(thread_name: &str) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(thread_name)
        .enable_all()
        .build()
}
