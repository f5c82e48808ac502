//! How a reader beside a live run shares the machine with it ([`Pace`]): after each read of
//! events it rests as long as it worked since its last rest, so a `check` or `inspect` beside
//! a run takes at most about half a core from it (reader and the run's serving thread
//! together), whatever the store's size. A check of a large store then takes about twice as
//! long; the run's command processors, which an operator's look must not slow, keep the rest.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest one rest lasts: a reader that was idle between reads (a caller doing other
/// work) does not sleep for all of it.
pub const MAX_REST: Duration = Duration::from_millis(200);

/// A reader's duty cycle; see the module's documentation.
#[derive(Debug)]
pub struct Pace {
    /// The rest per unit of work (1.0: rest as long as it worked), 0 for none.
    rest_per_work: f64,
    /// When the reader's current stretch of work began (its last rest ended).
    working_since: Mutex<Instant>,
}

impl Pace {
    /// A reader that rests `rest_per_work` times as long as it worked (1.0: half the time
    /// working); 0 (or less) never rests.
    pub fn new(rest_per_work: f64) -> Self {
        Self {
            rest_per_work: rest_per_work.max(0.0),
            working_since: Mutex::new(Instant::now()),
        }
    }

    /// The rest due now for the work since the last rest (at most [`MAX_REST`]), the stretch
    /// of work restarting after it.
    pub fn rest_due(&self) -> Duration {
        let mut since = self
            .working_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let worked = since.elapsed();
        let rest = worked.mul_f64(self.rest_per_work).min(MAX_REST);
        *since = Instant::now() + rest;
        rest
    }

    /// Rests as [`rest_due`](Self::rest_due) says.
    pub fn rest(&self) {
        let rest = self.rest_due();
        if !rest.is_zero() {
            std::thread::sleep(rest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_rests_in_proportion_to_its_work_capped_and_not_at_all_at_zero() {
        let pace = Pace::new(1.0);
        std::thread::sleep(Duration::from_millis(30));
        let rest = pace.rest_due();
        assert!(
            rest >= Duration::from_millis(30) && rest <= MAX_REST,
            "{rest:?}"
        );
        // The stretch of work restarts after the rest: nothing is due straight after it.
        assert!(pace.rest_due() < Duration::from_millis(5));
        std::thread::sleep(MAX_REST + Duration::from_millis(10));
        std::thread::sleep(rest);
        assert_eq!(pace.rest_due(), MAX_REST);
        let never = Pace::new(0.0);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(never.rest_due(), Duration::ZERO);
    }
}
