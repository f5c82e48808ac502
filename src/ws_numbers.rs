//! The last numbers of one workspace's sequences, kept together because a transaction uses
//! them together.

use crate::types::{Number, SeqId};

/// Last number per sequence of one workspace. Small (a kind has a handful of sequences), so a
/// vector searched linearly beats any map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WsNumbers(Vec<(SeqId, Number)>);

impl WsNumbers {
    /// The last number of `seq`, if known.
    #[inline]
    pub(crate) fn get(&self, seq: SeqId) -> Option<Number> {
        self.0.iter().find(|(s, _)| *s == seq).map(|(_, n)| *n)
    }

    /// Records `value` for `seq` unless a larger number is known; true if `seq` was new.
    #[inline]
    pub(crate) fn raise(&mut self, seq: SeqId, value: Number) -> bool {
        match self.0.iter_mut().find(|(s, _)| *s == seq) {
            Some((_, n)) => {
                *n = (*n).max(value);
                false
            }
            None => {
                self.0.push((seq, value));
                true
            }
        }
    }

    /// How many sequences have a number.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Every (sequence, last number) pair.
    #[inline]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (SeqId, Number)> + '_ {
        self.0.iter().copied()
    }
}
