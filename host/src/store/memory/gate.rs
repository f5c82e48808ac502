//! A gate that storage operations wait at while it is closed: how tests hold a write or a read
//! in flight without sleeping.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use futures::channel::oneshot;
use futures::future::{BoxFuture, FutureExt};

/// Open by default. While closed, [`Gate::wait`] futures stay pending until [`Gate::open`] (or
/// until [`Gate::allow`] lets some through).
#[derive(Clone, Default)]
pub struct Gate {
    inner: Arc<(Mutex<GateInner>, Condvar)>,
}

#[derive(Default)]
struct GateInner {
    closed: bool,
    /// While closed, how many more operations may pass.
    allowance: usize,
    waiters: Vec<oneshot::Sender<()>>,
}

impl Gate {
    /// Makes later operations wait until [`Gate::open`].
    pub fn close(&self) {
        let mut g = self.lock();
        g.closed = true;
        g.allowance = 0;
    }

    /// While closed, lets the next `n` operations through (waiting ones first).
    pub fn allow(&self, n: usize) {
        let mut g = self.lock();
        g.allowance += n;
        while g.allowance > 0 && !g.waiters.is_empty() {
            let w = g.waiters.remove(0);
            if w.send(()).is_ok() {
                g.allowance -= 1;
            }
        }
    }

    /// Lets every waiting and later operation through.
    pub fn open(&self) {
        let waiters = {
            let mut g = self.lock();
            g.closed = false;
            std::mem::take(&mut g.waiters)
        };
        for w in waiters {
            let _ = w.send(());
        }
    }

    /// How many operations are waiting at the gate now (abandoned ones are not counted).
    pub fn waiting(&self) -> usize {
        let mut g = self.lock();
        g.waiters.retain(|w| !w.is_canceled());
        g.waiters.len()
    }

    /// Blocks until at least `n` operations wait at the gate.
    pub fn wait_for_waiters(&self, n: usize) {
        let (_, cv) = &*self.inner;
        let mut g = self.lock();
        while g.waiters.iter().filter(|w| !w.is_canceled()).count() < n {
            g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// A future that completes when the gate lets it through.
    pub fn wait(&self) -> BoxFuture<'static, ()> {
        let (_, cv) = &*self.inner;
        let mut g = self.lock();
        if !g.closed {
            return futures::future::ready(()).boxed();
        }
        if g.allowance > 0 {
            g.allowance -= 1;
            return futures::future::ready(()).boxed();
        }
        let (tx, rx) = oneshot::channel();
        g.waiters.push(tx);
        cv.notify_all();
        rx.map(|_| ()).boxed()
    }

    fn lock(&self) -> MutexGuard<'_, GateInner> {
        self.inner.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
