//! The workspace kinds of the params, laid out for the lookups a transaction makes: each
//! kind's sequences with their initial values, sorted, found by kind with a binary search.

use hashbrown::HashMap;

use crate::types::{Number, SeqId, WsKind};

/// The sequences of one workspace kind with their initial values, sorted by sequence.
pub(crate) struct KindSeqs(Box<[(SeqId, Number)]>);

impl KindSeqs {
    /// The initial value of `seq`, if the kind has it.
    pub(crate) fn initial(&self, seq: SeqId) -> Option<Number> {
        self.0.iter().find(|(s, _)| *s == seq).map(|(_, i)| *i)
    }

    /// Every sequence with its initial value, sorted by sequence.
    #[inline]
    pub(crate) fn all(&self) -> &[(SeqId, Number)] {
        &self.0
    }
}

/// The kinds of the params, sorted: a platform has a handful, so a binary search (one or two
/// comparisons) beats hashing the kind on every `start`.
pub(crate) struct Kinds(Box<[(WsKind, KindSeqs)]>);

impl Kinds {
    /// The kinds of `seq_types` (the params' kinds, each with its sequences and their initial
    /// values).
    pub(crate) fn new(seq_types: &HashMap<WsKind, HashMap<SeqId, Number>>) -> Self {
        let mut kinds: Vec<(WsKind, KindSeqs)> = seq_types
            .iter()
            .map(|(&kind, seqs)| {
                let mut list: Vec<(SeqId, Number)> = seqs.iter().map(|(&s, &i)| (s, i)).collect();
                list.sort_unstable();
                (kind, KindSeqs(list.into_boxed_slice()))
            })
            .collect();
        kinds.sort_unstable_by_key(|(kind, _)| *kind);
        Self(kinds.into_boxed_slice())
    }

    /// The sequences of `kind`, if the params define it.
    #[inline]
    pub(crate) fn get(&self, kind: WsKind) -> Option<&KindSeqs> {
        self.0
            .binary_search_by_key(&kind, |(k, _)| *k)
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// How many sequences the widest kind has.
    pub(crate) fn widest(&self) -> usize {
        self.0.iter().map(|(_, s)| s.0.len()).max().unwrap_or(0)
    }
}
