//! The host's seeded random numbers ([`Rng`]): the workload's draws and the jitter of waits
//! (placement rounds, a watch's reconnects). Below everything that draws.

/// SplitMix64's increment: the golden ratio as a 64-bit fraction.
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
/// What a seed is mixed with before the first draw (as the core's testkit generator does).
const SEED_MIX: u64 = 0x5851_f42d_4c95_7f2d;

/// A small seeded random number generator (SplitMix64, the same stream as the core's
/// `sequencer::testkit::Rng` for a seed): fast, sound enough for workloads and jitter, and
/// stable across platforms and releases, so a seed alone determines a workload.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            state: seed ^ SEED_MIX,
        }
    }

    /// The next 64 random bits: the state stepped by the golden ratio, then mixed.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        let mixed = (self.state ^ (self.state >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    /// A number in `0..n` by multiply-shift (unbiased enough for jitter and workloads, and
    /// free of division); `0`, with no draw, when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        match n {
            0 => 0,
            n => ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64,
        }
    }

    /// A number in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn the_stream_is_the_core_testkits_for_the_same_seed() {
        let mut ours = Rng::new(42);
        let mut core = sequencer::testkit::Rng::new(42);
        for n in 0..64 {
            assert_eq!(ours.below(n), core.below(n));
            assert_eq!(ours.unit(), core.unit());
        }
    }
}
