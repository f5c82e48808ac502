//! The host's clocks: monotonic time in production, a manual clock for tests. Below everything
//! that reads time (the runtime's guest clock, the driver's timers, the etcd store's leases).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{BoxFuture, FutureExt};
use sequencer::Instant;

/// Time for the guest and timers for the task driver.
pub trait Clock: Send + Sync + 'static {
    /// Now, on a clock that never goes backwards.
    fn now(&self) -> Instant;
    /// A future that completes once `now()` has reached `at`.
    fn sleep_until(&self, at: Instant) -> BoxFuture<'static, ()>;
}

/// Real monotonic time, counted from the clock's creation.
pub struct MonotonicClock {
    origin: std::time::Instant,
}

impl MonotonicClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        Self {
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn sleep_until(&self, at: Instant) -> BoxFuture<'static, ()> {
        let wait = at.as_nanos().saturating_sub(self.now().as_nanos());
        futures_timer::Delay::new(Duration::from_nanos(wait)).boxed()
    }
}

/// A clock that moves only when told to; sleepers wake as it passes their deadline.
#[derive(Clone, Default)]
pub struct ManualClock {
    inner: Arc<Mutex<ManualInner>>,
}

#[derive(Default)]
struct ManualInner {
    now: Instant,
    sleepers: Vec<(Instant, oneshot::Sender<()>)>,
}

impl ManualClock {
    /// A clock at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `d`, waking every sleeper whose deadline has come.
    pub fn advance(&self, d: Duration) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.now = inner.now.saturating_add(d);
        let now = inner.now;
        let (due, waiting): (Vec<_>, Vec<_>) =
            inner.sleepers.drain(..).partition(|(at, _)| *at <= now);
        inner.sleepers = waiting;
        drop(inner);
        for (_, tx) in due {
            let _ = tx.send(());
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).now
    }

    fn sleep_until(&self, at: Instant) -> BoxFuture<'static, ()> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if at <= inner.now {
            return futures::future::ready(()).boxed();
        }
        let (tx, rx) = oneshot::channel();
        inner.sleepers.push((at, tx));
        rx.map(|_| ()).boxed()
    }
}
