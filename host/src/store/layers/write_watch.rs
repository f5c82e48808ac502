//! A flusher write whose outcome a layer must learn even when the write's future is dropped
//! before it ends ([`watched`]): what it keeps of the written keys is then unknown.

use futures::future::FutureExt;

use crate::store::storage::StorageFuture;

/// `write`, calling `ended` once with whether it succeeded: when it ends, or with `false` when
/// its future is dropped first (its outcome is then unknown).
pub(crate) fn watched(
    write: StorageFuture<()>, ended: impl FnOnce(bool) + Send + 'static,
) -> StorageFuture<()> {
    let mut watch = Watch(Some(ended));
    async move {
        let r = write.await;
        if let Some(ended) = watch.0.take() {
            ended(r.is_ok());
        }
        r
    }
    .boxed()
}

/// Calls its function with `false` if dropped before it was taken.
struct Watch<F: FnOnce(bool)>(Option<F>);

impl<F: FnOnce(bool)> Drop for Watch<F> {
    fn drop(&mut self) {
        if let Some(ended) = self.0.take() {
            ended(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures::future::{pending, ready};

    use crate::store::storage::StorageError;

    use super::*;

    fn recorder() -> (Arc<Mutex<Vec<bool>>>, impl FnOnce(bool) + Send + 'static) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let to = seen.clone();
        (seen, move |ok| to.lock().expect("lock").push(ok))
    }

    #[test]
    fn a_write_that_ends_reports_whether_it_succeeded_once() {
        for (outcome, ok) in [(Ok(()), true), (Err(StorageError("no".into())), false)] {
            let (seen, ended) = recorder();
            let r = futures::executor::block_on(watched(ready(outcome.clone()).boxed(), ended));
            assert_eq!(r, outcome);
            assert_eq!(*seen.lock().expect("lock"), vec![ok]);
        }
    }

    #[test]
    fn a_write_dropped_before_it_ends_reports_a_failure() {
        let (seen, ended) = recorder();
        drop(watched(pending().boxed(), ended));
        assert_eq!(*seen.lock().expect("lock"), vec![false]);
    }
}
