//! [`Wakeup`]: how the membership's thread is woken before its next round is due (a change
//! of the hosts or owners seen by the watch, an embedder releasing a partition).

use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// A flag and a condition variable: [`notify`](Self::notify) raises the flag and wakes the
/// waiter; [`wait`](Self::wait) returns when it is raised (lowering it) or after the timeout.
#[derive(Default)]
pub(crate) struct Wakeup {
    raised: Mutex<bool>,
    cv: Condvar,
}

impl Wakeup {
    /// Wakes the waiter (or the next wait, at once).
    pub(crate) fn notify(&self) {
        *self.raised.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_all();
    }

    /// Waits until notified or `timeout` passes; true if notified.
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        let raised = self.raised.lock().unwrap_or_else(|p| p.into_inner());
        let (mut raised, _) = self
            .cv
            .wait_timeout_while(raised, timeout, |r| !*r)
            .unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *raised)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_notify_before_the_wait_is_not_lost_and_is_consumed_once() {
        let w = Wakeup::default();
        w.notify();
        assert!(w.wait(Duration::from_secs(5)));
        assert!(!w.wait(Duration::from_millis(10)));
    }

    #[test]
    fn a_notify_from_another_thread_ends_the_wait_early() {
        let w = Arc::new(Wakeup::default());
        let other = w.clone();
        let started = Instant::now();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            other.notify();
        });
        assert!(w.wait(Duration::from_secs(30)));
        assert!(started.elapsed() < Duration::from_secs(30));
        t.join().unwrap();
    }
}
