//! How long a failed storage operation waits before it is tried again: a delay doubling with
//! each consecutive failure up to a bound, less a jitter drawn deterministically (the core
//! reads no random source).

use core::time::Duration;

use crate::types::Instant;

/// How long to wait before retrying a failed storage operation.
#[derive(Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// The wait after the first failure.
    pub(crate) first: Duration,
    /// The longest wait.
    pub(crate) max: Duration,
    /// How much of each wait is drawn away, in percent (more than 100 counts as 100).
    pub(crate) jitter_percent: u8,
}

impl RetryPolicy {
    /// The wait after failure number `failures` (0 for the first) at `now`: `first`, doubling
    /// with each failure up to `max`, less up to `jitter_percent` of it drawn from a hash of
    /// `now` and `failures` (deterministic: the core reads no random source).
    pub(crate) fn delay(&self, failures: u32, now: Instant) -> Duration {
        let full = self
            .first
            .saturating_mul(1u32 << failures.min(31))
            .min(self.max);
        let nanos = u64::try_from(full.as_nanos()).unwrap_or(u64::MAX);
        let span = u128::from(nanos) * u128::from(self.jitter_percent.min(100)) / 100;
        let draw = mix(now.as_nanos() ^ u64::from(failures).rotate_left(32));
        // `draw / 2^64` of the span, in 0..=span.
        let off = (u128::from(draw) * (span + 1)) >> 64;
        Duration::from_nanos(nanos - off as u64)
    }
}

/// A 64-bit finalizer (SplitMix64's): every input bit moves every output bit.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How many times in a row an operation failed, which sets how long its next retry waits.
#[derive(Default)]
pub(crate) struct Backoff {
    failures: u32,
}

impl Backoff {
    /// Counts a failure at `now`; returns when the operation may be tried again.
    pub(crate) fn failed(&mut self, now: Instant, policy: RetryPolicy) -> Instant {
        let delay = policy.delay(self.failures, now);
        self.failures = self.failures.saturating_add(1);
        now.saturating_add(delay)
    }

    /// The operation succeeded: the next failure waits the first delay again.
    pub(crate) fn succeeded(&mut self) {
        *self = Self::default();
    }
}
