//! The one retry policy for storage calls that may clear by themselves: capped, jittered
//! exponential backoff with a deadline (from the `backon` crate), and warnings about repeated
//! failures limited to one line per kind per interval.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// How a caller retries a storage call that failed with an error that may clear by itself
/// (errors that cannot, such as a full disk, stop at once instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait before the first retry (before jitter).
    pub first_wait: Duration,
    /// The longest wait between two tries (before jitter).
    pub max_wait: Duration,
    /// The most retries after the first failure.
    pub max_retries: usize,
    /// The most time all waits together may take.
    pub deadline: Duration,
}

impl RetryPolicy {
    /// A command processor's PLog append: 100 ms doubling to 1 s, each wait lengthened by a
    /// random share of up to itself (so partitions failing together do not retry together), at
    /// most 5 retries and 5 s of waiting: an error that does not clear within a few seconds
    /// stops the run.
    pub const APPEND: Self = Self {
        first_wait: Duration::from_millis(100),
        max_wait: Duration::from_secs(1),
        max_retries: 5,
        deadline: Duration::from_secs(5),
    };

    /// One etcd request failing on the transport (a member down, no leader, a timeout): 20 ms
    /// doubling to 500 ms, jittered; how long it goes on is the store's to say (its own retry
    /// time, or a lost majority's wait), so the waits themselves never run out.
    pub const ETCD_REQUEST: Self = Self {
        first_wait: Duration::from_millis(20),
        max_wait: Duration::from_millis(500),
        max_retries: usize::MAX,
        deadline: Duration::MAX,
    };

    /// One S3 request failing on the transport (a refused or lost connection, a timeout, a
    /// server error): 50 ms doubling to 500 ms, jittered, at most 4 retries and 2 s of waiting.
    /// Short, because the caller retries too (an append under [`APPEND`](Self::APPEND)), and
    /// an object store that does not answer for seconds stops the run.
    pub const S3_REQUEST: Self = Self {
        first_wait: Duration::from_millis(50),
        max_wait: Duration::from_millis(500),
        max_retries: 4,
        deadline: Duration::from_secs(2),
    };

    /// A host registering again after its lease expired (the cluster away, or slow): 100 ms
    /// doubling to 2 s, jittered, for at most a minute of waiting (the membership sets its
    /// own deadline); then the host stops.
    pub const REGISTER: Self = Self {
        first_wait: Duration::from_millis(100),
        max_wait: Duration::from_secs(2),
        max_retries: usize::MAX,
        deadline: Duration::from_secs(60),
    };

    /// The object store's merger after the store failed a merge (each request retried first
    /// under [`S3_REQUEST`](Self::S3_REQUEST)): 250 ms doubling to 10 s, jittered, for at
    /// most 2 minutes; then merging that partition stops. Longer than any store wait a run
    /// is likely to be given, so that a store which stays away stops the run for what it is
    /// (its appends fail) and not for the merger.
    pub const MERGE: Self = Self {
        first_wait: Duration::from_millis(250),
        max_wait: Duration::from_secs(10),
        max_retries: usize::MAX,
        deadline: Duration::from_secs(120),
    };

    /// The waits between tries, in order: `None` once the retries or the deadline are spent.
    /// `seed` seeds the jitter (a different one per caller keeps callers apart).
    pub fn waits(&self, seed: u64) -> ExponentialBackoff {
        ExponentialBuilder::new()
            .with_min_delay(self.first_wait)
            .with_max_delay(self.max_wait)
            .with_max_times(self.max_retries)
            .with_total_delay(Some(self.deadline))
            .with_jitter()
            .with_jitter_seed(seed)
            .build()
    }
}

/// Warnings of one kind at most once per interval: the first at once, later ones within the
/// interval counted and reported with the next line that goes out ("… (3 more like it in the
/// last 5 s)"). Shared by every thread of a run.
pub struct WarnLimiter {
    interval: Duration,
    kinds: Mutex<HashMap<&'static str, Kind>>,
}

struct Kind {
    last_shown: Instant,
    held_back: u64,
}

impl WarnLimiter {
    /// A limiter showing each kind at most once per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            kinds: Mutex::new(HashMap::new()),
        }
    }

    /// The line to show for a warning of `kind` now, or `None` if it is held back (and
    /// counted). `message` is only called for a line that goes out.
    pub fn line(&self, kind: &'static str, message: impl FnOnce() -> String) -> Option<String> {
        self.line_at(kind, Instant::now(), message)
    }

    /// [`line`](Self::line) at a given time.
    pub fn line_at(
        &self, kind: &'static str, now: Instant, message: impl FnOnce() -> String,
    ) -> Option<String> {
        let mut kinds = self.kinds.lock().unwrap_or_else(|p| p.into_inner());
        let held_back = match kinds.get_mut(kind) {
            Some(k) if now.saturating_duration_since(k.last_shown) < self.interval => {
                k.held_back += 1;
                return None;
            }
            Some(k) => std::mem::take(&mut k.held_back),
            None => 0,
        };
        kinds.insert(
            kind,
            Kind {
                last_shown: now,
                held_back: 0,
            },
        );
        let mut line = message();
        if held_back > 0 {
            line.push_str(&format!(
                " ({held_back} more like it in the last {:.0} s)",
                self.interval.as_secs_f64()
            ));
        }
        Some(line)
    }

    /// Logs a warning of `kind` through `tracing`, unless it is held back.
    pub fn warn(&self, kind: &'static str, message: impl FnOnce() -> String) {
        if let Some(line) = self.line(kind, message) {
            tracing::warn!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_waits_grow_are_jittered_and_stop_after_five_retries_within_the_deadline() {
        let waits: Vec<Duration> = RetryPolicy::APPEND.waits(7).collect();
        assert_eq!(waits.len(), 5);
        for (i, w) in waits.iter().enumerate() {
            let base = Duration::from_millis(100 << i).min(Duration::from_secs(1));
            assert!(*w >= base && *w < base * 2, "wait {i}: {w:?} from {base:?}");
        }
        assert!(waits.iter().sum::<Duration>() <= RetryPolicy::APPEND.deadline);
        let other: Vec<Duration> = RetryPolicy::APPEND.waits(8).collect();
        assert_ne!(waits, other, "another seed, other jitter");
    }

    #[test]
    fn s3_request_waits_stop_after_four_retries_within_two_seconds() {
        let policy = RetryPolicy::S3_REQUEST;
        let waits: Vec<Duration> = policy.waits(3).collect();
        assert_eq!(waits.len(), 4);
        assert!(waits.iter().sum::<Duration>() <= policy.deadline);
        assert!(
            waits
                .iter()
                .all(|w| *w >= policy.first_wait && *w < policy.max_wait * 2)
        );
    }

    #[test]
    fn etcd_request_waits_never_run_out_and_stay_between_the_first_wait_and_twice_the_cap() {
        let policy = RetryPolicy::ETCD_REQUEST;
        let waits: Vec<Duration> = policy.waits(1).take(1000).collect();
        assert_eq!(waits.len(), 1000, "the store decides when to stop");
        assert!(
            waits
                .iter()
                .all(|w| *w >= policy.first_wait && *w < policy.max_wait * 2)
        );
    }

    #[test]
    fn a_kind_goes_out_once_per_interval_with_a_count_of_what_was_held_back() {
        let l = WarnLimiter::new(Duration::from_secs(5));
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert_eq!(
            l.line_at("a", at(0), || "full".into()).as_deref(),
            Some("full")
        );
        assert_eq!(l.line_at("a", at(1), || "full".into()), None);
        assert_eq!(l.line_at("a", at(4), || "full".into()), None);
        assert_eq!(
            l.line_at("b", at(4), || "other".into()).as_deref(),
            Some("other"),
            "another kind is not held back"
        );
        assert_eq!(
            l.line_at("a", at(5), || "full".into()).as_deref(),
            Some("full (2 more like it in the last 5 s)")
        );
        assert_eq!(
            l.line_at("a", at(11), || "full".into()).as_deref(),
            Some("full")
        );
    }
}
