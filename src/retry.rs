//! How long a failed storage operation waits before it is tried again: a delay doubling with
//! each consecutive failure up to a bound, less a jitter drawn deterministically (the core
//! reads no random source). Storage answering anything cuts a long wait short (docs/DESIGN.md
//! §4.4): [`Backoff::succeeded`] says how short, and while nothing else would answer, a
//! [`Probe`] asks storage at the first delay's rate.

use core::time::Duration;

use crate::types::Instant;
use crate::work::Ticket;

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
        self.jittered(full, u64::from(failures).rotate_left(32), now)
    }

    /// The wait before probe number `probes` (counted over the sequencer's life) at `now`:
    /// `first`, never doubled, less the same share of jitter as a retry, drawn from `now` and
    /// the count (so probes failing at one instant of a manual clock still spread out).
    pub(crate) fn probe_delay(&self, probes: u32, now: Instant) -> Duration {
        self.jittered(
            self.first,
            u64::from(probes).rotate_left(16) ^ PROBE_SALT,
            now,
        )
    }

    /// `full` less up to `jitter_percent` of it, drawn from a hash of `now` and `salt`.
    fn jittered(&self, full: Duration, salt: u64, now: Instant) -> Duration {
        let nanos = u64::try_from(full.as_nanos()).unwrap_or(u64::MAX);
        let span = u128::from(nanos) * u128::from(self.jitter_percent.min(100)) / 100;
        let draw = mix(now.as_nanos() ^ salt);
        // `draw / 2^64` of the span, in 0..=span.
        let off = (u128::from(draw) * (span + 1)) >> 64;
        Duration::from_nanos(nanos - off as u64)
    }
}

/// Keeps a probe's draws apart from a retry's at the same instant.
const PROBE_SALT: u64 = 0x7072_6f62_6500_0000;

/// A 64-bit finalizer (SplitMix64's): every input bit moves every output bit.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How many times in a row an operation failed, which sets how long its next retry waits, and
/// when it last failed.
#[derive(Default)]
pub(crate) struct Backoff {
    failures: u32,
    failed_at: Instant,
}

impl Backoff {
    /// Counts a failure at `now`; returns when the operation may be tried again.
    pub(crate) fn failed(&mut self, now: Instant, policy: RetryPolicy) -> Instant {
        let delay = policy.delay(self.failures, now);
        self.failures = self.failures.saturating_add(1);
        self.failed_at = now;
        now.saturating_add(delay)
    }

    /// Storage answered (this operation or any other): the next failure waits the first delay
    /// again. Returns the latest the retry set by the last failure may still wait for: one
    /// first delay after that failure (which is not after the answer, and is already past if
    /// the answer came later; the core keeps no clock of its own, and needs none here).
    pub(crate) fn succeeded(&mut self, policy: RetryPolicy) -> Instant {
        self.failures = 0;
        self.failed_at.saturating_add(policy.first)
    }
}

/// The probe: while a retry waits longer than the first delay and nothing else outstanding
/// would answer first, the sequencer asks storage for its stored offset (the cheapest read
/// there is) at the first delay's rate, so that it learns at once when storage is back.
#[derive(Default)]
pub(crate) struct Probe {
    /// The probe handed out and not yet reported.
    pub(crate) in_flight: Option<Ticket>,
    /// Probes handed out so far (a salt for their jitter).
    pub(crate) sent: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(jitter_percent: u8) -> RetryPolicy {
        RetryPolicy {
            first: Duration::from_millis(100),
            max: Duration::from_millis(1600),
            jitter_percent,
        }
    }

    fn ms(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }

    #[test]
    fn a_success_resets_the_count_and_bounds_the_retry_to_a_first_delay_after_its_failure() {
        let mut b = Backoff::default();
        assert_eq!(b.failed(ms(0), policy(0)), ms(100));
        assert_eq!(b.failed(ms(100), policy(0)), ms(300));
        assert_eq!(b.failed(ms(300), policy(0)), ms(700));
        assert_eq!(
            b.succeeded(policy(0)),
            ms(400),
            "one first delay after the last failure"
        );
        assert_eq!(
            b.succeeded(policy(0)),
            ms(400),
            "a second answer changes nothing"
        );
        assert_eq!(
            b.failed(ms(900), policy(0)),
            ms(1000),
            "the first delay again"
        );
    }

    #[test]
    fn probe_delays_are_the_first_delay_less_jitter_drawn_per_probe() {
        assert_eq!(policy(0).probe_delay(7, ms(5)), Duration::from_millis(100));
        let p = policy(50);
        let delays: Vec<Duration> = (0..16).map(|n| p.probe_delay(n, ms(5))).collect();
        assert!(
            delays
                .iter()
                .all(|d| (Duration::from_millis(50)..=Duration::from_millis(100)).contains(d)),
            "{delays:?}"
        );
        assert!(
            delays.windows(2).any(|w| w[0] != w[1]),
            "probes at one instant draw apart: {delays:?}"
        );
        assert_eq!(
            p.probe_delay(3, ms(5)),
            p.probe_delay(3, ms(5)),
            "deterministic"
        );
    }
}
