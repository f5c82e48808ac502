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
use crate::unflushed::Unflushed;
use crate::work::{Ticket, Work, WriteRequest};

mod actualizer;
mod numbering;
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
    /// The stored next offset the last actualization read (0: not read yet). Past a superseded
    /// write's offset it was stored by another writer, whose view holds every number of that
    /// write's events at least as large: the write's values are then dropped, never served or
    /// written again ([`Self::superseded_by_view`]).
    offset_read: PLogOffset,
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
            offset_read: 0,
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
        // The workspace of the last flush again (a hot one, the place checked when the
        // transaction started).
        let hot = tx.in_order && tx.cached.is_some() && tx.cached == self.last_slot;
        if self.slots.iter().any(|s| s.touched) {
            self.unflushed.raise_ws(
                tx.ws,
                self.slots
                    .iter()
                    .filter(|s| s.touched)
                    .map(|s| (s.seq, s.last)),
            );
        }
        if hot {
            // Its cache node keeps its older values until `settle`, as the next start most
            // likely continues from the slots. Others are raised now.
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
        self.offset_read = 0;
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
        let superseded = self.superseded_write.take() == Some(ticket);
        if superseded && self.superseded_by_view() {
            if let Some(offset) = self.unflushed.write_done() {
                self.stored_offset = self.stored_offset.max(offset);
            }
        } else if superseded && self.reading_beside_write() {
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
