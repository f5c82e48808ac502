//! Construction parameters, validated once so that nothing later can trip over them.

use core::time::Duration;

use hashbrown::HashMap;

use crate::types::{Number, SeqId, WsKind};

/// Default for [`Params::max_unflushed_values`], as in the original.
pub const DEFAULT_MAX_UNFLUSHED_VALUES: usize = 500;
/// Default for [`Params::lru_cache_size`], as in the original.
pub const DEFAULT_LRU_CACHE_SIZE: usize = 100_000;
/// Default for [`Params::batcher_delay_on_overflow`], as in the original.
pub const DEFAULT_BATCHER_DELAY_ON_OVERFLOW: Duration = Duration::from_millis(5);
/// Default for [`Params::retry_delay`]: the original retries storage errors every 500 ms.
pub const DEFAULT_RETRY_DELAY: Duration = Duration::from_millis(500);
/// Default for [`Params::max_retry_delay`]: consecutive failures double the wait up to 10 s
/// (the original waits a constant 500 ms, so a long outage is retried 20 times a second).
pub const DEFAULT_MAX_RETRY_DELAY: Duration = Duration::from_secs(10);
/// Default for [`Params::retry_jitter_percent`]: each wait is drawn from its upper half, so
/// sequencers that failed together do not retry together.
pub const DEFAULT_RETRY_JITTER_PERCENT: u8 = 50;

/// What a sequencer is built from.
///
/// Build one with [`Params::new`] and the `with_*` methods; [`crate::Sequencer::new`] checks it
/// and refuses an invalid one with a [`ParamsError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// The sequences of each workspace kind, with the first number each one hands out.
    pub seq_types: HashMap<WsKind, HashMap<SeqId, Number>>,
    /// Above this many values waiting to be flushed, `start` says "not now" and replay holds back.
    pub max_unflushed_values: usize,
    /// How many numbers the cache keeps, least recently used first out.
    pub lru_cache_size: usize,
    /// While replay is held back by unflushed values, how often the core asks to be polled again.
    pub batcher_delay_on_overflow: Duration,
    /// The wait after the first failure of a storage operation before it is retried.
    pub retry_delay: Duration,
    /// The longest wait between retries (the cap); each further failure doubles the wait up
    /// to this. Equal to `retry_delay` means a constant delay, as in the original.
    pub max_retry_delay: Duration,
    /// How much of each retry wait is drawn away at random, in percent (0..=100): a wait `d`
    /// becomes one in `[d - d * percent / 100, d]`. The draw is a hash of the failure's time
    /// and count, so the same inputs always give the same wait.
    pub retry_jitter_percent: u8,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            seq_types: HashMap::new(),
            max_unflushed_values: DEFAULT_MAX_UNFLUSHED_VALUES,
            lru_cache_size: DEFAULT_LRU_CACHE_SIZE,
            batcher_delay_on_overflow: DEFAULT_BATCHER_DELAY_ON_OVERFLOW,
            retry_delay: DEFAULT_RETRY_DELAY,
            max_retry_delay: DEFAULT_MAX_RETRY_DELAY,
            retry_jitter_percent: DEFAULT_RETRY_JITTER_PERCENT,
        }
    }
}

impl Params {
    /// Default limits and no sequences yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds sequence `seq` to workspace kind `kind`, handing out `initial` first.
    pub fn with_seq(mut self, kind: WsKind, seq: SeqId, initial: Number) -> Self {
        self.seq_types.entry(kind).or_default().insert(seq, initial);
        self
    }

    /// Sets [`Params::max_unflushed_values`].
    pub fn with_max_unflushed_values(mut self, n: usize) -> Self {
        self.max_unflushed_values = n;
        self
    }

    /// Sets [`Params::lru_cache_size`].
    pub fn with_lru_cache_size(mut self, n: usize) -> Self {
        self.lru_cache_size = n;
        self
    }

    /// Sets [`Params::batcher_delay_on_overflow`].
    pub fn with_batcher_delay_on_overflow(mut self, d: Duration) -> Self {
        self.batcher_delay_on_overflow = d;
        self
    }

    /// Sets the retry delays: `first` after the first failure, growing by doubling up to `max`.
    pub fn with_retry_delay(mut self, first: Duration, max: Duration) -> Self {
        self.retry_delay = first;
        self.max_retry_delay = max;
        self
    }

    /// Sets [`Params::retry_jitter_percent`].
    pub fn with_retry_jitter_percent(mut self, percent: u8) -> Self {
        self.retry_jitter_percent = percent;
        self
    }

    /// Checks every rule a sequencer relies on.
    pub fn validate(&self) -> Result<(), ParamsError> {
        if self.seq_types.is_empty() {
            return Err(ParamsError::NoWorkspaceKinds);
        }
        let mut widest = 0;
        for (&kind, seqs) in &self.seq_types {
            if seqs.is_empty() {
                return Err(ParamsError::KindWithoutSequences { kind });
            }
            if let Some((&seq, _)) = seqs.iter().find(|(_, initial)| **initial == 0) {
                return Err(ParamsError::ZeroInitialValue { kind, seq });
            }
            widest = widest.max(seqs.len());
        }
        if self.max_unflushed_values == 0 {
            return Err(ParamsError::ZeroMaxUnflushedValues);
        }
        if self.lru_cache_size < widest {
            return Err(ParamsError::LruSmallerThanKind {
                lru_cache_size: self.lru_cache_size,
                sequences: widest,
            });
        }
        if self.max_retry_delay < self.retry_delay {
            return Err(ParamsError::RetryDelaysReversed);
        }
        if self.retry_jitter_percent > 100 {
            return Err(ParamsError::JitterAbove100 {
                percent: self.retry_jitter_percent,
            });
        }
        Ok(())
    }
}

/// The limits as the contract carries them (the `params` record of `wit/sequencer.wit`):
/// counts as `u32`, durations in nanoseconds.
///
/// Every front-end converts its params record through this type,
/// [`Params::from_contract`], [`Params::contract_limits`] and [`Params::contract_kinds`], so
/// the rules of the conversion (counts and durations saturate, a repeated kind merges, a kind
/// without sequences is kept so that validation refuses it, kinds and sequences go out sorted)
/// are written once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContractLimits {
    /// [`Params::max_unflushed_values`].
    pub max_unflushed_values: u32,
    /// [`Params::lru_cache_size`].
    pub lru_cache_size: u32,
    /// [`Params::batcher_delay_on_overflow`], in nanoseconds.
    pub batcher_delay_ns: u64,
    /// [`Params::retry_delay`], in nanoseconds.
    pub retry_delay_ns: u64,
    /// [`Params::max_retry_delay`], in nanoseconds.
    pub max_retry_delay_ns: u64,
    /// [`Params::retry_jitter_percent`].
    pub retry_jitter_percent: u8,
}

impl Params {
    /// Params from the contract's record: its limits and, per kind, its sequences with their
    /// initial values. A kind may repeat (its sequences are merged); a kind without sequences
    /// is kept, so that [`Params::validate`] refuses it rather than it vanishing.
    pub fn from_contract<'a>(
        limits: ContractLimits, kinds: impl IntoIterator<Item = (WsKind, &'a [(SeqId, Number)])>,
    ) -> Self {
        let mut params = Params::new()
            .with_max_unflushed_values(limits.max_unflushed_values as usize)
            .with_lru_cache_size(limits.lru_cache_size as usize)
            .with_batcher_delay_on_overflow(Duration::from_nanos(limits.batcher_delay_ns))
            .with_retry_delay(
                Duration::from_nanos(limits.retry_delay_ns),
                Duration::from_nanos(limits.max_retry_delay_ns),
            )
            .with_retry_jitter_percent(limits.retry_jitter_percent);
        for (kind, sequences) in kinds {
            let seqs = params.seq_types.entry(kind).or_default();
            seqs.extend(sequences.iter().copied());
        }
        params
    }

    /// The limits as the contract carries them; a count or duration too large for its field
    /// saturates.
    pub fn contract_limits(&self) -> ContractLimits {
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        ContractLimits {
            max_unflushed_values: u32::try_from(self.max_unflushed_values).unwrap_or(u32::MAX),
            lru_cache_size: u32::try_from(self.lru_cache_size).unwrap_or(u32::MAX),
            batcher_delay_ns: nanos(self.batcher_delay_on_overflow),
            retry_delay_ns: nanos(self.retry_delay),
            max_retry_delay_ns: nanos(self.max_retry_delay),
            retry_jitter_percent: self.retry_jitter_percent,
        }
    }

    /// Each kind with its sequences and initial values, kinds and sequences sorted, so a
    /// record built from the same params is always the same.
    pub fn contract_kinds(&self) -> Vec<(WsKind, Vec<(SeqId, Number)>)> {
        let mut kinds: Vec<(WsKind, Vec<(SeqId, Number)>)> = self
            .seq_types
            .iter()
            .map(|(&kind, seqs)| {
                let mut sequences: Vec<(SeqId, Number)> =
                    seqs.iter().map(|(&s, &i)| (s, i)).collect();
                sequences.sort_unstable();
                (kind, sequences)
            })
            .collect();
        kinds.sort_unstable_by_key(|&(kind, _)| kind);
        kinds
    }
}

/// Why [`Params`] were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamsError {
    /// No workspace kind is defined, so no transaction could ever start.
    NoWorkspaceKinds,
    /// A workspace kind has no sequences.
    KindWithoutSequences {
        /// The kind.
        kind: WsKind,
    },
    /// A sequence's initial value is 0; numbers start at 1 or above.
    ZeroInitialValue {
        /// The kind the sequence belongs to.
        kind: WsKind,
        /// The sequence.
        seq: SeqId,
    },
    /// `max_unflushed_values` is 0, which would hold replay back for ever.
    ZeroMaxUnflushedValues,
    /// The cache cannot hold every sequence of the widest kind, which a transaction needs at once.
    LruSmallerThanKind {
        /// The configured cache size.
        lru_cache_size: usize,
        /// The number of sequences of the widest kind.
        sequences: usize,
    },
    /// `max_retry_delay` is shorter than `retry_delay`.
    RetryDelaysReversed,
    /// `retry_jitter_percent` is above 100.
    JitterAbove100 {
        /// The percent given.
        percent: u8,
    },
}

impl core::fmt::Display for ParamsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::NoWorkspaceKinds => write!(f, "params define no workspace kind"),
            Self::KindWithoutSequences { kind } => {
                write!(f, "workspace kind {kind} has no sequences")
            }
            Self::ZeroInitialValue { kind, seq } => write!(
                f,
                "sequence {seq} of workspace kind {kind} has initial value 0 (must be at least 1)"
            ),
            Self::ZeroMaxUnflushedValues => write!(f, "max unflushed values must be at least 1"),
            Self::LruSmallerThanKind {
                lru_cache_size,
                sequences,
            } => write!(
                f,
                "LRU cache size {lru_cache_size} is smaller than the {sequences} sequences of the widest workspace kind"
            ),
            Self::RetryDelaysReversed => {
                write!(f, "max retry delay is shorter than the first retry delay")
            }
            Self::JitterAbove100 { percent } => {
                write!(f, "retry jitter is {percent} percent (at most 100)")
            }
        }
    }
}

impl core::error::Error for ParamsError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ContractLimits {
        ContractLimits {
            max_unflushed_values: 7,
            lru_cache_size: 9,
            batcher_delay_ns: 1_000,
            retry_delay_ns: 2_000,
            max_retry_delay_ns: 8_000,
            retry_jitter_percent: 25,
        }
    }

    #[test]
    fn a_repeated_kind_merges_and_an_empty_kind_is_kept_for_validation_to_refuse() {
        let merged = Params::from_contract(limits(), [(1, &[(1, 5)][..]), (1, &[(2, 6)][..])]);
        assert_eq!(merged.contract_kinds(), vec![(1, vec![(1, 5), (2, 6)])]);
        let empty = Params::from_contract(limits(), [(1, &[(1, 5)][..]), (2, &[][..])]);
        assert_eq!(
            empty.validate(),
            Err(ParamsError::KindWithoutSequences { kind: 2 })
        );
    }

    #[test]
    fn params_survive_the_contract_both_ways_sorted() {
        let params =
            Params::from_contract(limits(), [(3, &[(2, 1), (1, 1)][..]), (0, &[(9, 4)][..])]);
        assert_eq!(params.contract_limits(), limits());
        assert_eq!(params.retry_delay, Duration::from_micros(2));
        assert_eq!(
            params.contract_kinds(),
            vec![(0, vec![(9, 4)]), (3, vec![(1, 1), (2, 1)])]
        );
    }

    #[test]
    fn counts_and_durations_too_large_for_the_contract_saturate() {
        let params = Params::new()
            .with_max_unflushed_values(usize::MAX)
            .with_retry_delay(Duration::from_secs(1), Duration::MAX);
        let l = params.contract_limits();
        assert_eq!(l.max_unflushed_values, u32::MAX);
        assert_eq!(l.max_retry_delay_ns, u64::MAX);
    }
}
