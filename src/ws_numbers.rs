//! The last numbers of one workspace's sequences, kept together because a transaction uses
//! them together.

use crate::types::{Number, SeqId};

/// How many sequences a workspace keeps without a heap allocation: a kind has a handful.
const INLINE: usize = 4;

/// Last number per sequence of one workspace. Small (a kind has a handful of sequences), so a
/// linear search beats any map; the first [`INLINE`] live inline, so the cache and the
/// unflushed values allocate nothing per workspace for a typical kind.
#[derive(Clone, Debug, Default)]
pub(crate) struct WsNumbers {
    inline: [(SeqId, Number); INLINE],
    len: u8,
    more: Vec<(SeqId, Number)>,
}

impl WsNumbers {
    #[inline]
    fn inline(&self) -> &[(SeqId, Number)] {
        &self.inline[..usize::from(self.len)]
    }

    /// The last number of `seq`, if known.
    #[inline]
    pub(crate) fn get(&self, seq: SeqId) -> Option<Number> {
        self.inline()
            .iter()
            .chain(&self.more)
            .find(|(s, _)| *s == seq)
            .map(|(_, n)| *n)
    }

    /// [`get`](Self::get), looking at position `guess` first: callers walk a kind's sequences
    /// in the order they were recorded, so the guess is usually right and no search runs.
    #[inline]
    pub(crate) fn get_at(&self, guess: usize, seq: SeqId) -> Option<Number> {
        match self.inline().get(guess) {
            Some(&(s, n)) if s == seq => Some(n),
            _ => self.get(seq),
        }
    }

    /// The first numbers held, if they are those of `seqs`' sequences in the same order (as
    /// a workspace's numbers cached for its kind are): one pass instead of a search per
    /// sequence.
    #[inline(always)]
    pub(crate) fn in_order_of<T>(&self, seqs: &[(SeqId, T)]) -> Option<&[(SeqId, Number)]> {
        let held = self.inline().get(..seqs.len())?;
        held.iter()
            .zip(seqs)
            .all(|(h, s)| h.0 == s.0)
            .then_some(held)
    }

    /// [`raise`](Self::raise), looking at position `*cursor` first, then moving the cursor one
    /// on: raising values in the order they were recorded needs no search.
    #[inline(always)]
    pub(crate) fn raise_next(&mut self, cursor: &mut usize, seq: SeqId, value: Number) -> bool {
        let at = *cursor;
        *cursor += 1;
        if at < usize::from(self.len) && self.inline[at].0 == seq {
            let n = &mut self.inline[at].1;
            *n = (*n).max(value);
            return false;
        }
        self.raise(seq, value)
    }

    /// [`raise_next`](Self::raise_next) for each of `values` in turn; how many sequences were
    /// new.
    #[inline]
    pub(crate) fn raise_all(&mut self, values: impl Iterator<Item = (SeqId, Number)>) -> usize {
        let mut cursor = 0;
        values
            .filter(|&(seq, value)| self.raise_next(&mut cursor, seq, value))
            .count()
    }

    /// Records `value` for `seq` unless a larger number is known; true if `seq` was new.
    #[inline(never)]
    pub(crate) fn raise(&mut self, seq: SeqId, value: Number) -> bool {
        let len = usize::from(self.len);
        match self.inline[..len]
            .iter_mut()
            .chain(&mut self.more)
            .find(|(s, _)| *s == seq)
        {
            Some((_, n)) => {
                *n = (*n).max(value);
                false
            }
            None => {
                if len < INLINE {
                    self.inline[len] = (seq, value);
                    self.len += 1;
                } else {
                    self.more.push((seq, value));
                }
                true
            }
        }
    }

    /// How many sequences have a number.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        usize::from(self.len) + self.more.len()
    }

    /// Every (sequence, last number) pair.
    #[inline]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (SeqId, Number)> + '_ {
        self.inline().iter().chain(&self.more).copied()
    }
}

impl PartialEq for WsNumbers {
    fn eq(&self, other: &Self) -> bool {
        self.inline() == other.inline() && self.more == other.more
    }
}

impl Eq for WsNumbers {}

#[cfg(test)]
mod tests {
    use super::WsNumbers;

    #[test]
    fn inline_then_spilled_sequences_are_all_found_and_raised() {
        let mut w = WsNumbers::default();
        for seq in 1..=7u16 {
            assert!(w.raise(seq, u64::from(seq) * 10));
        }
        assert_eq!(w.len(), 7);
        for seq in 1..=7u16 {
            assert!(!w.raise(seq, 1), "a smaller value never lowers a number");
            assert_eq!(w.get(seq), Some(u64::from(seq) * 10));
            assert!(!w.raise(seq, 1000 + u64::from(seq)));
            assert_eq!(w.get(seq), Some(1000 + u64::from(seq)));
        }
        assert_eq!(w.get(8), None);
        let all: Vec<_> = w.iter().map(|(s, _)| s).collect();
        assert_eq!(all, [1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn a_wrong_guess_finds_the_sequence_all_the_same() {
        let mut w = WsNumbers::default();
        let mut cursor = 0;
        for seq in [3u16, 1, 2] {
            assert!(w.raise_next(&mut cursor, seq, 10));
        }
        // In order: every guess right. Out of order and spilled: found by search.
        let mut cursor = 0;
        for seq in [3u16, 1, 2] {
            assert!(!w.raise_next(&mut cursor, seq, 20));
        }
        let mut cursor = 0;
        for seq in [2u16, 9, 3, 8, 7, 1] {
            w.raise_next(&mut cursor, seq, 30);
        }
        let all: Vec<_> = w.iter().collect();
        assert_eq!(
            all,
            [(3, 30), (1, 30), (2, 30), (9, 30), (8, 30), (7, 30)],
            "each sequence once, raised"
        );
        for (guess, seq) in [(0, 3u16), (0, 7), (5, 7), (2, 1), (9, 2), (3, 4)] {
            assert_eq!(w.get_at(guess, seq), w.get(seq));
        }
    }

    #[test]
    fn numbers_in_a_kinds_order_are_found_only_when_every_place_matches() {
        let mut w = WsNumbers::default();
        for (seq, n) in [(1u16, 10), (2, 20), (3, 30)] {
            w.raise(seq, n);
        }
        let kind = |seqs: &[u16]| seqs.iter().map(|&s| (s, 1u64)).collect::<Vec<_>>();
        assert_eq!(
            w.in_order_of(&kind(&[1, 2, 3])),
            Some(&[(1, 10), (2, 20), (3, 30)][..])
        );
        assert_eq!(w.in_order_of(&kind(&[1, 2])), Some(&[(1, 10), (2, 20)][..]));
        assert_eq!(w.in_order_of(&kind(&[2, 1, 3])), None, "another order");
        assert_eq!(w.in_order_of(&kind(&[1, 2, 3, 4])), None, "one not held");
        for seq in 4..=6u16 {
            w.raise(seq, 0);
        }
        assert_eq!(
            w.in_order_of(&kind(&[1, 2, 3, 4, 5])),
            None,
            "past the inline places: searched as before"
        );
    }
}
