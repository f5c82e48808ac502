//! What [`OwnTail`](super::OwnTail) knows of one partition, and every rule about when it may
//! answer from it: the PLog's events it has seen at the end of the PLog (appended, or read by a
//! replay), the numbers it has seen, and when the store proved them current. No I/O: the layer
//! tells it what happened and asks it what to answer.

use std::collections::VecDeque;

use hashbrown::HashMap;
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};

use crate::store::storage::PlogPage;
use crate::store::tail_probe::Offsets;

/// How much [`OwnTail`](super::OwnTail) keeps per partition; beyond it, what is kept is
/// dropped (the oldest events first; all numbers at once) and reads go to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailLimits {
    /// PLog events kept at most.
    pub events: usize,
    /// Bytes of kept events' values at most (32 bytes each: the value and its offset).
    pub value_bytes: usize,
    /// Workspaces whose numbers are tracked at most.
    pub workspaces: usize,
}

impl Default for TailLimits {
    /// 8,192 events and 1 MiB of their values, and 65,536 workspaces, per partition.
    fn default() -> Self {
        Self {
            events: 8_192,
            value_bytes: 1 << 20,
            workspaces: 65_536,
        }
    }
}

/// Bytes one kept value takes: its offset and the value.
pub(super) const VALUE_BYTES: usize = size_of::<(PLogOffset, SeqValue)>();

/// What is known of the PLog's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing: every read goes to the store.
    Nothing,
    /// An actualization's replay from the store is followed: the events from `tail.start` to
    /// `tail.end` were read by it, in order, with nothing skipped.
    Following,
    /// The PLog ended at `tail.end` when last read or appended to, and every event from the
    /// start of this epoch on was seen here.
    Known,
}

/// A number seen for one (workspace, sequence).
#[derive(Clone, Copy, Debug)]
struct Seen {
    seq: SeqId,
    number: Number,
    /// Read from the store's view in this epoch: with everything seen since, it is the
    /// largest number the PLog holds for the key. Only these are served.
    read: bool,
}

/// What an offset read (the proof) saw when it began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ProofTicket {
    epoch: u64,
    appends: u64,
}

/// What a store read saw when it began: its answer counts only if the epoch is the same when
/// it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ReadTicket(u64);

/// One partition's kept tail and numbers.
///
/// An **epoch** begins when an offset read of the store cannot prove the tail: everything kept
/// is dropped and the replay that follows, read from the store, is followed from its first
/// offset (`max(stored, 1)`) to the PLog's end. From then on every PLog event past the replay's
/// end is seen here as it is appended (a failed or unknown append ends the epoch), unless
/// another writer appends: then the fence refuses this host's next append, or an offset read
/// of the store finds the PLog longer than what is kept; either ends the epoch. Within an
/// epoch:
///
/// - the kept events `[start, end)` are the PLog's, and the PLog ended at `end` when this host
///   last appended to it or read its end: a replay from `start..=end` is served from them
///   ([`vouch`](Self::vouch) says why that needs no read);
/// - the store's view, read after the epoch's offset read, holds every number of the events
///   before its stored offset, and every event from there on was seen (replayed or
///   appended), so the largest of a number read and those seen is the largest the PLog holds
///   for that key; the sequencer asks only for keys it does not hold, whose numbers are all
///   in the view, so that is what the view answers, and it is served from here.
pub(super) struct PartitionTail {
    limits: TailLimits,
    phase: Phase,
    /// The first kept event's offset.
    start: PLogOffset,
    /// The offset after the last kept event: the PLog's end as last seen.
    end: PLogOffset,
    /// The kept events' values in offset order (an event without values keeps none).
    values: VecDeque<(PLogOffset, SeqValue)>,
    /// The numbers seen, by workspace.
    numbers: HashMap<WsId, Vec<Seen>>,
    /// The PLog's end an offset read proved, while its replay may be served from here.
    proved: Option<PLogOffset>,
    /// The stored offset as this epoch last read it or wrote it (`None` in no epoch).
    stored: Option<PLogOffset>,
    /// Bumped whenever an epoch ends or begins.
    epoch: u64,
    /// Bumped when an append begins or ends.
    appends: u64,
    /// Appends under way.
    appending: u32,
    /// This host's tenure of the partition ([`TailProbe::tenure`](crate::store::TailProbe::tenure))
    /// that what is kept belongs to.
    tenure: u64,
}

impl PartitionTail {
    pub(super) fn new(limits: TailLimits) -> Self {
        Self {
            limits,
            phase: Phase::Nothing,
            start: 0,
            end: 0,
            values: VecDeque::new(),
            numbers: HashMap::new(),
            proved: None,
            stored: None,
            epoch: 0,
            appends: 0,
            appending: 0,
            tenure: 0,
        }
    }

    /// What is kept belongs to `tenure` from now on: if that is another tenure than the one
    /// it was kept in, everything is forgotten first (true if something was kept). A partition this host lost
    /// may have been appended to by another, so its kept end proves nothing any more.
    pub(super) fn in_tenure(&mut self, tenure: u64) -> bool {
        if tenure == self.tenure {
            return false;
        }
        let kept = self.phase != Phase::Nothing;
        self.tenure = tenure;
        // Also when nothing is kept: a read begun in the last tenure is not recorded.
        self.forget();
        kept
    }

    /// Forgets everything: the store answers every read until an actualization's replay from
    /// it has been followed again.
    pub(super) fn forget(&mut self) {
        self.begin_epoch(Phase::Nothing, 0);
    }

    fn begin_epoch(&mut self, phase: Phase, at: PLogOffset) {
        self.phase = phase;
        self.start = at;
        self.end = at;
        self.values.clear();
        self.numbers.clear();
        self.proved = None;
        self.stored = None;
        self.epoch += 1;
    }

    /// An offset read (an actualization's first read, or a probe) begins.
    pub(super) fn offset_read_began(&mut self) -> ProofTicket {
        self.proved = None;
        ProofTicket {
            epoch: self.epoch,
            appends: self.appends,
        }
    }

    /// The offset read begun with `ticket` found `offsets`: true if it proves the kept tail
    /// (the replay from the stored offset is then served from it), else a new epoch follows
    /// the replay from the store.
    pub(super) fn offsets_read(&mut self, ticket: ProofTicket, offsets: Offsets) -> bool {
        let undisturbed =
            ticket.epoch == self.epoch && ticket.appends == self.appends && self.appending == 0;
        if self.phase == Phase::Known
            && undisturbed
            && offsets.plog_next == self.end
            && offsets.stored <= self.end
        {
            self.drop_before(offsets.stored);
            self.proved = Some(self.end);
            self.stored = Some(offsets.stored);
            return true;
        }
        self.begin_epoch(Phase::Following, offsets.stored.max(1));
        self.stored = Some(offsets.stored);
        false
    }

    /// An offset read answered without reading the store: the stored offset this epoch last
    /// read or wrote, if the kept tail ends where the PLog ended when this host last appended
    /// or read it and no append is under way; the replay that follows is then served from the
    /// tail. `None`: the store must be read.
    ///
    /// Why no read is needed: what an actualization computes matters only through the numbers
    /// it lets this host give, and those reach the PLog only by an append, which the store
    /// accepts only at the PLog's next offset (the fence of
    /// [`Storage::append_event`](crate::Storage::append_event)). An append of another writer
    /// after the kept end takes that offset, so this host's next append is refused, which ends
    /// the epoch, and the actualization that follows reads the store. A read here would only
    /// find the same writer sooner.
    pub(super) fn vouch(&mut self) -> Option<PLogOffset> {
        let stored = self.stored?;
        if self.phase != Phase::Known || self.appending != 0 || stored > self.end {
            return None;
        }
        self.drop_before(stored);
        self.proved = Some(self.end);
        Some(stored)
    }

    /// The page a read of up to `max` events from `from` returns, served from the kept tail
    /// if a proof allows it.
    pub(super) fn page(&self, from: PLogOffset, max: usize) -> Option<PlogPage> {
        let end = self.proved?;
        if from < self.start || from > end {
            return None;
        }
        let next = from.saturating_add(max as u64).min(end);
        let first = self.values.partition_point(|&(o, _)| o < from);
        let last = self.values.partition_point(|&(o, _)| o < next);
        Some(PlogPage {
            values: self.values.range(first..last).copied().collect(),
            next,
            end: next == end,
        })
    }

    /// What a store read beginning now must show to count.
    pub(super) fn read_ticket(&self) -> ReadTicket {
        ReadTicket(self.epoch)
    }

    /// A PLog read from `from`, begun with `ticket`, returned `page` from the store.
    pub(super) fn page_read(&mut self, ticket: ReadTicket, from: PLogOffset, page: &PlogPage) {
        if ticket.0 != self.epoch {
            return;
        }
        match self.phase {
            Phase::Nothing => {}
            Phase::Following if from <= self.end && from >= self.start => {
                let seen = self.end;
                self.raise(page.values.iter().map(|&(_, v)| v));
                self.keep(page.values.iter().filter(|(o, _)| *o >= seen).copied());
                self.end = self.end.max(page.next);
                if page.end {
                    self.phase = Phase::Known;
                }
                self.bound();
            }
            // A page that does not follow on from what was read: the replay cannot be
            // followed.
            Phase::Following => self.forget(),
            // The PLog ends elsewhere than it was last seen to: another writer.
            Phase::Known if page.next > self.end || (page.end && page.next != self.end) => {
                self.forget()
            }
            Phase::Known => {}
        }
    }

    /// An append begins: no replay is served from a proof made before it.
    pub(super) fn append_began(&mut self) {
        self.proved = None;
        self.appending += 1;
        self.appends += 1;
    }

    /// The append of the events from `first` to before `next`, whose values are `values` (in
    /// offset order), succeeded.
    pub(super) fn appended(
        &mut self, first: PLogOffset, next: PLogOffset,
        values: impl Iterator<Item = (PLogOffset, SeqValue)> + Clone,
    ) {
        self.append_ended();
        if self.phase != Phase::Known || first != self.end {
            // Events the layer did not see lie between: another writer's.
            self.forget();
            return;
        }
        self.raise(values.clone().map(|(_, v)| v));
        self.keep(values);
        self.end = next;
        self.bound();
    }

    /// An append failed, or its outcome is unknown.
    pub(super) fn append_failed(&mut self) {
        self.append_ended();
        self.forget();
    }

    fn append_ended(&mut self) {
        self.appending = self.appending.saturating_sub(1);
        self.appends += 1;
    }

    /// A flusher write of `values` and the stored offset `stored` succeeded: replays start at
    /// `stored` or later from now on, so the events before it are dropped.
    pub(super) fn written(&mut self, values: &[SeqValue], stored: PLogOffset) {
        if self.phase == Phase::Nothing {
            return;
        }
        self.raise(values.iter().copied());
        self.stored = self.stored.map(|s| s.max(stored));
        self.drop_before(stored.min(self.end));
        self.bound();
    }

    /// The numbers of `seqs` in `ws`, if every one was read from the store in this epoch and
    /// the PLog's end is known.
    pub(super) fn numbers(&self, ws: WsId, seqs: &[SeqId]) -> Option<Vec<Number>> {
        if self.phase != Phase::Known {
            return None;
        }
        let seen = self.numbers.get(&ws)?;
        seqs.iter()
            .map(|s| {
                seen.iter()
                    .find(|n| n.seq == *s && n.read)
                    .map(|n| n.number)
            })
            .collect()
    }

    /// A numbers read of `ws` (each with `seqs`), begun with `ticket`, found `numbers`
    /// (`seqs.len()` per workspace, in order).
    pub(super) fn numbers_read(
        &mut self, ticket: ReadTicket, ws: &[WsId], seqs: &[SeqId], numbers: &[Number],
    ) {
        if ticket.0 != self.epoch
            || self.phase == Phase::Nothing
            || numbers.len() != ws.len() * seqs.len()
        {
            return;
        }
        for (&w, found) in ws.iter().zip(numbers.chunks_exact(seqs.len().max(1))) {
            let seen = self.numbers.entry(w).or_default();
            for (&seq, &number) in seqs.iter().zip(found) {
                match seen.iter_mut().find(|n| n.seq == seq) {
                    Some(n) => {
                        n.number = n.number.max(number);
                        n.read = true;
                    }
                    None => seen.push(Seen {
                        seq,
                        number,
                        read: true,
                    }),
                }
            }
        }
        self.bound();
    }

    /// Raises the numbers seen to `values` (keys not seen yet are added, not read).
    fn raise(&mut self, values: impl Iterator<Item = SeqValue>) {
        for v in values {
            let seen = self.numbers.entry(v.key.ws).or_default();
            match seen.iter_mut().find(|n| n.seq == v.key.seq) {
                Some(n) => n.number = n.number.max(v.value),
                None => seen.push(Seen {
                    seq: v.key.seq,
                    number: v.value,
                    read: false,
                }),
            }
        }
    }

    /// Keeps `values` (in offset order, after every kept one).
    fn keep(&mut self, values: impl Iterator<Item = (PLogOffset, SeqValue)>) {
        self.values.extend(values);
    }

    fn drop_before(&mut self, offset: PLogOffset) {
        if offset <= self.start {
            return;
        }
        let cut = self.values.partition_point(|&(o, _)| o < offset);
        self.values.drain(..cut);
        self.start = offset;
    }

    /// Holds what is kept within the limits: the oldest events go first; numbers past their
    /// limit end the epoch (each one seen is needed for the rule).
    fn bound(&mut self) {
        if self.numbers.len() > self.limits.workspaces {
            self.forget();
            return;
        }
        if self.end - self.start > self.limits.events as u64 {
            self.drop_before(self.end - self.limits.events as u64);
        }
        let most = self.limits.value_bytes / VALUE_BYTES;
        if self.values.len() > most {
            // From the first event whose values all fit.
            let over = self.values.len() - most;
            self.drop_before(self.values[over - 1].0 + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(ws: WsId, seq: SeqId, n: Number) -> SeqValue {
        SeqValue::new(ws, seq, n)
    }

    /// A tail that followed a replay of events 1..=3 (event `o` raising (1, 1) to `o`) and
    /// holds them, the PLog ending at 4.
    fn known() -> PartitionTail {
        let mut t = PartitionTail::new(TailLimits::default());
        assert!(!prove(&mut t, 0, 4));
        let page = PlogPage {
            values: (1..=3).map(|o| (o, v(1, 1, o))).collect(),
            next: 4,
            end: true,
        };
        t.page_read(t.read_ticket(), 1, &page);
        assert_eq!(t.phase, Phase::Known);
        t
    }

    fn prove(t: &mut PartitionTail, stored: PLogOffset, plog_next: PLogOffset) -> bool {
        let ticket = t.offset_read_began();
        t.offsets_read(ticket, Offsets { stored, plog_next })
    }

    #[test]
    fn a_proved_tail_serves_pages_from_any_kept_offset_to_the_proved_end() {
        let mut t = known();
        assert_eq!(t.page(1, 10), None, "nothing proved yet");
        assert!(prove(&mut t, 1, 4));
        let page = t.page(2, 10).expect("served");
        assert_eq!(page.values, vec![(2, v(1, 1, 2)), (3, v(1, 1, 3))]);
        assert_eq!((page.next, page.end), (4, true));
        let page = t.page(1, 2).expect("served");
        assert_eq!((page.values.len(), page.next, page.end), (2, 3, false));
        assert_eq!(t.page(4, 10).map(|p| (p.next, p.end)), Some((4, true)));
        assert_eq!(t.page(5, 10), None, "past the end");
        assert!(prove(&mut t, 3, 4));
        assert_eq!(t.page(2, 10), None, "before the stored offset: dropped");
    }

    #[test]
    fn a_longer_plog_than_kept_is_not_proved_and_a_new_epoch_follows_the_store() {
        let mut t = known();
        assert!(!prove(&mut t, 2, 6), "another writer appended 4 and 5");
        assert_eq!(t.page(2, 10), None);
        assert_eq!(t.phase, Phase::Following);
        assert_eq!((t.start, t.end), (2, 2));
        assert!(t.numbers.is_empty(), "numbers forgotten");
    }

    #[test]
    fn an_append_that_continues_the_tail_is_kept_and_one_that_does_not_ends_the_epoch() {
        let mut t = known();
        t.append_began();
        t.appended(4, 6, [(4, v(2, 1, 9)), (5, v(2, 1, 10))].into_iter());
        assert_eq!((t.start, t.end), (1, 6));
        assert!(prove(&mut t, 5, 6));
        t.append_began();
        assert_eq!(t.page(5, 10), None, "an append unproves");
        t.appended(8, 9, std::iter::empty());
        assert_eq!(t.phase, Phase::Nothing, "7 is not ours");
    }

    #[test]
    fn an_append_under_way_during_the_offset_read_unproves_it() {
        let mut t = known();
        let ticket = t.offset_read_began();
        t.append_began();
        t.append_failed();
        assert!(!t.offsets_read(
            ticket,
            Offsets {
                stored: 1,
                plog_next: 4
            }
        ));
    }

    #[test]
    fn a_known_tail_is_vouched_for_with_the_stored_offset_last_read_or_written() {
        let mut t = known();
        assert_eq!(t.vouch(), Some(0), "the offset the epoch's read found");
        assert_eq!(t.page(1, 10).map(|p| (p.next, p.end)), Some((4, true)));
        t.written(&[v(1, 1, 2)], 3);
        assert_eq!(t.vouch(), Some(3), "the offset this host wrote");
        assert!(t.page(2, 10).is_none(), "dropped: from the store");
        t.append_began();
        assert_eq!(t.vouch(), None, "an append under way: its outcome decides");
        assert_eq!(t.page(3, 10), None, "an append unproves");
        t.appended(4, 5, [(4, v(1, 1, 4))].into_iter());
        assert_eq!(t.vouch(), Some(3));
        assert_eq!(
            t.page(3, 10).map(|p| (p.values.len(), p.next)),
            Some((2, 5))
        );
    }

    #[test]
    fn nothing_is_vouched_for_before_a_replay_reached_the_plogs_end_or_after_a_doubt() {
        let mut t = PartitionTail::new(TailLimits::default());
        assert_eq!(t.vouch(), None, "nothing read yet");
        prove(&mut t, 0, 4);
        assert_eq!(t.vouch(), None, "the replay is still followed");
        let mut t = known();
        t.append_began();
        t.append_failed();
        assert_eq!(t.vouch(), None, "an unknown append forgot everything");
        let mut t = known();
        t.forget();
        assert_eq!(t.vouch(), None);
    }

    #[test]
    fn a_new_tenure_forgets_what_was_kept_in_the_last() {
        let mut t = known();
        assert!(!t.in_tenure(0), "the same tenure");
        assert_eq!(t.vouch(), Some(0));
        assert!(t.in_tenure(7), "acquired: another tenure");
        assert_eq!(t.vouch(), None, "the store must be read");
        assert_eq!(t.page(1, 10), None);
        assert!(!prove(&mut t, 0, 4));
        assert!(!t.in_tenure(7), "still the same tenure: kept");
        assert_eq!(t.phase, Phase::Following);
        assert!(t.in_tenure(0), "lost: forgotten");
        assert_eq!(t.phase, Phase::Nothing);
    }

    #[test]
    fn a_write_drops_the_events_before_its_stored_offset() {
        let mut t = known();
        t.written(&[v(1, 1, 2)], 3);
        assert_eq!((t.start, t.values.len()), (3, 1));
        assert!(prove(&mut t, 3, 4));
        assert!(t.page(2, 10).is_none(), "dropped: from the store");
        assert!(t.page(3, 10).is_some());
    }

    #[test]
    fn numbers_are_served_only_once_read_and_raised_by_everything_seen() {
        let mut t = known();
        assert_eq!(t.numbers(1, &[1]), None, "seen in the replay, never read");
        t.numbers_read(t.read_ticket(), &[1, 2], &[1, 2], &[2, 5, 0, 0]);
        assert_eq!(t.numbers(1, &[1, 2]), Some(vec![3, 5]), "the replay's 3");
        t.append_began();
        t.appended(4, 5, [(4, v(2, 2, 1))].into_iter());
        assert_eq!(t.numbers(2, &[2, 1]), Some(vec![1, 0]));
        assert_eq!(t.numbers(2, &[3]), None, "a sequence never read");
    }

    #[test]
    fn a_read_begun_in_an_earlier_epoch_is_not_recorded() {
        let mut t = known();
        let ticket = t.read_ticket();
        assert!(!prove(&mut t, 1, 9));
        t.numbers_read(ticket, &[1], &[1], &[1]);
        assert!(t.numbers.is_empty());
    }

    #[test]
    fn what_is_kept_stays_within_the_limits() {
        let mut t = PartitionTail::new(TailLimits {
            events: 3,
            value_bytes: 4 * VALUE_BYTES,
            workspaces: 2,
        });
        prove(&mut t, 0, 1);
        let empty = PlogPage {
            values: vec![],
            next: 1,
            end: true,
        };
        t.page_read(t.read_ticket(), 1, &empty);
        t.append_began();
        t.appended(1, 6, (1..6).map(|o| (o, v(1, 1, o))));
        assert_eq!((t.start, t.end, t.values.len()), (3, 6, 3), "3 events");
        t.append_began();
        t.appended(
            6,
            8,
            (6..8).flat_map(|o| [(o, v(1, 1, o)), (o, v(2, 1, o))]),
        );
        assert_eq!((t.start, t.values.len()), (6, 4), "4 values, whole events");
        t.append_began();
        t.appended(8, 9, [(8, v(3, 1, 1))].into_iter());
        assert_eq!(t.phase, Phase::Nothing, "a third workspace: forgotten");
    }
}
