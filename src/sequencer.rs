//! The sequencer: a deterministic state machine that hands out numbers and tells its driver what
//! storage work it needs, without doing any I/O or reading any clock itself.

use core::time::Duration;

use crate::cache::{CacheSlot, NumberCache};
use crate::error::Error;
use crate::kinds::Kinds;
use crate::params::Params;
use crate::retry::{Backoff, Probe, RetryPolicy};
use crate::timer::{Timer, TimerTable};
use crate::types::{Instant, Number, PLogOffset, SeqId, WsId, WsKind};
use crate::unflushed::{Unflushed, UnwrittenWs};
use crate::work::{NotNowReason, ReadNumbers, Start, Ticket, Work, WriteRequest, continue_from};

mod actualizer;
mod retries;

/// What the sequencer is doing, as seen from outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Recovering from storage and the PLog; `start` says "not now".
    Actualizing,
    /// Ready for a transaction.
    Ready,
    /// A transaction is in progress: an event is open, or events are staged for the next
    /// `flush`.
    InTransaction,
    /// Cleaned up; every call is refused.
    CleanedUp,
}

/// How many numbers the sequencer holds in memory, by where they are held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldNumbers {
    /// In the LRU cache (at most `lru_cache_size`, or one workspace's numbers if larger).
    pub cached: usize,
    /// Waiting to be written or being written.
    pub unflushed: usize,
    /// In the transaction in progress: the sequences of the open event's workspace kind, plus
    /// the values of staged events.
    pub transaction: usize,
}

/// One sequence of the transaction in progress.
#[derive(Clone, Copy, Default)]
struct Slot {
    seq: SeqId,
    last: Number,
    touched: bool,
}

/// The transaction in progress; its numbers live in `Sequencer::slots`.
#[derive(Clone, Copy)]
struct Transaction {
    ws: WsId,
    kind: WsKind,
    offset: PLogOffset,
    /// Where `start` found the workspace's numbers in the cache, for `stage` and `flush`.
    cached: Option<CacheSlot>,
    /// The slots are the kind's sequences in the order its cache node holds them first (the
    /// start found every number there so, or continued the slots of the last flush): a flush
    /// may leave raising that node to later (see `Sequencer::behind`).
    in_order: bool,
}

/// A `start` waiting for a numbers read.
struct PendingLoad {
    ticket: Ticket,
    ws: WsId,
    kind: WsKind,
    seqs: Vec<SeqId>,
}

/// Where actualization stands.
enum Step {
    /// A write handed out before `actualize` must be reported before storage can be read.
    AwaitWrite,
    /// Reading the stored next PLog offset (`issued` while the read is outstanding).
    ReadOffset { issued: Option<Ticket> },
    /// Replaying the PLog from `from` (`issued` while a page read is outstanding).
    /// While held back by unflushed values, [`Timer::ReplayRecheck`] says when to look again.
    Replay {
        from: PLogOffset,
        issued: Option<Ticket>,
    },
}

struct Actualization {
    step: Step,
    /// Consecutive failed reads; [`Timer::ActualizeRetry`] holds the next one back.
    retry: Backoff,
}

enum Phase {
    Actualizing(Actualization),
    Ready,
    CleanedUp,
}

/// The newest number of a key not yet written, for a workspace the cache does not hold: a
/// staged one (`orphan`: where the staged values of a workspace evicted while staged are),
/// else one waiting or being written.
#[inline]
fn unwritten(
    unflushed: &Unflushed,
    orphan: Option<u32>,
    of_ws: &UnwrittenWs<'_>,
    seq: SeqId,
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
    behind: &mut Option<(WsId, WsKind)>,
    cache: &mut NumberCache,
    last_slot: &mut Option<CacheSlot>,
    slots: &[Slot],
) {
    if let Some((ws, _)) = behind.take() {
        *last_slot = Some(settle_node(cache, *last_slot, ws, slots));
    }
}

/// Raises the node of `ws` (at `at`, if it still holds it) to `slots` (out of line: a hot
/// workspace needs it only when another one starts).
#[inline(never)]
fn settle_node(
    cache: &mut NumberCache,
    at: Option<CacheSlot>,
    ws: WsId,
    slots: &[Slot],
) -> CacheSlot {
    cache.raise_at(at, ws, slots.iter().map(|s| (s.seq, s.last)))
}

/// The sequencer state machine (docs/DESIGN.md §3, §4).
///
/// Use: [`start`](Self::start), then [`next`](Self::next) for each number the event needs, then
/// [`flush`](Self::flush) once the event is in the PLog, or [`actualize`](Self::actualize) if it
/// is not. Alongside, a driver repeatedly takes [`Work`] from [`poll_work`](Self::poll_work),
/// performs it against storage, and reports the outcome under the work's [`Ticket`]; it polls
/// again after every report and no later than [`poll_timeout`](Self::poll_timeout).
///
/// Guarantees: a number is never handed out twice for a key within a life of the sequencer,
/// and, provided storage honours the write order of [`WriteRequest`] and applies one partition's
/// writes in the order they were handed out, never again after a restart from that storage and
/// its PLog. A refused call returns an [`Error`] and changes nothing.
pub struct Sequencer {
    kinds: Kinds,
    max_unflushed: usize,
    batcher_delay: Duration,
    retry: RetryPolicy,
    phase: Phase,
    cache: NumberCache,
    unflushed: Unflushed,
    /// The offset the next transaction gets (meaningful when ready).
    next_offset: PLogOffset,
    /// The next PLog offset storage is known to hold.
    stored_offset: PLogOffset,
    tx: Option<Transaction>,
    slots: Vec<Slot>,
    /// The slot `next` looks at first: the one after the last it used.
    slot_cursor: usize,
    /// Where the last transaction left its workspace's numbers in the cache: a start of the
    /// same workspace (a hot one) finds them there without hashing (checked before use).
    last_slot: Option<CacheSlot>,
    /// The workspace (and kind) whose cache node, at `last_slot`, is behind `slots`: the last
    /// flush consumed the numbers in `slots` and left raising the node to `settle`, which a
    /// start of another workspace or kind and a preload call first (a load's numbers come
    /// after its start's settle, with no flush between; a lookup of which workspaces are
    /// cached needs none: the node is there either way). A start of the same workspace and
    /// kind continues from `slots` instead (a hot workspace: no cache raise, lookup or copy per
    /// transaction). The node holds the kind's sequences first, in the slots' order: only its
    /// values lag.
    behind: Option<(WsId, WsKind)>,
    pending_load: Option<PendingLoad>,
    /// The write that was in flight when the last actualization began, while it still is:
    /// after `actualize` it is dropped if it fails (the replay supersedes it); after
    /// `actualize_beside_write` it waits again once it settles ([`Self::requeue_superseded`]).
    superseded_write: Option<Ticket>,
    /// The offset of a write superseded by `actualize_beside_write` that settled during the
    /// actualization (0: none): the replay skips the events before it, which that write's
    /// values (waiting again) cover, so that no later write carries their older numbers.
    replay_floor: PLogOffset,
    /// Consecutive failed writes; [`Timer::WriteRetry`] holds the next one back.
    write_retry: Backoff,
    /// The probe of storage during a long retry wait ([`Timer::Probe`] says when).
    probe: Probe,
    /// Every deadline the sequencer waits for.
    timers: TimerTable,
    next_ticket: u64,
}

impl Sequencer {
    /// A sequencer that starts by actualizing: its first work is reading the stored next PLog
    /// offset. Refuses invalid params.
    pub fn new(params: Params) -> Result<Self, Error> {
        params.validate()?;
        let kinds = Kinds::new(&params.seq_types);
        let widest = kinds.widest();
        Ok(Self {
            kinds,
            max_unflushed: params.max_unflushed_values,
            batcher_delay: params.batcher_delay_on_overflow,
            retry: RetryPolicy {
                first: params.retry_delay,
                max: params.max_retry_delay,
                jitter_percent: params.retry_jitter_percent,
            },
            phase: Phase::Actualizing(Actualization {
                step: Step::ReadOffset { issued: None },
                retry: Backoff::default(),
            }),
            cache: NumberCache::new(params.lru_cache_size),
            unflushed: Unflushed::default(),
            next_offset: 0,
            stored_offset: 0,
            tx: None,
            slots: Vec::with_capacity(widest),
            slot_cursor: 0,
            last_slot: None,
            behind: None,
            pending_load: None,
            superseded_write: None,
            replay_floor: 0,
            write_retry: Backoff::default(),
            probe: Probe::default(),
            timers: TimerTable::default(),
            next_ticket: 0,
        })
    }

    /// What the sequencer is doing now.
    pub fn status(&self) -> Status {
        match self.phase {
            Phase::CleanedUp => Status::CleanedUp,
            Phase::Actualizing(_) => Status::Actualizing,
            Phase::Ready if self.tx.is_some() || self.unflushed.has_staged() => {
                Status::InTransaction
            }
            Phase::Ready => Status::Ready,
        }
    }

    /// How many numbers are held in memory, by where.
    pub fn held_numbers(&self) -> HeldNumbers {
        HeldNumbers {
            cached: self.cache.numbers(),
            unflushed: self.unflushed.count(),
            transaction: self.unflushed.staged_count()
                + if self.tx.is_some() {
                    self.slots.len()
                } else {
                    0
                },
        }
    }

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
        &mut self,
        kind: WsKind,
        ws: WsId,
        hint: Option<CacheSlot>,
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
        &mut self,
        kind: WsKind,
        ws: WsId,
        slot: Option<CacheSlot>,
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
        &mut self,
        ws: WsId,
        kind: WsKind,
        cached: Option<CacheSlot>,
        in_order: bool,
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
        &mut self,
        ticket: Ticket,
        numbers: &[Number],
    ) -> Result<(WsKind, WsId), Error> {
        self.complete_load_at(ticket, numbers)
            .map(|(kind, ws, _)| (kind, ws))
    }

    /// [`complete_load`](Self::complete_load), also telling where the numbers now sit in the
    /// cache (a hint for [`start_at`](Self::start_at)).
    pub(crate) fn complete_load_at(
        &mut self,
        ticket: Ticket,
        numbers: &[Number],
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
        &self,
        kind: WsKind,
        ws: &[WsId],
        out: &mut Vec<WsId>,
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

    /// Ends the open event without completing the transaction: its offset and numbers are
    /// taken (the next `start` continues after them), but they reach storage only once a
    /// `flush` says the events are in the PLog, and `actualize` drops them with the rest of the
    /// transaction. This numbers several events in one transaction, for a command processor
    /// that appends them to the PLog together.
    pub fn stage(&mut self) -> Result<(), Error> {
        self.check_alive()?;
        let tx = self.tx.take().ok_or(Error::NoTransaction)?;
        // A node behind is this event's workspace's (a start of another settles it first): it
        // is raised to the slots just below.
        self.behind = None;
        let slot =
            self.cache
                .raise_at(tx.cached, tx.ws, self.slots.iter().map(|s| (s.seq, s.last)));
        self.last_slot = Some(slot);
        let touched = self
            .slots
            .iter()
            .filter(|s| s.touched)
            .map(|s| (s.seq, s.last));
        // The cache's word is checked against the staged list: a place that does not hold
        // this workspace's values is never raised (a new entry keeps them instead).
        let known = self
            .cache
            .staged_at(slot, tx.ws)
            .filter(|&staged| self.unflushed.is_staged_at(staged, tx.ws));
        match known {
            Some(staged) => self.unflushed.stage_at(staged, touched, tx.offset),
            None => {
                let staged = self.unflushed.stage_new(tx.ws, slot, touched, tx.offset);
                self.cache.mark_staged(slot, tx.ws, staged);
            }
        }
        // As in `flush`: cannot saturate short of 2^64 - 2 events, and must not panic.
        self.next_offset = tx.offset.saturating_add(1);
        Ok(())
    }

    /// Completes the transaction in progress: its events (the open one, if any, and every
    /// staged one) are in the PLog, so their numbers and offsets are consumed and will be
    /// written by the flusher.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.check_alive()?;
        if self.tx.is_none() && self.unflushed.has_staged() {
            self.commit_staged();
            return Ok(());
        }
        let tx = self.tx.take().ok_or(Error::NoTransaction)?;
        self.commit_staged();
        if self.slots.iter().any(|s| s.touched) {
            self.unflushed.raise_ws(
                tx.ws,
                self.slots
                    .iter()
                    .filter(|s| s.touched)
                    .map(|s| (s.seq, s.last)),
            );
        }
        if tx.in_order && tx.cached.is_some() && tx.cached == self.last_slot {
            // The workspace of the last flush again (a hot one, the place checked when the
            // transaction started): its cache node keeps its older values until `settle`,
            // as the next start most likely continues from the slots. Others are raised now.
            self.behind = Some((tx.ws, tx.kind));
            self.last_slot = tx.cached;
        } else {
            self.behind = None;
            let slot =
                self.cache
                    .raise_at(tx.cached, tx.ws, self.slots.iter().map(|s| (s.seq, s.last)));
            self.last_slot = Some(slot);
        }
        self.unflushed.raise_offset(tx.offset);
        // Inputs never put an offset at the end of the range (see `validate_page`), so this
        // cannot saturate short of 2^64 - 2 events; it must not panic all the same.
        self.next_offset = tx.offset.saturating_add(1);
        Ok(())
    }

    /// The staged events' values wait to be written; the cache forgets where they were.
    #[inline]
    fn commit_staged(&mut self) {
        if self.unflushed.has_staged() {
            self.commit_staged_values();
        }
    }

    /// [`commit_staged`](Self::commit_staged) with events staged (out of line: most
    /// transactions are one event).
    #[inline(never)]
    fn commit_staged_values(&mut self) {
        let cache = &mut self.cache;
        self.unflushed
            .commit_staged(|ws, slot| cache.unmark_staged(slot, ws));
        self.cache.clear_orphans();
    }

    /// Drops the transaction in progress, if any (staged events included), and everything not
    /// yet written, and recovers from storage and the PLog: `start` says "not now" until that is
    /// done, then hands out the same offset and numbers the dropped transaction had.
    ///
    /// As the original, it reads storage only once a write in flight has settled; that write,
    /// if it fails, is dropped, not retried (the replay supersedes it).
    /// [`actualize_beside_write`](Self::actualize_beside_write) does not wait for it.
    pub fn actualize(&mut self) -> Result<(), Error> {
        self.begin_actualization(false)
    }

    /// [`actualize`](Self::actualize), reading storage at once, beside a write in flight:
    /// that write's values are those of events in the PLog and are durable before its offset,
    /// so the offset read finds the one before the write or the one it stores, and the replay
    /// from either covers every value of it not in storage. The write goes on; once it
    /// settles, landed or failed, its values wait again (merged by maximum) and the replay
    /// skips the events they cover, so no later write carries an older number over one it
    /// wrote, even in a store whose writes overwrite. For a host whose storage answers a read
    /// beside a write (the wait was most of an actualization on etcd).
    pub fn actualize_beside_write(&mut self) -> Result<(), Error> {
        self.begin_actualization(true)
    }

    fn begin_actualization(&mut self, beside_write: bool) -> Result<(), Error> {
        self.check_alive()?;
        if matches!(self.phase, Phase::Actualizing(_)) {
            return Err(Error::AlreadyActualizing);
        }
        self.tx = None;
        self.pending_load = None;
        self.behind = None;
        self.cache.clear();
        self.unflushed.clear_waiting();
        self.superseded_write = self.unflushed.in_flight();
        self.replay_floor = 0;
        let step = if self.superseded_write.is_some() && !beside_write {
            Step::AwaitWrite
        } else {
            Step::ReadOffset { issued: None }
        };
        self.phase = Phase::Actualizing(Actualization {
            step,
            retry: Backoff::default(),
        });
        self.stop_actualizer_timers();
        Ok(())
    }

    /// Stops the sequencer: outstanding work is abandoned (its reports are refused) and every
    /// later call is refused with [`Error::CleanedUp`]. Calling it again does nothing.
    pub fn cleanup(&mut self) {
        self.phase = Phase::CleanedUp;
        self.tx = None;
        self.slots = Vec::new();
        self.pending_load = None;
        self.superseded_write = None;
        self.behind = None;
        self.cache.clear();
        self.unflushed.clear_all();
        self.probe = Probe::default();
        self.timers = TimerTable::default();
    }

    /// The next storage operation to perform, if one is due at `now`. A
    /// [`Work::ReadNextOffset`] may also be a probe of storage during a long retry wait
    /// (docs/DESIGN.md §4.4): it is performed and reported like any other.
    ///
    /// Call until it returns `None`; call again after reporting any outcome, and at
    /// [`poll_timeout`](Self::poll_timeout).
    pub fn poll_work(&mut self, now: Instant) -> Option<Work> {
        if matches!(self.phase, Phase::CleanedUp) {
            return None;
        }
        if self.write_wanted() && !self.timers.pending(Timer::WriteRetry, now) {
            let ticket = self.new_ticket();
            let (values, next_plog_offset) = self.unflushed.begin_write(ticket, self.stored_offset);
            return Some(Work::Write(WriteRequest {
                ticket,
                values,
                next_plog_offset,
            }));
        }
        if let Some(probe) = self.poll_probe(now) {
            return Some(probe);
        }
        if self.probe.in_flight.is_some() {
            // One read at a time: the actualizer's next one waits for the probe's answer.
            return None;
        }
        let unflushed = self.unflushed.count();
        let max_unflushed = self.max_unflushed;
        let ticket = Ticket(self.next_ticket);
        let Phase::Actualizing(a) = &mut self.phase else {
            return None;
        };
        if self.timers.pending(Timer::ActualizeRetry, now) {
            return None;
        }
        let work = match &mut a.step {
            Step::ReadOffset { issued } if issued.is_none() => {
                *issued = Some(ticket);
                Work::ReadNextOffset { ticket }
            }
            Step::Replay { from, issued } if issued.is_none() => {
                if unflushed >= max_unflushed {
                    // Still held back: look again one batcher delay from now.
                    if self.timers.expired(Timer::ReplayRecheck, now) {
                        let at = now.saturating_add(self.batcher_delay);
                        self.timers.set(Timer::ReplayRecheck, at);
                    }
                    return None;
                }
                *issued = Some(ticket);
                self.timers.stop(Timer::ReplayRecheck);
                Work::ReadPlog {
                    ticket,
                    from: *from,
                }
            }
            _ => return None,
        };
        self.next_ticket += 1;
        Some(work)
    }

    /// Whether [`poll_work`](Self::poll_work) might hand out work now: false only where it
    /// certainly would not (ready, no write wanted, no timer armed), so that a caller polling
    /// after every call skips it in the usual case. A hint; `poll_work` decides.
    #[inline]
    pub fn may_have_work(&self) -> bool {
        !matches!(self.phase, Phase::Ready) || self.write_wanted() || !self.timers.none_armed()
    }

    /// Whether the flusher wants to begin a write (once its retry delay, if any, has passed):
    /// nothing is in flight and values wait; and while actualizing, at least half of
    /// `max_unflushed_values` of them. A replay so writes the view in large batches, not once
    /// per page: a page's values are durable in the PLog already, and a write per page would
    /// write nearly every value it replays (per key, only the maximum of a batch is written).
    /// Before the replay could stall on backpressure the threshold is reached, and the replay's
    /// end (the phase leaves actualizing) writes what is left.
    fn write_wanted(&self) -> bool {
        self.unflushed.in_flight().is_none()
            && self.unflushed.has_waiting()
            && (!matches!(self.phase, Phase::Actualizing(_))
                || self.unflushed.count() >= (self.max_unflushed / 2).max(1))
    }

    /// Reports that the [`Work::Write`] under `ticket` is durable in storage.
    pub fn complete_write(&mut self, ticket: Ticket) -> Result<(), Error> {
        self.check_alive()?;
        if self.unflushed.in_flight() != Some(ticket) {
            return Err(self.ticket_error(ticket, "a write"));
        }
        if self.superseded_write.take() == Some(ticket) && self.reading_beside_write() {
            if let Some(offset) = self.requeue_superseded() {
                self.stored_offset = self.stored_offset.max(offset);
            }
        } else if let Some(offset) = self.unflushed.write_done() {
            self.stored_offset = offset;
        }
        self.storage_answered();
        self.timers.stop(Timer::WriteRetry);
        self.after_write_settled();
        Ok(())
    }

    fn check_alive(&self) -> Result<(), Error> {
        match self.phase {
            Phase::CleanedUp => Err(Error::CleanedUp),
            _ => Ok(()),
        }
    }

    fn new_ticket(&mut self) -> Ticket {
        let t = Ticket(self.next_ticket);
        self.next_ticket += 1;
        t
    }

    /// The error for a report under `ticket` that does not match the work `expected`.
    fn ticket_error(&self, ticket: Ticket, expected: &'static str) -> Error {
        match self.outstanding(ticket) {
            Some(actual) if actual != expected => Error::WrongResultKind {
                ticket,
                expected: actual,
            },
            _ => Error::UnknownTicket(ticket),
        }
    }

    /// What outstanding work `ticket` names, if any.
    fn outstanding(&self, ticket: Ticket) -> Option<&'static str> {
        if self.unflushed.in_flight() == Some(ticket) {
            return Some("a write");
        }
        if self.probe.in_flight == Some(ticket) {
            return Some("a next PLog offset read");
        }
        if self
            .pending_load
            .as_ref()
            .is_some_and(|l| l.ticket == ticket)
        {
            return Some("a numbers read");
        }
        match &self.phase {
            Phase::Actualizing(a) => match a.step {
                Step::ReadOffset { issued: Some(t) } if t == ticket => {
                    Some("a next PLog offset read")
                }
                Step::Replay {
                    issued: Some(t), ..
                } if t == ticket => Some("a PLog read"),
                _ => None,
            },
            _ => None,
        }
    }
}
