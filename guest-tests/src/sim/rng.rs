//! The simulator's only source of randomness: the project's seeded generator
//! ([`sequencer::testkit::Rng`], SplitMix64), so that a seed alone determines a whole run.

pub use sequencer::testkit::Rng;
