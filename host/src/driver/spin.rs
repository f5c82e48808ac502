//! Waiting a few microseconds for another thread without sleeping: the caller for the instance
//! the task driver holds, the driver for the work a caller is about to send or for the next
//! partition to open. A futex sleep and the wake-up after it cost more than the wait itself
//! when the other side is running now.
//!
//! A mechanism for speed (docs/ARCHITECTURE.md, "What exists only for speed"): a core kept busy
//! for at most the wait given, only where the process may run on more than one core, for W2 one
//! event per call without group commit 588 → 475–498 ns (ce7138b) and W6 on demand 72 → 46 µs,
//! pooled 33.5 → 25.3.

use std::time::{Duration, Instant};

/// Tries `attempt` until it gives a value or `within` has passed (then `None`), with a spin-loop
/// hint between tries; the clock is read once every 32 tries.
pub(crate) fn spin_for<T>(within: Duration, attempt: impl FnMut() -> Option<T>) -> Option<T> {
    try_for(within, false, attempt)
}

/// [`spin_for`], but giving the core to another thread of this process that is ready to run
/// (if any) after each 32 tries: for a wait long enough that the thread it waits for may need
/// this core meanwhile, or a third thread doing work for it (on two cores, the memory stock's).
pub(crate) fn spin_yielding_for<T>(
    within: Duration, attempt: impl FnMut() -> Option<T>,
) -> Option<T> {
    try_for(within, true, attempt)
}

fn try_for<T>(
    within: Duration, yielding: bool, mut attempt: impl FnMut() -> Option<T>,
) -> Option<T> {
    let until = Instant::now() + within;
    loop {
        for _ in 0..32 {
            if let Some(value) = attempt() {
                return Some(value);
            }
            std::hint::spin_loop();
        }
        if Instant::now() >= until {
            return None;
        }
        if yielding {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gives_the_first_value_an_attempt_yields() {
        let mut tries = 0;
        let got = spin_for(Duration::from_secs(5), || {
            tries += 1;
            (tries == 40).then_some(tries)
        });
        assert_eq!(got, Some(40));
    }

    #[test]
    fn yielding_gives_a_value_another_thread_makes_meanwhile() {
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let setter = flag.clone();
        let other =
            std::thread::spawn(move || setter.store(true, std::sync::atomic::Ordering::Release));
        let got = spin_yielding_for(Duration::from_secs(5), || {
            flag.load(std::sync::atomic::Ordering::Acquire)
                .then_some(())
        });
        other.join().expect("setter");
        assert_eq!(got, Some(()));
        let start = Instant::now();
        let none: Option<()> = spin_yielding_for(Duration::from_micros(200), || None);
        assert_eq!(none, None);
        assert!(start.elapsed() >= Duration::from_micros(200));
    }

    #[test]
    fn gives_up_once_the_time_has_passed() {
        let start = Instant::now();
        let got: Option<()> = spin_for(Duration::from_micros(200), || None);
        assert_eq!(got, None);
        assert!(start.elapsed() >= Duration::from_micros(200));
    }
}
