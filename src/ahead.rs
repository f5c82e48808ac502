//! Numbers handed out ahead: the bookkeeping of a caller that hands out `next` numbers without
//! a call into the sequencer.
//!
//! Where a call costs a boundary crossing (the component's per-step path: `start`, a `next` per
//! number, `flush`), the host asks at `start` for the number each of up to four sequences would
//! get from its first `next` ([`Sequencer::peek_nth`](crate::Sequencer::peek_nth)), hands
//! those out itself, and reports the ones it handed out with its next call into the sequencer,
//! which takes them as `next` would have ([`Sequencer::next_each`](crate::Sequencer::next_each)).
//! The sequencer decides every number; this type only remembers which of the numbers it gave
//! were handed out, so every front-end keeps that the same way:
//!
//! - a number ahead is handed out at most once, for the `next` of its sequence it was asked
//!   for (a sequence asked about twice has the numbers of its first two `next`s);
//! - a `next` with no number ahead goes to the sequencer, with the ones handed out before it
//!   ([`report_with_next`](Ahead::report_with_next)); the other numbers ahead stay good;
//! - any other call first reports what was handed out and ends the numbers ahead
//!   ([`end`](Ahead::end));
//! - the sequences to ask about at a start are the ones the last transaction's first four
//!   `next`s asked for, in order, repeats included ([`question`](Ahead::question));
//! - a `flush` of a transaction the last start opened (no call since could have ended it)
//!   needs no call either ([`defer_flush`](Ahead::defer_flush)): it is reported, with what
//!   was handed out, by the caller's next call, the next `start` above all
//!   (`take-flush-start-ahead`): one call per transaction. The flush cannot be refused there
//!   (the transaction is open) and leaves the sequencer [`FLUSHED`]; its event is in the PLog
//!   already, so a flush lost with an instance (a trap) is recovered by actualization.
//!
//! A mechanism for speed (docs/ARCHITECTURE.md, "What exists only for speed"): it keeps the
//! per-step path at one crossing per transaction, costs this module and seven WIT functions, and
//! bought per step W1 2,579–3,150 → 1,458–1,751 ns and W2 2,604–2,949 → 1,494–1,643 (602ce3e).
//! Remove it when a crossing costs under a tenth of a transaction.

use crate::sequencer::Status;
use crate::types::{Number, SeqId};

/// How many sequences a start asks ahead about (a `seq-quad`).
pub const AHEAD_SEQS: usize = 4;

/// Sequences handed out ahead, to report to the sequencer: the first `len` of `seqs`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// The sequences, in the order of the question.
    pub seqs: [SeqId; AHEAD_SEQS],
    /// How many of `seqs` count.
    pub len: u8,
}

impl Taken {
    /// The sequences as a slice.
    pub fn as_slice(&self) -> &[SeqId] {
        &self.seqs[..usize::from(self.len)]
    }

    /// True if nothing was handed out.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The status a deferred flush leaves (see [`Ahead::defer_flush`]): the flush of an open
/// transaction always leaves the sequencer ready, its phase having been ready for the start to
/// open it and the flush ending the transaction with its staged events.
pub const FLUSHED: Status = Status::Ready;

/// What a caller reports to the sequencer before a call other than `next`
/// ([`Ahead::end`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// Nothing was handed out and no flush waits.
    Nothing,
    /// Numbers handed out, for `take`.
    Take(Taken),
    /// A deferred flush, with the numbers handed out before it, for `take-flush` (or
    /// `take-flush-start-ahead`).
    Flush(Taken),
}

/// The numbers a start gave ahead and which of them were handed out. See the module
/// documentation.
#[derive(Clone, Debug, Default)]
pub struct Ahead {
    /// The sequences asked about at the last start (`len` of them).
    seqs: [SeqId; AHEAD_SEQS],
    len: u8,
    /// `numbers[i]`: what the `next(seqs[i])` it was asked for gets; 0 for none.
    numbers: [Number; AHEAD_SEQS],
    /// Bit `i`: `numbers[i]` was handed out and is not reported yet.
    taken: u8,
    /// Bit `i`: `numbers[i]` is no longer good (handed out, or its sequence went to the
    /// sequencer).
    spent: u8,
    /// The sequences of this transaction's first four `next`s, in order.
    asked: [SeqId; AHEAD_SEQS],
    asked_len: u8,
    /// The last start opened a transaction and no call since could have ended it.
    open: bool,
    /// A flush the caller deferred, with what was handed out before it.
    flush: Option<Taken>,
}

impl Ahead {
    /// Nothing ahead, nothing learned.
    pub const fn new() -> Self {
        Self {
            seqs: [0; AHEAD_SEQS],
            len: 0,
            numbers: [0; AHEAD_SEQS],
            taken: 0,
            spent: 0,
            asked: [0; AHEAD_SEQS],
            asked_len: 0,
            open: false,
            flush: None,
        }
    }

    /// The sequences to ask ahead about at the next start: those of the last transaction's
    /// first four `next`s (in order, repeats included), else those asked about last time.
    pub fn question(&self) -> &[SeqId] {
        if self.asked_len > 0 {
            &self.asked[..usize::from(self.asked_len)]
        } else {
            &self.seqs[..usize::from(self.len)]
        }
    }

    /// A start was asked about [`question`](Self::question) and answered: `numbers[i]` is what
    /// the first `next` of its `i`-th sequence gets, 0 for none (all 0 if it did not start);
    /// `open`: it opened a transaction. Anything ahead before is forgotten: end it first.
    pub fn started(&mut self, numbers: [Number; AHEAD_SEQS], open: bool) {
        self.open = open;
        if self.asked_len > 0 {
            self.seqs = self.asked;
            self.len = self.asked_len;
        }
        self.numbers = numbers;
        for n in &mut self.numbers[usize::from(self.len)..] {
            *n = 0;
        }
        self.taken = 0;
        self.spent = 0;
        self.asked_len = 0;
    }

    /// `next(seq)` without a call: the first good number ahead for `seq`, if any (it is then
    /// handed out and spent); `None`: ask the sequencer, with
    /// [`report_with_next`](Self::report_with_next).
    #[inline]
    pub fn next(&mut self, seq: SeqId) -> Option<Number> {
        self.learn(seq);
        let spent = self.spent;
        let i = self.seqs[..usize::from(self.len)]
            .iter()
            .enumerate()
            .position(|(i, &s)| s == seq && spent & (1 << i) == 0)?;
        let bit = 1 << i;
        if self.numbers[i] == 0 {
            return None;
        }
        self.spent |= bit;
        self.taken |= bit;
        Some(self.numbers[i])
    }

    /// What to report with a call of `next(seq)` into the sequencer (which asked for it: see
    /// [`next`](Self::next)): the numbers handed out so far. They are reported then, and
    /// `seq`'s numbers ahead, if any, are spent (that `next` takes one of them); the others
    /// stay good.
    pub fn report_with_next(&mut self, seq: SeqId) -> Taken {
        for i in 0..usize::from(self.len) {
            if self.seqs[i] == seq {
                self.spent |= 1 << i;
            }
        }
        self.reported()
    }

    /// What to report before any call other than `next`: a deferred flush with the numbers
    /// handed out before it, else the numbers handed out so far. None is ahead afterwards (that
    /// call may end or change the transaction).
    pub fn end(&mut self) -> Report {
        if let Some(taken) = self.flush.take() {
            return Report::Flush(taken);
        }
        let taken = self.close();
        match taken.is_empty() {
            true => Report::Nothing,
            false => Report::Take(taken),
        }
    }

    /// `flush` without a call, if it can be: true when the last start opened a transaction
    /// and no call since could have ended it. The flush then waits, with the numbers handed
    /// out, for the caller's next call ([`end`](Self::end) gives it as [`Report::Flush`]);
    /// nothing is ahead meanwhile. False: make the call (after [`end`](Self::end)).
    pub fn defer_flush(&mut self) -> bool {
        if !self.open {
            return false;
        }
        self.flush = Some(self.close());
        true
    }

    /// True while a deferred flush waits to be reported.
    pub fn flush_deferred(&self) -> bool {
        self.flush.is_some()
    }

    /// Ends the numbers ahead and the transaction as far as this type knows: what was handed
    /// out, now reported.
    fn close(&mut self) -> Taken {
        let taken = self.reported();
        self.numbers = [0; AHEAD_SEQS];
        self.spent = 0;
        self.open = false;
        taken
    }

    /// The handed-out sequences, in question order, now reported.
    fn reported(&mut self) -> Taken {
        let mut taken = Taken::default();
        for i in 0..usize::from(self.len) {
            if self.taken & (1 << i) != 0 {
                taken.seqs[usize::from(taken.len)] = self.seqs[i];
                taken.len += 1;
            }
        }
        self.taken = 0;
        taken
    }

    fn learn(&mut self, seq: SeqId) {
        if let Some(slot) = self.asked.get_mut(usize::from(self.asked_len)) {
            *slot = seq;
            self.asked_len += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Instant, Params, PlogPage, Sequencer, Start, Work};

    /// A ready sequencer with kind 1's sequences 1, 2, 3 (from 10, 20, 30).
    fn ready() -> Sequencer {
        let params = Params::new()
            .with_seq(1, 1, 10)
            .with_seq(1, 2, 20)
            .with_seq(1, 3, 30);
        let mut s = Sequencer::new(params).unwrap();
        let now = Instant::from_nanos(0);
        let Some(Work::ReadNextOffset { ticket }) = s.poll_work(now) else {
            unreachable!()
        };
        s.complete_next_offset(ticket, 0).unwrap();
        let Some(Work::ReadPlog { ticket, from }) = s.poll_work(now) else {
            unreachable!()
        };
        let page = PlogPage {
            values: &[],
            next: from,
            end: true,
        };
        s.complete_plog_read(ticket, page, now).unwrap();
        s
    }

    fn start(s: &mut Sequencer, ws: u64) {
        match s.start(1, ws).unwrap() {
            Start::Load(read) => {
                let zeros = vec![0; read.seqs.len()];
                assert!(matches!(
                    s.complete_numbers(read.ticket, &zeros),
                    Ok(Start::Started(_))
                ));
            }
            Start::Started(_) => {}
            Start::NotNow(r) => panic!("not now: {r:?}"),
        }
    }

    /// The per-step path as a host with `Ahead` runs it: the numbers `peek_nth` gave are
    /// handed out without a call, the rest go to the sequencer with the report.
    struct AheadCaller {
        s: Sequencer,
        ahead: Ahead,
        /// Calls into the sequencer made by the transaction steps.
        calls: usize,
    }

    impl AheadCaller {
        fn new() -> Self {
            Self {
                s: ready(),
                ahead: Ahead::new(),
                calls: 0,
            }
        }

        fn start(&mut self, ws: u64) {
            let q: Vec<SeqId> = self.ahead.question().to_vec();
            // One call: the deferred flush (if any), then the start.
            self.settle();
            start(&mut self.s, ws);
            self.calls += 1;
            let mut numbers = [0; AHEAD_SEQS];
            for (i, (n, &seq)) in numbers.iter_mut().zip(&q).enumerate() {
                let before = q[..i].iter().filter(|&&s| s == seq).count() as u64;
                *n = self.s.peek_nth(seq, before).unwrap_or(0);
            }
            self.ahead.started(numbers, true);
        }

        fn next(&mut self, seq: SeqId) -> Result<Number, crate::Error> {
            if let Some(n) = self.ahead.next(seq) {
                return Ok(n);
            }
            self.calls += 1;
            let taken = self.ahead.report_with_next(seq);
            self.s.next_each(taken.as_slice()).unwrap();
            self.s.next(seq)
        }

        fn flush(&mut self) {
            assert!(
                self.ahead.defer_flush(),
                "a started transaction's flush waits"
            );
        }

        /// Reports a deferred flush (a host does it with its next call).
        fn settle(&mut self) {
            match self.ahead.end() {
                Report::Flush(taken) => {
                    self.s.next_each(taken.as_slice()).unwrap();
                    self.s.flush().unwrap();
                    assert_eq!(self.s.status(), FLUSHED);
                }
                Report::Take(taken) => panic!("{taken:?} handed out outside a transaction"),
                Report::Nothing => {}
            }
        }
    }

    #[test]
    fn numbers_handed_out_ahead_are_the_ones_next_would_have_handed_out() {
        let mut plain = ready();
        let mut caller = AheadCaller::new();
        // Transactions asking for different sequences, some twice, one unknown.
        let steps: &[&[SeqId]] = &[
            &[1, 2, 3],
            &[1, 2, 3],
            &[3, 1],
            &[1, 1, 2, 2, 3],
            &[],
            &[2, 9, 2],
            &[1, 2, 3],
            &[1, 2, 3],
        ];
        for (i, seqs) in steps.iter().enumerate() {
            let ws = 1 + i as u64 % 3;
            start(&mut plain, ws);
            caller.start(ws);
            for &seq in *seqs {
                assert_eq!(caller.next(seq), plain.next(seq), "tx {i}, seq {seq}");
            }
            plain.flush().unwrap();
            caller.flush();
        }
        // Both sequencers hold the same numbers afterwards.
        caller.settle();
        for ws in 1..=3 {
            start(&mut plain, ws);
            start(&mut caller.s, ws);
            for seq in 1..=3 {
                assert_eq!(caller.s.next(seq), plain.next(seq));
            }
            plain.flush().unwrap();
            caller.s.flush().unwrap();
        }
    }

    #[test]
    fn a_repeated_transaction_takes_one_call_whatever_its_numbers() {
        let mut caller = AheadCaller::new();
        // The first transaction learns the question.
        caller.start(1);
        for seq in [1, 2, 3] {
            caller.next(seq).unwrap();
        }
        caller.flush();
        assert_eq!(caller.calls, 4);
        caller.calls = 0;
        for ws in 1..=10 {
            caller.start(ws);
            for seq in [1, 2, 3] {
                caller.next(seq).unwrap();
            }
            caller.flush();
        }
        assert_eq!(caller.calls, 10);
    }

    #[test]
    fn a_sequence_asked_for_twice_gets_both_numbers_ahead() {
        let mut plain = ready();
        let mut caller = AheadCaller::new();
        for ws in 1..=6 {
            if ws == 2 {
                caller.calls = 0;
            }
            start(&mut plain, ws % 2);
            caller.start(ws % 2);
            for seq in [2, 3, 2, 3] {
                assert_eq!(caller.next(seq), plain.next(seq));
            }
            plain.flush().unwrap();
            caller.flush();
        }
        // Learned from the first transaction: one call each for the next five.
        assert_eq!(caller.calls, 5);
    }

    #[test]
    fn a_number_ahead_is_handed_out_once() {
        let mut a = Ahead::new();
        a.next(5);
        a.end();
        a.started([40, 0, 0, 0], true);
        assert_eq!(a.next(5), Some(40));
        assert_eq!(a.next(5), None);
        assert_eq!(a.report_with_next(5).as_slice(), &[5]);
        assert_eq!(a.next(5), None);
        assert_eq!(a.end(), Report::Nothing);
    }

    #[test]
    fn ending_reports_what_was_handed_out_and_leaves_nothing_ahead() {
        let mut a = Ahead::new();
        for s in [1, 2, 3] {
            a.next(s);
        }
        a.started([11, 21, 31, 0], true);
        assert_eq!(a.next(2), Some(21));
        assert_eq!(a.next(3), Some(31));
        let Report::Take(taken) = a.end() else {
            panic!("nothing to take")
        };
        assert_eq!(taken.as_slice(), &[2, 3]);
        assert_eq!(a.next(1), None);
        assert_eq!(a.end(), Report::Nothing);
        // The call after `end` may have ended the transaction: a flush is not deferred.
        assert!(!a.defer_flush());
    }

    #[test]
    fn a_sequence_sent_to_the_sequencer_leaves_the_others_ahead() {
        let mut a = Ahead::new();
        for s in [1, 2] {
            a.next(s);
        }
        a.started([11, 0, 0, 0], true);
        // Sequence 2 has no number ahead (0): it goes to the sequencer, with 1 reported.
        assert_eq!(a.next(1), Some(11));
        assert_eq!(a.next(2), None);
        assert_eq!(a.report_with_next(2).as_slice(), &[1]);
        assert_eq!(a.end(), Report::Nothing);
    }

    #[test]
    fn a_deferred_flush_is_reported_once_with_what_was_handed_out_before_it() {
        let mut a = Ahead::new();
        for s in [1, 2] {
            a.next(s);
        }
        a.started([11, 21, 0, 0], true);
        assert_eq!(a.next(1), Some(11));
        assert!(a.defer_flush());
        assert!(a.flush_deferred());
        // The transaction is over: nothing is ahead, and a second flush goes to the sequencer
        // (which refuses it) after the first is reported.
        assert_eq!(a.next(2), None);
        assert!(!a.defer_flush());
        let Report::Flush(taken) = a.end() else {
            panic!("no flush")
        };
        assert_eq!(taken.as_slice(), &[1]);
        assert!(!a.flush_deferred());
        assert_eq!(a.end(), Report::Nothing);
    }

    #[test]
    fn a_flush_is_deferred_only_after_a_start_that_opened_a_transaction() {
        let mut a = Ahead::new();
        assert!(!a.defer_flush());
        a.started([0; AHEAD_SEQS], false);
        assert!(!a.defer_flush());
        a.started([0; AHEAD_SEQS], true);
        a.end();
        assert!(!a.defer_flush(), "another call came between");
    }

    #[test]
    fn an_open_transactions_flush_leaves_the_sequencer_flushed_whatever_it_staged() {
        for stage in [false, true] {
            let mut s = ready();
            start(&mut s, 1);
            s.next(1).unwrap();
            if stage {
                s.stage().unwrap();
                start(&mut s, 2);
            }
            assert_ne!(s.status(), FLUSHED);
            s.flush().unwrap();
            assert_eq!(s.status(), FLUSHED);
        }
    }

    #[test]
    fn next_each_is_all_or_nothing() {
        let mut s = ready();
        start(&mut s, 1);
        assert_eq!(s.peek_nth(1, 0), Some(10));
        assert_eq!(s.peek_nth(9, 0), None);
        assert_eq!(
            s.next_each(&[1, 9]),
            Err(crate::Error::UnknownSeqId { kind: 1, seq: 9 })
        );
        // Nothing was taken by the refused call.
        assert_eq!(s.peek_nth(1, 0), Some(10));
        assert_eq!(s.next_each(&[1, 2, 1]), Ok(Some(11)));
        assert_eq!(s.next(2), Ok(21));
        s.flush().unwrap();
        assert_eq!(s.peek_nth(1, 0), None);
        assert_eq!(s.next_each(&[]), Ok(None));
        assert_eq!(s.next_each(&[1]), Err(crate::Error::NoTransaction));
    }
}
