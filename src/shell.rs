//! The shell: every call of the plugin contract (`wit/sequencer.wit`), written once, in core
//! types, around the [`Sequencer`] state machine.
//!
//! The core decides; the shell composes its calls into the contract's calls and talks to the
//! host through the small [`Host`] trait: it reads numbers (inline, or by handing out a load
//! when the host cannot answer at once), begins the storage work the core hands out, asks for
//! wake-ups and reports status changes. Front-ends (the WASI component, the wasm-bindgen
//! build, the simulator's native engine, the conformance suite's native runner) only convert
//! their types to these and back; every rule of a composite call lives here:
//!
//! - a start reads missing numbers inline (at most twice), or hands the read out;
//! - a refused `next` inside `start-next` drops the whole transaction;
//! - a batch refuses before its first event without changing anything, reads every cold
//!   workspace with one `read-numbers-many` first, stages events until "not now", and drops
//!   everything on a later refusal;
//! - the flushing calls flush, start, then begin due storage work once, after the start;
//! - `start-event` (docs/DESIGN.md §5.1) starts in the system kind and takes the WLog offset,
//!   dropping the event if that is refused.
//!
//! After every call that can change them, the shell begins the storage work now due, keeps the
//! host's wake-up current and reports the status if it changed: the host never infers either.
//! The hot paths (a start whose numbers are in memory, `next`, the flushing calls, a batch of
//! warm workspaces) allocate nothing here.

use crate::cache::CacheSlot;
use crate::error::Error;
use crate::facade::{self, EventOffsets, SequenceStatus};
use crate::params::Params;
use crate::sequencer::{HeldNumbers, Sequencer, Status};
use crate::types::{Instant, Number, PLogOffset, SeqId, WsId, WsKind};
use crate::work::{
    CheckedWords, NotNowReason, Outcome, ReadNumbers, ReadNumbersMany, Start, Ticket, Work,
};

/// How a host answered a numbers read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Read {
    /// The stored numbers, in the order asked (0 for a key never stored).
    Numbers(Vec<Number>),
    /// The read failed; the message says why.
    Failed(String),
    /// The host cannot answer synchronously: the shell hands the read out instead (as
    /// [`Start::Load`] or a [`BatchStop`]), and the host reports it later.
    Later,
}

/// What the shell needs of its host: the imports of the contract, in core types.
pub trait Host {
    /// The host's monotonic clock (`clock.now`). Read only when the core has a deadline.
    fn now(&mut self) -> Instant;

    /// The stored last numbers of `seqs` in workspace `ws` (`storage.read-numbers`).
    fn read_numbers(&mut self, ws: WsId, seqs: &[SeqId]) -> Read;

    /// [`read_numbers`](Self::read_numbers) for each workspace of `ws`, `seqs.len()` numbers
    /// per workspace, workspace after workspace (`storage.read-numbers-many`).
    fn read_numbers_many(&mut self, ws: &[WsId], seqs: &[SeqId]) -> Read;

    /// Begin `work` outside the call and report its outcome with [`Shell::deliver`]
    /// (`storage.begin-*`).
    fn begin(&mut self, work: Work);

    /// Begin a write whose values are still in the flat words of `storage.begin-write`,
    /// checked: a host that stores them on another thread can keep the words and decode them
    /// there. By default they are decoded now and handed to [`begin`](Self::begin).
    fn begin_write_words(
        &mut self, ticket: Ticket, words: CheckedWords, next_plog_offset: PLogOffset,
    ) {
        self.begin(words.write_work(ticket, next_plog_offset));
    }

    /// Call [`Shell::pump`] once the clock reaches `at` (replacing any earlier request);
    /// `None` cancels (`clock.set-wake`).
    fn set_wake(&mut self, at: Option<Instant>);

    /// The sequencer's status changed to `status` (`observer.status-changed`).
    fn status_changed(&mut self, status: Status);
}

/// The reply of the batch calls: events numbered and staged, in the order asked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// The PLog offset of the first event started (the others follow it one by one).
    pub first_offset: PLogOffset,
    /// How many events were started and staged, from the first asked for on.
    pub started: u32,
    /// Why the next event asked for was not started, if one was not.
    pub stop: Option<BatchStop>,
}

/// Why a batch stopped before its last event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchStop {
    /// "Not now": the events started so far stay staged.
    NotNow(NotNowReason),
    /// The next event's numbers must be read (a host that answers later): report them with
    /// [`Shell::complete_numbers`] and call again for the rest; the events started so far
    /// stay staged.
    Load(ReadNumbers),
    /// Before the first event: the cold workspaces' numbers must be read; report them with
    /// [`Shell::complete_numbers_many`] and call again. Nothing changed.
    LoadMany(ReadNumbersMany),
}

/// The outcome of [`Shell::start_event`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventStart {
    /// The event began.
    Started(EventOffsets),
    /// No event began; try again later.
    NotNow(NotNowReason),
    /// The workspace's numbers must be read first (a host that answers later): report them
    /// with [`Shell::complete_numbers`] and call again.
    Load(ReadNumbers),
}

/// One partition's sequencer as the contract exposes it: the core plus what the host was last
/// told (wake-up, status). See the module documentation.
pub struct Shell {
    core: Sequencer,
    /// The wake-up last asked of the host; `None`: the host's view is unknown.
    wake: Option<Option<Instant>>,
    /// The status last reported; `None`: never reported.
    status: Option<Status>,
    /// Inside a call that returns the status (`start_status`, `flush_status`): the status is
    /// not reported through the host, the result carries it.
    quiet: bool,
    /// The clock as last read.
    last_now: Instant,
    /// Scratch lists for a batch's cold workspaces and their kind's sequences.
    ahead: Vec<WsId>,
    /// Where each workspace of the batch sat in the cache when `preload` looked.
    ahead_slots: Vec<Option<CacheSlot>>,
    kind_seqs: Vec<SeqId>,
}

impl Shell {
    /// `create`: a sequencer over `params` that begins actualizing at once (its first storage
    /// work is begun before this returns). Refuses invalid params.
    pub fn create<H: Host + ?Sized>(params: Params, host: &mut H) -> Result<Self, Error> {
        let mut shell = Self {
            core: Sequencer::new(params)?,
            wake: None,
            status: None,
            quiet: false,
            last_now: Instant::default(),
            ahead: Vec::new(),
            ahead_slots: Vec::new(),
            kind_seqs: Vec::new(),
        };
        shell.pump_and_report(host);
        Ok(shell)
    }

    /// The state machine underneath (read-only).
    pub fn core(&self) -> &Sequencer {
        &self.core
    }

    /// `start`: begins a transaction for workspace `ws` of kind `kind`: the PLog offset of its
    /// event, or "not now". Numbers not in memory are read from the host first; a host that
    /// answers later gets [`Start::Load`]. A failed read is [`Error::Storage`]: no transaction
    /// began.
    pub fn start<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: WsId, host: &mut H,
    ) -> Result<Start, Error> {
        let r = self.start_core(kind, ws, host);
        self.report(host);
        r
    }

    /// Reports the numbers read for a [`Start::Load`], [`BatchStop::Load`] or
    /// [`EventStart::Load`] (in the order of its `seqs`, 0 for a key never stored). They are
    /// kept in memory; call the start again to use them.
    pub fn complete_numbers(&mut self, ticket: Ticket, numbers: &[Number]) -> Result<(), Error> {
        self.core.complete_load(ticket, numbers).map(drop)
    }

    /// `complete-numbers-start`: [`complete_numbers`](Self::complete_numbers), then
    /// [`start`](Self::start) of the load's kind and workspace, in one call: the start a load
    /// was handed out for, completed. The start may hand out another load (a sequence that
    /// needs reading now too). A refused report ([`Error::UnknownTicket`] once a start,
    /// `actualize` or `cleanup` dropped the load) changes nothing and starts nothing.
    pub fn complete_numbers_start<H: Host + ?Sized>(
        &mut self, ticket: Ticket, numbers: &[Number], host: &mut H,
    ) -> Result<Start, Error> {
        let (kind, ws, slot) = self.core.complete_load_at(ticket, numbers)?;
        let r = self.start_core_at(kind, ws, Some(slot), host);
        self.report(host);
        r
    }

    /// The numbers read a start of `(kind, ws)` handed out and that is still awaited (see
    /// [`Sequencer::pending_load`]): a caller about to start `(kind, ws)` again may perform
    /// it, and report it with [`complete_numbers_start`](Self::complete_numbers_start),
    /// instead of starting again only to be handed the same read.
    pub fn pending_load(&self, kind: WsKind, ws: WsId) -> Option<(Ticket, &[SeqId])> {
        self.core.pending_load(kind, ws)
    }

    /// Reports the numbers read for a [`BatchStop::LoadMany`] (`seqs.len()` per workspace of
    /// `ws`, in order). They are kept in memory; call the batch again to use them.
    pub fn complete_numbers_many(
        &mut self, kind: WsKind, ws: &[WsId], numbers: &[Number],
    ) -> Result<(), Error> {
        let per = self.core.kind_seqs(kind)?.count();
        if numbers.len() != ws.len() * per {
            return Err(Error::MalformedNumbers {
                expected: ws.len() * per,
                got: numbers.len(),
            });
        }
        for (&w, stored) in ws.iter().zip(numbers.chunks_exact(per.max(1))) {
            self.core.preload(kind, w, stored)?;
        }
        Ok(())
    }

    /// `next`: the next number of sequence `seq` in the transaction in progress.
    #[inline]
    pub fn next(&mut self, seq: SeqId) -> Result<Number, Error> {
        self.core.next(seq)
    }

    /// `flush`: the transaction's events are in the PLog; its numbers go to the flusher.
    pub fn flush<H: Host + ?Sized>(&mut self, host: &mut H) -> Result<(), Error> {
        self.core.flush()?;
        self.pump_and_report(host);
        Ok(())
    }

    /// `start-status`: [`start`](Self::start), with the status after the call returned instead
    /// of reported through [`Host::status_changed`] (a host that keeps the status from the
    /// result needs no import call). A refused start reports a change as `start` does.
    pub fn start_status<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: WsId, host: &mut H,
    ) -> Result<(Start, Status), Error> {
        self.with_status(host, |s, h| s.start_core(kind, ws, h))
    }

    /// `flush-status`: [`flush`](Self::flush), with the status after the call returned instead
    /// of reported (see [`start_status`](Self::start_status)).
    pub fn flush_status<H: Host + ?Sized>(&mut self, host: &mut H) -> Result<Status, Error> {
        self.with_status(host, |s, h| {
            s.core.flush()?;
            s.pump_and_report(h);
            Ok(())
        })
        .map(|((), status)| status)
    }

    /// `start-ahead`: [`start_status`](Self::start_status), and, if it started, into the same
    /// places of `numbers`, the number the first `next` of each of `seqs` would hand out (the
    /// second for a sequence named a second time, ...), not taken (0 where `next` would
    /// refuse). A caller may hand each out once as its sequence's
    /// `next` if it reports it with its next call ([`take_next`](Self::take_next),
    /// [`take_flush`](Self::take_flush), [`take`](Self::take); see [`crate::ahead`]).
    pub fn start_ahead<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: WsId, seqs: &[SeqId], numbers: &mut [Number], host: &mut H,
    ) -> Result<(Start, Status), Error> {
        let r = self.with_status(host, |s, h| s.start_core(kind, ws, h))?;
        Ok(self.ahead_of(r, seqs, numbers))
    }

    /// `take-flush-start-ahead`: a flush the caller deferred (see [`crate::ahead`]), reported
    /// with the numbers handed out before it, then [`start_ahead`](Self::start_ahead): the
    /// per-step path's one call per transaction. An error from the take or the flush leaves
    /// everything as it was; any other comes from the start, the flush done.
    #[allow(clippy::too_many_arguments)]
    pub fn take_flush_start_ahead<H: Host + ?Sized>(
        &mut self, taken: &[SeqId], kind: WsKind, ws: WsId, seqs: &[SeqId], numbers: &mut [Number],
        host: &mut H,
    ) -> Result<(Start, Status), Error> {
        self.core.next_each(taken)?;
        let r = self.with_status(host, |s, h| {
            s.flush_then(h, |s, h| s.start_core(kind, ws, h))
        })?;
        Ok(self.ahead_of(r, seqs, numbers))
    }

    /// A start's answer with, if it started, the numbers ahead of `seqs` in `numbers`.
    fn ahead_of(
        &self, r: (Start, Status), seqs: &[SeqId], numbers: &mut [Number],
    ) -> (Start, Status) {
        if let (Start::Started(_), _) = r {
            self.peek_into(seqs, numbers);
        }
        r
    }

    /// The numbers ahead of `seqs` into the same places of `numbers` (0 where `next` would
    /// refuse): a sequence named again gets the number after, as a second `next` would.
    fn peek_into(&self, seqs: &[SeqId], numbers: &mut [Number]) {
        for (i, (n, &seq)) in numbers.iter_mut().zip(seqs).enumerate() {
            let before = seqs[..i].iter().filter(|&&s| s == seq).count() as u64;
            *n = self.core.peek_nth(seq, before).unwrap_or(0);
        }
    }

    /// `take`: `next` of each of `taken` (numbers a caller handed out ahead), all or nothing.
    pub fn take(&mut self, taken: &[SeqId]) -> Result<(), Error> {
        self.core.next_each(taken).map(drop)
    }

    /// `take-next`: `next` of each of `taken` (all or nothing), then `next(seq)`: `seq`'s
    /// number. A refused `next(seq)` leaves `taken` taken: they were handed out already.
    pub fn take_next(&mut self, taken: &[SeqId], seq: SeqId) -> Result<Number, Error> {
        self.core.next_each(taken)?;
        self.core.next(seq)
    }

    /// `take-flush`: `next` of each of `taken`, then [`flush_status`](Self::flush_status); a
    /// refused take changes nothing.
    pub fn take_flush<H: Host + ?Sized>(
        &mut self, taken: &[SeqId], host: &mut H,
    ) -> Result<Status, Error> {
        self.core.next_each(taken)?;
        self.flush_status(host)
    }

    /// `stage`: ends the open event but not the transaction.
    pub fn stage(&mut self) -> Result<(), Error> {
        self.core.stage()
    }

    /// `actualize`: drops the transaction, if any, and what is unwritten; recovers from
    /// storage and the PLog.
    pub fn actualize<H: Host + ?Sized>(&mut self, host: &mut H) -> Result<(), Error> {
        self.core.actualize()?;
        self.pump_and_report(host);
        Ok(())
    }

    /// `actualize-beside-write`: [`actualize`](Self::actualize), reading storage without
    /// waiting for a write in flight ([`Sequencer::actualize_beside_write`]).
    pub fn actualize_beside_write<H: Host + ?Sized>(&mut self, host: &mut H) -> Result<(), Error> {
        self.core.actualize_beside_write()?;
        self.pump_and_report(host);
        Ok(())
    }

    /// `cleanup`: stops; work in progress is abandoned and later calls are refused.
    pub fn cleanup<H: Host + ?Sized>(&mut self, host: &mut H) {
        self.core.cleanup();
        if self.wake.replace(None) != Some(None) {
            host.set_wake(None);
        }
        self.report(host);
    }

    /// `status`: what the sequencer is doing.
    #[inline]
    pub fn status(&self) -> Status {
        self.core.status()
    }

    /// `held-numbers`: numbers held in memory, by where.
    pub fn held_numbers(&self) -> HeldNumbers {
        self.core.held_numbers()
    }

    /// `deliver`: reports the outcome of the storage work under `ticket`, then begins any work
    /// now due.
    pub fn deliver<H: Host + ?Sized>(
        &mut self, ticket: Ticket, outcome: Outcome<'_>, host: &mut H,
    ) -> Result<(), Error> {
        let result = match outcome {
            Outcome::Written => self.core.complete_write(ticket),
            Outcome::NextOffset(offset) => self.core.complete_next_offset(ticket, offset),
            Outcome::PlogPage(page) => {
                let now = self.read_clock(host);
                self.core.complete_plog_read(ticket, page, now).map(|_| ())
            }
            Outcome::PlogWords(page) => {
                let now = self.read_clock(host);
                self.core.complete_plog_words(ticket, page, now).map(|_| ())
            }
            Outcome::Failed => {
                let now = self.read_clock(host);
                self.core.fail(ticket, now)
            }
        };
        result?;
        self.pump_and_report(host);
        Ok(())
    }

    /// `pump`: begins any work now due. The host calls it when the wake-up it was asked for
    /// comes; it has then forgotten that wake-up, so the shell tells it afresh.
    pub fn pump<H: Host + ?Sized>(&mut self, host: &mut H) {
        self.wake = None;
        self.pump_and_report(host);
    }

    /// `start-next`: `start`, then `next` of each of `seqs` into the same places of `numbers`
    /// (untouched unless started). A refused `next` drops the whole transaction.
    pub fn start_next<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: WsId, seqs: &[SeqId], numbers: &mut [Number], host: &mut H,
    ) -> Result<Start, Error> {
        let r = self.start_next_core(kind, ws, seqs, numbers, host);
        self.report(host);
        r
    }

    /// `flush-start-next`: `flush`, then `start-next`, then the flush's storage work is begun
    /// (after the start). Errors [`Error::NoTransaction`] and [`Error::CleanedUp`] come from
    /// the flush and mean nothing was done; any other comes from the start.
    pub fn flush_start_next<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: WsId, seqs: &[SeqId], numbers: &mut [Number], host: &mut H,
    ) -> Result<Start, Error> {
        self.flush_then(host, |s, h| s.start_next_core(kind, ws, seqs, numbers, h))
    }

    /// `start-batch`: starts, numbers and stages one event per entry of `ws` (all of kind
    /// `kind`), each taking a `next` of each of `seqs` (appended to `numbers`, event after
    /// event), until one is "not now". See [`BatchStop`] for the ways it stops early.
    /// Refusals before the first event change nothing; a later one drops the transaction.
    pub fn start_batch<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: &[WsId], seqs: &[SeqId], numbers: &mut Vec<Number>,
        host: &mut H,
    ) -> Result<Batch, Error> {
        let r = self.start_batch_core(kind, ws, seqs, numbers, host);
        self.report(host);
        r
    }

    /// `flush-start-batch`: `flush`, then `start-batch`, then the flush's storage work is
    /// begun. Errors [`Error::NoTransaction`] and [`Error::CleanedUp`] come from the flush
    /// and mean nothing was done.
    pub fn flush_start_batch<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: &[WsId], seqs: &[SeqId], numbers: &mut Vec<Number>,
        host: &mut H,
    ) -> Result<Batch, Error> {
        self.flush_then(host, |s, h| s.start_batch_core(kind, ws, seqs, numbers, h))
    }

    /// `start-event` (the facade's `StartEvent`, docs/DESIGN.md §5.1): starts an event in workspace
    /// `ws` of [`facade::SYSTEM_KIND`] and takes its WLog offset. Never waits: while recovering it
    /// says "not now" at once. A refused WLog offset drops the event.
    pub fn start_event<H: Host + ?Sized>(
        &mut self, ws: WsId, host: &mut H,
    ) -> Result<EventStart, Error> {
        let mut wlog = [0];
        let r = self
            .start_next_core(
                facade::SYSTEM_KIND,
                ws,
                &[facade::SEQ_WLOG_OFFSET],
                &mut wlog,
                host,
            )
            .map(|start| match start {
                Start::Started(plog_offset) => EventStart::Started(EventOffsets {
                    plog_offset,
                    wlog_offset: wlog[0],
                }),
                Start::NotNow(reason) => EventStart::NotNow(reason),
                Start::Load(read) => EventStart::Load(read),
            });
        self.report(host);
        r
    }

    /// `next-rec-id` (the facade's `NextRecID`, docs/DESIGN.md §5.1).
    pub fn next_rec_id(&mut self) -> Result<Number, Error> {
        self.core.next_rec_id()
    }

    /// `start-event-ahead`: [`start_event`](Self::start_event), and, if it began, the numbers
    /// ahead of `seqs` into the same places of `numbers`, as
    /// [`start_ahead`](Self::start_ahead) gives them.
    pub fn start_event_ahead<H: Host + ?Sized>(
        &mut self, ws: WsId, seqs: &[SeqId], numbers: &mut [Number], host: &mut H,
    ) -> Result<EventStart, Error> {
        let r = self.start_event(ws, host)?;
        if let EventStart::Started(_) = r {
            self.peek_into(seqs, numbers);
        }
        Ok(r)
    }

    /// `take-flush-start-event-ahead`: a flush the caller deferred, reported with the numbers
    /// handed out before it, then [`start_event_ahead`](Self::start_event_ahead), as
    /// [`take_flush_start_ahead`](Self::take_flush_start_ahead) does for `start-ahead`.
    pub fn take_flush_start_event_ahead<H: Host + ?Sized>(
        &mut self, taken: &[SeqId], ws: WsId, seqs: &[SeqId], numbers: &mut [Number], host: &mut H,
    ) -> Result<EventStart, Error> {
        self.core.next_each(taken)?;
        self.flush_then(host, |s, h| s.start_event_ahead(ws, seqs, numbers, h))
    }

    /// `next-c-rec-id` (the facade's `NextCRecID`, docs/DESIGN.md §5.1).
    pub fn next_c_rec_id(&mut self) -> Result<Number, Error> {
        self.core.next_c_rec_id()
    }

    /// `finish-event` (the facade's `FinishEvent`, docs/DESIGN.md §5.1): [`flush`](Self::flush).
    pub fn finish_event<H: Host + ?Sized>(&mut self, host: &mut H) -> Result<(), Error> {
        self.flush(host)
    }

    /// `cancel-event` (the facade's `CancelEvent`, docs/DESIGN.md §5.1):
    /// [`actualize`](Self::actualize) the event in progress; without one (ready, or recovering) it
    /// is refused with [`Error::NoTransaction`] and changes nothing.
    pub fn cancel_event<H: Host + ?Sized>(&mut self, host: &mut H) -> Result<(), Error> {
        match self.core.status() {
            Status::InTransaction => self.actualize(host),
            Status::CleanedUp => Err(Error::CleanedUp),
            Status::Ready | Status::Actualizing => Err(Error::NoTransaction),
        }
    }

    /// The facade's `Status` (docs/DESIGN.md §5.3).
    pub fn sequence_status(&self) -> SequenceStatus {
        self.core.status().into()
    }

    // ---- the rules ---------------------------------------------------------------------------

    /// `flush`, then `start` (one of the start cores), then one pump for both: after the start,
    /// so the write the flush made due carries nothing the start changed. A refused flush does
    /// nothing more.
    fn flush_then<H: Host + ?Sized, R>(
        &mut self, host: &mut H, start: impl FnOnce(&mut Self, &mut H) -> Result<R, Error>,
    ) -> Result<R, Error> {
        self.core.flush()?;
        let r = start(self, host);
        self.pump_and_report(host);
        r
    }

    /// `start`, reading numbers through the host when the core asks for them.
    fn start_core<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: WsId, host: &mut H,
    ) -> Result<Start, Error> {
        self.start_core_at(kind, ws, None, host)
    }

    /// [`start_core`](Self::start_core) with where the workspace's numbers sat in the cache.
    #[inline(always)]
    fn start_core_at<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: WsId, hint: Option<CacheSlot>, host: &mut H,
    ) -> Result<Start, Error> {
        match self.core.start_at(kind, ws, hint)? {
            Start::Load(read) => self.load_and_start(read, host),
            outcome => Ok(outcome),
        }
    }

    /// The rest of a start that must read numbers first: `read` through the host, then the
    /// start again (out of line: most starts find their numbers in memory).
    #[cold]
    #[inline(never)]
    fn load_and_start<H: Host + ?Sized>(
        &mut self, read: ReadNumbers, host: &mut H,
    ) -> Result<Start, Error> {
        let mut outcome = Start::Load(read);
        // A load completes the start; a second load cannot follow because loaded numbers stay
        // cached (the cache holds at least one whole kind), but it is bounded all the same.
        for _ in 0..2 {
            let Start::Load(read) = outcome else {
                return Ok(outcome);
            };
            outcome = match host.read_numbers(read.ws, &read.seqs) {
                Read::Numbers(numbers) => self.core.complete_numbers(read.ticket, &numbers)?,
                Read::Failed(message) => {
                    let _ = self.core.fail(read.ticket, self.last_now);
                    return Err(Error::Storage(message));
                }
                Read::Later => return Ok(Start::Load(read)),
            };
        }
        match outcome {
            Start::Load(_) => Err(Error::Storage(
                "numbers read for start did not stay in memory".into(),
            )),
            started => Ok(started),
        }
    }

    /// `start`, then `next` of each of `seqs` into the same places of `numbers`; a refused
    /// `next` drops the transaction.
    fn start_next_core<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: WsId, seqs: &[SeqId], numbers: &mut [Number], host: &mut H,
    ) -> Result<Start, Error> {
        let outcome = self.start_core(kind, ws, host)?;
        if let Start::Started(_) = outcome {
            for (&seq, number) in seqs.iter().zip(numbers.iter_mut()) {
                match self.core.next(seq) {
                    Ok(n) => *number = n,
                    // Refused as a whole: no transaction stays open behind it.
                    Err(e) => return Err(self.drop_transaction(e, host)),
                }
            }
        }
        Ok(outcome)
    }

    fn start_batch_core<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: &[WsId], seqs: &[SeqId], numbers: &mut Vec<Number>,
        host: &mut H,
    ) -> Result<Batch, Error> {
        self.core.check_seqs(kind, seqs)?;
        let mut batch = Batch::default();
        self.ahead_slots.clear();
        if ws.len() > 1
            && let Some(load) = self.preload(kind, ws, host)?
        {
            batch.stop = Some(BatchStop::LoadMany(load));
            return Ok(batch);
        }
        numbers.reserve(ws.len() * seqs.len());
        for (i, &w) in ws.iter().enumerate() {
            let hint = self.ahead_slots.get(i).copied().flatten();
            let outcome = match self.start_core_at(kind, w, hint, host) {
                Ok(outcome) => outcome,
                // Nothing of this call is staged yet: the refusal changes nothing.
                Err(e) if batch.started == 0 => return Err(e),
                Err(e) => return Err(self.drop_transaction(e, host)),
            };
            match outcome {
                Start::Started(offset) if batch.started == 0 => batch.first_offset = offset,
                Start::Started(_) => {}
                Start::NotNow(reason) => {
                    batch.stop = Some(BatchStop::NotNow(reason));
                    break;
                }
                Start::Load(read) => {
                    batch.stop = Some(BatchStop::Load(read));
                    break;
                }
            }
            for &seq in seqs {
                match self.core.next(seq) {
                    Ok(n) => numbers.push(n),
                    Err(e) => return Err(self.drop_transaction(e, host)),
                }
            }
            if let Err(e) = self.core.stage() {
                return Err(self.drop_transaction(e, host));
            }
            batch.started += 1;
        }
        Ok(batch)
    }

    /// Reads the numbers of every workspace of `ws` a start would load, in one host call;
    /// `Some` if the host answers later. Out of line (with `drop_transaction`): it runs once per
    /// batch, and inlined it made the batch's loop a 7 KB wasm function, past what HotSpot
    /// compiles by default once Chicory makes it a JVM method. Out of line, the component's
    /// batches of 64 took 268 -> 249 ns per event on W1 and 131 -> 120 on W2 (six alternating
    /// rounds, 2026-12-02); Chicory's, the same within the noise.
    #[inline(never)]
    fn preload<H: Host + ?Sized>(
        &mut self, kind: WsKind, ws: &[WsId], host: &mut H,
    ) -> Result<Option<ReadNumbersMany>, Error> {
        let mut ahead = core::mem::take(&mut self.ahead);
        ahead.clear();
        self.core
            .loads_ahead_at(kind, ws, &mut ahead, Some(&mut self.ahead_slots));
        let result = if ahead.is_empty() {
            Ok(None)
        } else {
            self.kind_seqs.clear();
            self.kind_seqs.extend(self.core.kind_seqs(kind)?);
            match host.read_numbers_many(&ahead, &self.kind_seqs) {
                Read::Numbers(stored) => self
                    .complete_numbers_many(kind, &ahead, &stored)
                    .map(|()| None),
                Read::Failed(message) => Err(Error::Storage(message)),
                Read::Later => Ok(Some(ReadNumbersMany {
                    ws: ahead.clone(),
                    seqs: self.kind_seqs.clone(),
                })),
            }
        };
        self.ahead = ahead;
        result
    }

    /// Runs `call` without reporting the status through the host; on success the status after
    /// it is returned (and counts as reported), on a refusal it is reported as usual.
    fn with_status<H: Host + ?Sized, R>(
        &mut self, host: &mut H, call: impl FnOnce(&mut Self, &mut H) -> Result<R, Error>,
    ) -> Result<(R, Status), Error> {
        self.quiet = true;
        let r = call(self, host);
        self.quiet = false;
        match r {
            Ok(value) => {
                let status = self.core.status();
                self.status = Some(status);
                Ok((value, status))
            }
            Err(e) => {
                self.report(host);
                Err(e)
            }
        }
    }

    /// Drops the whole transaction (the caller cannot learn the numbers it held) and returns
    /// `error`. Out of line: a refusal's path.
    #[cold]
    #[inline(never)]
    fn drop_transaction<H: Host + ?Sized>(&mut self, error: Error, host: &mut H) -> Error {
        let _ = self.core.actualize();
        self.pump_and_report(host);
        error
    }

    /// The clock, read through the host (an import call) and remembered.
    fn read_clock<H: Host + ?Sized>(&mut self, host: &mut H) -> Instant {
        self.last_now = host.now();
        self.last_now
    }

    /// Begins every storage operation now due, keeps the host's wake-up current, and reports
    /// the status if it changed.
    fn pump_and_report<H: Host + ?Sized>(&mut self, host: &mut H) {
        // The core makes no decision by the time unless it has a deadline (`poll_timeout`), so
        // the clock (an import call) is read only then; a flush usually has none.
        if self.core.may_have_work() {
            let now = match self.core.poll_timeout() {
                Some(_) => self.read_clock(host),
                None => self.last_now,
            };
            while let Some(work) = self.core.poll_work(now) {
                host.begin(work);
            }
        }
        let wake = self.core.poll_timeout();
        if Some(wake) != self.wake {
            self.wake = Some(wake);
            host.set_wake(wake);
        }
        self.report(host);
    }

    /// Reports the status if it differs from the one last reported.
    #[inline]
    fn report<H: Host + ?Sized>(&mut self, host: &mut H) {
        if self.quiet {
            return;
        }
        let status = self.core.status();
        if self.status != Some(status) {
            self.status = Some(status);
            host.status_changed(status);
        }
    }
}

#[cfg(test)]
mod tests;
