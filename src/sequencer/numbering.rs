//! How a transaction gets its numbers: `start` finds them (the hot workspace's slots, the
//! cache, the values not yet written, or a load from storage), `next` hands them out, and
//! `loads_ahead` and `preload` ready the starts of many workspaces at once.
//!
//! Two mechanisms here exist for speed (docs/ARCHITECTURE.md, "What exists only for speed"):
//! a hot workspace's cache entry left lagging behind its slots (`settle`; W2 one event per call
//! 369 → 330 ns), and the start's fast path (the last place first, one copy in the kind's order;
//! W2's quad call 2,328 → 1,924 wasm operators).

use super::{PendingLoad, Phase, Sequencer, Slot, Transaction};
use crate::cache::{CacheSlot, NumberCache};
use crate::error::Error;
use crate::types::{Number, SeqId, WsId, WsKind};
use crate::unflushed::{Unflushed, UnwrittenWs};
use crate::work::{NotNowReason, ReadNumbers, Start, Ticket, continue_from};

/// The newest number of a key not yet written, for a workspace the cache does not hold: a
/// staged one (`orphan`: where the staged values of a workspace evicted while staged are),
/// else one waiting or being written.
#[inline]
fn unwritten(
    unflushed: &Unflushed, orphan: Option<u32>, of_ws: &UnwrittenWs<'_>, seq: SeqId,
) -> Option<Number> {
    orphan
        .and_then(|staged| unflushed.staged_get(staged, seq))
        .or_else(|| of_ws.get(seq))
}

/// Raises the cache node the last flush left behind (see `Sequencer::behind`) to the numbers
/// it consumed: the slots', as no transaction is open, or higher ones of a transaction that
/// continues them (consumed in turn, or dropped with the whole cache by an actualization).
/// Takes the fields it touches, so that a caller may hold others.
#[inline]
fn settle(
    behind: &mut Option<(WsId, WsKind)>, cache: &mut NumberCache,
    last_slot: &mut Option<CacheSlot>, slots: &[Slot],
) {
    if let Some((ws, _)) = behind.take() {
        *last_slot = Some(settle_node(cache, *last_slot, ws, slots));
    }
}

/// Raises the node of `ws` (at `at`, if it still holds it) to `slots` (out of line: a hot
/// workspace needs it only when another one starts).
#[inline(never)]
fn settle_node(
    cache: &mut NumberCache, at: Option<CacheSlot>, ws: WsId, slots: &[Slot],
) -> CacheSlot {
    cache.raise_at(at, ws, slots.iter().map(|s| (s.seq, s.last)))
}

impl Sequencer {
    /// Begins a sequencing transaction for workspace `ws` of kind `kind` (or, after
    /// [`stage`](Self::stage), the next event of the same transaction).
    ///
    /// Returns the PLog offset of the event being numbered (not consumed until `flush`), "not
    /// now" while actualizing or while more than `max_unflushed_values` values wait (staged
    /// ones included), or a read to perform first when some of the workspace's numbers are not
    /// in memory.
    pub fn start(&mut self, kind: WsKind, ws: WsId) -> Result<Start, Error> {
        self.start_at(kind, ws, None)
    }

    /// [`start`](Self::start), told where the workspace's numbers sat in the cache when
    /// [`loads_ahead_at`](Self::loads_ahead_at) looked (checked before use): no second lookup.
    #[inline]
    pub(crate) fn start_at(
        &mut self, kind: WsKind, ws: WsId, hint: Option<CacheSlot>,
    ) -> Result<Start, Error> {
        self.check_alive()?;
        if self.tx.is_some() {
            return Err(Error::TransactionInProgress);
        }
        let seqs = self.kinds.get(kind).ok_or(Error::UnknownWsKind(kind))?;
        self.pending_load = None;
        if matches!(self.phase, Phase::Actualizing(_)) {
            return Ok(Start::NotNow(NotNowReason::Actualizing));
        }
        if self.unflushed.count() + self.unflushed.staged_count() > self.max_unflushed {
            return Ok(Start::NotNow(NotNowReason::TooManyUnflushed));
        }

        self.slot_cursor = 0;
        if self.behind == Some((ws, kind)) {
            // The workspace of the last flush again: its numbers are the slots'.
            for slot in &mut self.slots {
                slot.touched = false;
            }
            return Ok(self.begin_transaction(ws, kind, self.last_slot, true));
        }
        settle(
            &mut self.behind,
            &mut self.cache,
            &mut self.last_slot,
            &self.slots,
        );
        let found = self.cache.get_at(hint.or(self.last_slot), ws);
        let slot = found.map(|(slot, _)| slot);
        let all = seqs.all();
        let Some(numbers) = found.and_then(|(_, cached)| cached.in_order_of(all)) else {
            return self.start_searching(kind, ws, slot);
        };
        // The usual start: every number cached, in the kind's order, copied in one pass over
        // the slots (of the same length as the last transaction's, usually).
        if self.slots.len() != all.len() {
            self.slots.resize(all.len(), Slot::default());
        }
        for (slot, (&(seq, initial), &(_, last))) in
            self.slots.iter_mut().zip(all.iter().zip(numbers))
        {
            *slot = Slot {
                seq,
                last: continue_from(last, initial),
                touched: false,
            };
        }
        Ok(self.begin_transaction(ws, kind, slot, true))
    }

    /// The rest of a start whose numbers are not all cached in the kind's order (`slot`:
    /// where the cache holds some, if it does): each sequence's number from the cache, else
    /// from the values not yet written; a read of those in neither. Out of line: a start
    /// usually finds every number cached.
    #[inline(never)]
    fn start_searching(
        &mut self, kind: WsKind, ws: WsId, slot: Option<CacheSlot>,
    ) -> Result<Start, Error> {
        let seqs = self.kinds.get(kind).ok_or(Error::UnknownWsKind(kind))?;
        let orphan = self.cache.orphan(ws);
        let cached = slot.and_then(|slot| self.cache.numbers_at(slot));
        self.slots.clear();
        let mut missing: Vec<SeqId> = Vec::new();
        // Looked up once, at the first key the cache lacks.
        let mut unwritten_ws = None;
        for (i, &(seq, initial)) in seqs.all().iter().enumerate() {
            let known = cached.and_then(|c| c.get_at(i, seq)).or_else(|| {
                let of_ws = unwritten_ws.get_or_insert_with(|| self.unflushed.of_ws(ws));
                unwritten(&self.unflushed, orphan, of_ws, seq)
            });
            match known {
                Some(last) => self.slots.push(Slot {
                    seq,
                    last: continue_from(last, initial),
                    touched: false,
                }),
                None => missing.push(seq),
            }
        }
        if !missing.is_empty() {
            return Ok(self.load(kind, ws, missing));
        }
        Ok(self.begin_transaction(ws, kind, slot, false))
    }

    /// The transaction of a start that found every number: it numbers the next offset.
    #[inline]
    fn begin_transaction(
        &mut self, ws: WsId, kind: WsKind, cached: Option<CacheSlot>, in_order: bool,
    ) -> Start {
        self.tx = Some(Transaction {
            ws,
            kind,
            offset: self.next_offset,
            cached,
            in_order,
        });
        Start::Started(self.next_offset)
    }

    /// A start that lacks the numbers of `missing`: the read to perform first, awaited (out
    /// of line: a start usually finds every number in memory).
    #[cold]
    #[inline(never)]
    fn load(&mut self, kind: WsKind, ws: WsId, missing: Vec<SeqId>) -> Start {
        self.slots.clear();
        let ticket = self.new_ticket();
        self.pending_load = Some(PendingLoad {
            ticket,
            ws,
            kind,
            seqs: missing.clone(),
        });
        Start::Load(ReadNumbers {
            ticket,
            ws,
            seqs: missing,
        })
    }

    /// The numbers read a start of workspace `ws` of kind `kind` handed out
    /// ([`Start::Load`]) and that is still awaited: its ticket and sequences. It stays awaited
    /// until it is reported or failed, or the next start, `actualize` or `cleanup` drops it.
    ///
    /// A caller about to start `(kind, ws)` again may perform this read instead: starting again
    /// would only hand the read out afresh, under a new ticket. Whatever changed meanwhile,
    /// [`complete_numbers`](Self::complete_numbers) starts anew with the numbers read, so a
    /// read no longer needed is harmless (numbers in memory win) and a sequence that now needs
    /// reading too is asked for by another load.
    pub fn pending_load(&self, kind: WsKind, ws: WsId) -> Option<(Ticket, &[SeqId])> {
        self.pending_load
            .as_ref()
            .filter(|l| l.kind == kind && l.ws == ws)
            .map(|l| (l.ticket, l.seqs.as_slice()))
    }

    /// Reports the numbers read for a [`Start::Load`] (in the order of its `seqs`, 0 for a key
    /// storage does not know) and retries the start with them.
    pub fn complete_numbers(&mut self, ticket: Ticket, numbers: &[Number]) -> Result<Start, Error> {
        let (kind, ws, slot) = self.complete_load_at(ticket, numbers)?;
        self.start_at(kind, ws, Some(slot))
    }

    /// Reports the numbers read for a [`Start::Load`] as
    /// [`complete_numbers`](Self::complete_numbers) does, without retrying the start: they
    /// are kept in memory for it. Returns the load's kind and workspace.
    pub fn complete_load(
        &mut self, ticket: Ticket, numbers: &[Number],
    ) -> Result<(WsKind, WsId), Error> {
        self.complete_load_at(ticket, numbers)
            .map(|(kind, ws, _)| (kind, ws))
    }

    /// [`complete_load`](Self::complete_load), also telling where the numbers now sit in the
    /// cache (a hint for [`start_at`](Self::start_at)).
    pub(crate) fn complete_load_at(
        &mut self, ticket: Ticket, numbers: &[Number],
    ) -> Result<(WsKind, WsId, CacheSlot), Error> {
        self.check_alive()?;
        let Some(load) = self.pending_load.take_if(|l| l.ticket == ticket) else {
            return Err(self.ticket_error(ticket, "a numbers read"));
        };
        if numbers.len() != load.seqs.len() {
            let err = Error::MalformedNumbers {
                expected: load.seqs.len(),
                got: numbers.len(),
            };
            self.pending_load = Some(load);
            return Err(err);
        }
        let kind = self
            .kinds
            .get(load.kind)
            .ok_or(Error::UnknownWsKind(load.kind))?;
        let slot = self.cache.raise(
            load.ws,
            load.seqs.iter().zip(numbers).map(|(&seq, &stored)| {
                let initial = kind.initial(seq).unwrap_or(1);
                (seq, continue_from(stored, initial))
            }),
        );
        self.storage_answered();
        Ok((load.kind, load.ws, slot))
    }

    /// The next number of sequence `seq` in the transaction in progress.
    pub fn next(&mut self, seq: SeqId) -> Result<Number, Error> {
        self.check_alive()?;
        let tx = self.tx.as_ref().ok_or(Error::NoTransaction)?;
        // Callers usually ask in the kind's order: the slot after the last one is tried first.
        let guess = self.slot_cursor;
        let at = match self.slots.get(guess) {
            Some(s) if s.seq == seq => guess,
            _ => self
                .slots
                .iter()
                .position(|s| s.seq == seq)
                .ok_or(Error::UnknownSeqId { kind: tx.kind, seq })?,
        };
        self.slot_cursor = at + 1;
        let slot = &mut self.slots[at];
        let n = slot
            .last
            .checked_add(1)
            .ok_or(Error::SequenceExhausted { kind: tx.kind, seq })?;
        slot.last = n;
        slot.touched = true;
        Ok(n)
    }

    /// What the `n`-th [`next`](Self::next) of `seq` from now (0: the next one) would hand
    /// out, without taking anything; `None` where it would be refused (no transaction, an
    /// unknown sequence, an exhausted one).
    pub fn peek_nth(&self, seq: SeqId, n: u64) -> Option<Number> {
        if self.tx.is_none() || matches!(self.phase, Phase::CleanedUp) {
            return None;
        }
        let slot = self.slots.iter().find(|s| s.seq == seq)?;
        slot.last.checked_add(n)?.checked_add(1)
    }

    /// [`next`](Self::next) of each of `seqs`, in order, all or nothing: refused, with nothing
    /// changed, where any of them would be. The last one's number; no `seqs` take nothing and
    /// need no transaction (`None`).
    /// What a caller that handed out numbers [`peek_nth`](Self::peek_nth) gave reports them
    /// with, so that they are taken as `next` would have taken them.
    pub fn next_each(&mut self, seqs: &[SeqId]) -> Result<Option<Number>, Error> {
        self.check_alive()?;
        if seqs.is_empty() {
            return Ok(None);
        }
        let tx = self.tx.as_ref().ok_or(Error::NoTransaction)?;
        for (i, &seq) in seqs.iter().enumerate() {
            // Checked once per distinct sequence, for all its occurrences at once.
            if seqs[..i].contains(&seq) {
                continue;
            }
            let times = seqs[i..].iter().filter(|&&s| s == seq).count() as u64;
            let slot = self
                .slots
                .iter()
                .find(|s| s.seq == seq)
                .ok_or(Error::UnknownSeqId { kind: tx.kind, seq })?;
            if slot.last.checked_add(times).is_none() {
                return Err(Error::SequenceExhausted { kind: tx.kind, seq });
            }
        }
        let mut last = None;
        for &seq in seqs {
            last = Some(self.next(seq)?);
        }
        Ok(last)
    }

    /// Whether a transaction of kind `kind` may take numbers of every one of `seqs`: the error
    /// `start` or `next` would give otherwise. Changes nothing (for callers that number many
    /// events at once and must refuse a bad request before the first).
    pub fn check_seqs(&self, kind: WsKind, seqs: &[SeqId]) -> Result<(), Error> {
        self.check_alive()?;
        let known = self.kinds.get(kind).ok_or(Error::UnknownWsKind(kind))?;
        match seqs.iter().find(|&&s| known.initial(s).is_none()) {
            Some(&seq) => Err(Error::UnknownSeqId { kind, seq }),
            None => Ok(()),
        }
    }

    /// The sequences of kind `kind`, in the order [`preload`](Self::preload) takes their
    /// numbers.
    pub fn kind_seqs(&self, kind: WsKind) -> Result<impl Iterator<Item = SeqId> + '_, Error> {
        let seqs = self.kinds.get(kind).ok_or(Error::UnknownWsKind(kind))?;
        Ok(seqs.all().iter().map(|&(seq, _)| seq))
    }

    /// Adds to `out` each workspace of `ws` (once) for which a `start` of kind `kind` would
    /// now have to load numbers: for a caller about to start events on many workspaces, to
    /// read all their numbers in one storage call and [`preload`](Self::preload) them. Adds
    /// nothing unless the sequencer is ready with no event open (a `start` would say "not
    /// now" or be refused).
    pub fn loads_ahead(&self, kind: WsKind, ws: &[WsId], out: &mut Vec<WsId>) {
        self.loads_ahead_at(kind, ws, out, None);
    }

    /// [`loads_ahead`](Self::loads_ahead), also noting in `slots` (when given) where each
    /// workspace of `ws` sits in the cache (`None` if it does not), for
    /// [`start_at`](Self::start_at). `slots` is left empty unless the sequencer is ready with
    /// no event open.
    pub(crate) fn loads_ahead_at(
        &self, kind: WsKind, ws: &[WsId], out: &mut Vec<WsId>,
        mut slots: Option<&mut Vec<Option<CacheSlot>>>,
    ) {
        if let Some(slots) = slots.as_deref_mut() {
            slots.clear();
        }
        let (Phase::Ready, None, Some(seqs)) = (&self.phase, &self.tx, self.kinds.get(kind)) else {
            return;
        };
        for &w in ws {
            let found = self.cache.peek_slot(w);
            if let Some(slots) = slots.as_deref_mut() {
                slots.push(found.map(|(slot, _)| slot));
            }
            let cached = found.map(|(_, numbers)| numbers);
            let orphan = self.cache.orphan(w);
            let mut unwritten_ws = None;
            let held = |(i, &(seq, _)): (usize, &(SeqId, Number))| {
                cached.and_then(|c| c.get_at(i, seq)).is_some() || {
                    let of_ws = unwritten_ws.get_or_insert_with(|| self.unflushed.of_ws(w));
                    unwritten(&self.unflushed, orphan, of_ws, seq).is_some()
                }
            };
            if !seqs.all().iter().enumerate().all(held) && !out.contains(&w) {
                out.push(w);
            }
        }
    }

    /// Takes the stored last numbers of workspace `ws` read outside a `start` (one per sequence
    /// of [`kind_seqs`](Self::kind_seqs), 0 for a key never stored), so that its next `start`
    /// needs no load. Numbers already in memory win: memory is never older than storage. Keeps
    /// nothing unless the sequencer is ready; either way, storage answered (docs/DESIGN.md §4.4).
    pub fn preload(&mut self, kind: WsKind, ws: WsId, stored: &[Number]) -> Result<(), Error> {
        self.check_alive()?;
        let seqs = self
            .kinds
            .get(kind)
            .ok_or(Error::UnknownWsKind(kind))?
            .all();
        if stored.len() != seqs.len() {
            return Err(Error::MalformedNumbers {
                expected: seqs.len(),
                got: stored.len(),
            });
        }
        if matches!(self.phase, Phase::Ready) {
            settle(
                &mut self.behind,
                &mut self.cache,
                &mut self.last_slot,
                &self.slots,
            );
            // The cache keeps the larger of what it holds and what it is given; an unwritten
            // value is newer than storage, so it wins over the stored one.
            let unflushed = &self.unflushed;
            let orphan = self.cache.orphan(ws);
            let of_ws = unflushed.of_ws(ws);
            self.cache.raise(
                ws,
                seqs.iter().zip(stored).map(|(&(seq, initial), &stored)| {
                    let stored = continue_from(stored, initial);
                    (
                        seq,
                        unwritten(unflushed, orphan, &of_ws, seq).map_or(stored, |u| u.max(stored)),
                    )
                }),
            );
        }
        // The numbers were read from storage: it answers.
        self.storage_answered();
        Ok(())
    }
}
