//! The options of one run, drawn from its seed before the first step, as TigerBeetle's VOPR
//! draws its options: the sequencer's limits and params, and the rate of every fault the
//! simulator injects. Each seed so runs its own mix (some seeds never see a failed read, others
//! see one in six), and a failing seed prints its options beside the replay command.
//!
//! The options come first out of the seed's generator and the run continues from the same
//! generator, so the seed alone still determines the whole run.

use core::fmt;
use core::ops::RangeInclusive;

use sequencer_host::runtime::GuestParams;
use sequencer_host::runtime::bindings::sequencer::plugin::types::KindSequences;

use super::rng::Rng;

/// One millisecond, in the simulated clock's nanoseconds.
pub(crate) const MS: u64 = 1_000_000;
/// One hour, in nanoseconds.
pub(crate) const HOUR: u64 = 3_600_000 * MS;

/// The sequences of workspace kind 1: (sequence, initial value).
pub(crate) const KIND_1: &[(u16, u64)] = &[(1, 1), (2, 50), (3, 7)];
/// The sequences of workspace kind 2; sequence 9 starts next to the end of the numbers, so
/// transactions run into `sequence-exhausted`.
pub(crate) const KIND_2: &[(u16, u64)] = &[(1, 1), (9, u64::MAX - 6)];

/// The sequences of workspace kind `kind` (1 or 2).
pub(crate) fn kind_seqs(kind: u16) -> &'static [(u16, u64)] {
    if kind == 1 { KIND_1 } else { KIND_2 }
}

/// The limits a run's sequencer and storage work under, drawn per seed so that volume covers
/// tight and roomy configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// `max-unflushed-values` (1 to 500).
    pub max_unflushed: usize,
    /// `lru-cache-size` (3 to 64).
    pub lru: usize,
    /// The most events a PLog read returns (1 to 6).
    pub page_events: u64,
    /// How many workspaces the command processor uses (1 to 20).
    pub workspaces: u64,
}

/// The chance of every fault, in percent, and the ranges the faults draw from. A chance is
/// drawn per seed from 0 to twice a middle value (so the average seed sees the middle value, and
/// some see none of that fault); a weight is a scheduler step's share beside the workload's
/// steps (a command weighs 300).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRates {
    /// A storage read (the stored next offset, a PLog page) fails (middle 8).
    pub read_fails_percent: u64,
    /// A write fails before its first half lands (middle 6).
    pub write_fails_percent: u64,
    /// A write whose first half landed fails before its second (middle 4).
    pub write_fails_halfway_percent: u64,
    /// A write that landed is reported failed: its acknowledgement is lost (middle 3).
    pub write_ack_lost_percent: u64,
    /// A storage operation waits [`Self::short_latency_ns`] before storage acts on it
    /// (middle 25).
    pub short_latency_percent: u64,
    /// A storage operation waits [`Self::long_latency_ns`] (middle 5; counted in the stats).
    pub long_latency_percent: u64,
    /// A short latency, in nanoseconds (from 1 to 1–10 ms).
    pub short_latency_ns: RangeInclusive<u64>,
    /// A long latency, in nanoseconds (from 100 ms to 0.5–4 s).
    pub long_latency_ns: RangeInclusive<u64>,
    /// `read-numbers` and `read-numbers-many` fail during a start (middle 3).
    pub numbers_read_fails_percent: u64,
    /// Only `read-numbers-many` fails (middle 3).
    pub numbers_many_fails_percent: u64,
    /// `read-numbers-many` answers one number short (middle 2).
    pub numbers_many_short_percent: u64,
    /// The command fails before its events are offered to the PLog, so the transaction
    /// actualizes (middle 3).
    pub command_fails_percent: u64,
    /// An event's PLog append fails without landing (middle 4).
    pub append_fails_percent: u64,
    /// An event's PLog append lands but is reported failed (middle 3).
    pub append_lands_but_fails_percent: u64,
    /// The weight of a crash step (0 to 10).
    pub crash_weight: u64,
    /// The weight of a graceful shutdown step (0 to 2).
    pub shutdown_weight: u64,
    /// The weight of a storage outage step while storage is up (0 to 6).
    pub outage_weight: u64,
    /// The weight of the recovery step while storage is down (20 to 100).
    pub recover_weight: u64,
    /// The weight of a clock jump step (0 to 8).
    pub jump_weight: u64,
    /// A clock jump goes (nearly) to the end of time (middle 5).
    pub jump_to_end_percent: u64,
    /// How far any other jump moves the clock, in nanoseconds (from an hour to 1–30 days).
    pub jump_ns: RangeInclusive<u64>,
}

impl FaultRates {
    /// The rates of one seed, drawn from `rng`.
    pub fn draw(rng: &mut Rng) -> Self {
        // A chance around `middle`: from 0 to twice it.
        let mut around = |middle: u64| rng.range(0, 2 * middle);
        let read_fails_percent = around(8);
        let write_fails_percent = around(6);
        let write_fails_halfway_percent = around(4);
        let write_ack_lost_percent = around(3);
        let short_latency_percent = around(25);
        let long_latency_percent = around(5);
        let numbers_read_fails_percent = around(3);
        let numbers_many_fails_percent = around(3);
        let numbers_many_short_percent = around(2);
        let command_fails_percent = around(3);
        let append_fails_percent = around(4);
        let append_lands_but_fails_percent = around(3);
        let jump_to_end_percent = around(5);
        Self {
            read_fails_percent,
            write_fails_percent,
            write_fails_halfway_percent,
            write_ack_lost_percent,
            short_latency_percent,
            long_latency_percent,
            short_latency_ns: 1..=rng.range(1, 10) * MS,
            long_latency_ns: 100 * MS..=rng.range(500, 4_000) * MS,
            numbers_read_fails_percent,
            numbers_many_fails_percent,
            numbers_many_short_percent,
            command_fails_percent,
            append_fails_percent,
            append_lands_but_fails_percent,
            crash_weight: rng.range(0, 10),
            shutdown_weight: rng.range(0, 2),
            outage_weight: rng.range(0, 6),
            recover_weight: rng.range(20, 100),
            jump_weight: rng.range(0, 8),
            jump_to_end_percent,
            jump_ns: HOUR..=rng.range(24, 720) * HOUR,
        }
    }
}

/// Everything a seed decides before its first step.
#[derive(Clone, Debug)]
pub struct Options {
    /// The limits.
    pub shape: Shape,
    /// The params the sequencer is created with (the shape's limits, delays and jitter).
    pub params: GuestParams,
    /// The rate of every fault.
    pub faults: FaultRates,
}

impl Options {
    /// The options of `seed`, with the generator the run goes on drawing from.
    pub fn draw(seed: u64) -> (Self, Rng) {
        let mut rng = Rng::new(seed);
        let shape = Shape {
            max_unflushed: rng.pick(&[1, 2, 4, 4, 8, 500]),
            lru: rng.pick(&[3, 4, 8, 8, 64]),
            page_events: rng.range(1, 6),
            workspaces: rng.pick(&[1, 3, 6, 6, 20]),
        };
        let retry = rng.range(1, 10) * MS;
        let params = GuestParams {
            kinds: [1u16, 2]
                .iter()
                .map(|&kind| KindSequences {
                    kind,
                    sequences: kind_seqs(kind).to_vec(),
                })
                .collect(),
            max_unflushed_values: shape.max_unflushed as u32,
            lru_cache_size: shape.lru as u32,
            batcher_delay_ns: rng.range(1, 3) * MS,
            retry_delay_ns: retry,
            max_retry_delay_ns: retry * rng.pick(&[1, 8]),
            // Derived from the seed, not drawn.
            retry_jitter_percent: [0, 50, 100][(seed % 3) as usize],
        };
        let faults = FaultRates::draw(&mut rng);
        (
            Self {
                shape,
                params,
                faults,
            },
            rng,
        )
    }

    /// The options of `seed` (as [`Self::draw`] gives them).
    pub fn of_seed(seed: u64) -> Self {
        Self::draw(seed).0
    }
}

impl fmt::Display for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.params;
        writeln!(
            f,
            "{:?}; batcher delay {} ns, retry delay {}..={} ns, jitter {}%",
            self.shape,
            p.batcher_delay_ns,
            p.retry_delay_ns,
            p.max_retry_delay_ns,
            p.retry_jitter_percent
        )?;
        write!(f, "{:?}", self.faults)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_the_same_options_every_time() {
        for seed in 0..50 {
            let (a, mut ra) = Options::draw(seed);
            let (b, mut rb) = Options::draw(seed);
            assert_eq!((a.shape, &a.faults), (b.shape, &b.faults));
            assert_eq!(
                ra.next_u64(),
                rb.next_u64(),
                "the run goes on from the same draw"
            );
        }
    }

    #[test]
    fn seeds_draw_different_fault_rates() {
        let rates: Vec<FaultRates> = (0..20).map(|s| Options::of_seed(s).faults).collect();
        assert!(rates.iter().any(|r| r != &rates[0]));
        assert!(rates.iter().all(|r| r.recover_weight >= 20));
    }
}
