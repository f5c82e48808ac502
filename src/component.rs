//! wit-bindgen glue: the [`Shell`] as the `sequencer-plugin` world of `wit/sequencer.wit`.
//!
//! Type conversion only: every export converts its arguments, calls the shell (which holds
//! every rule) with the imports as its [`Host`], and converts the result. Nothing here panics
//! on bad input; refused calls come back as the WIT `error` variant.

use core::cell::RefCell;
use std::rc::Rc;

use crate::shell::{BatchStop, EventStart, Host, Read, Shell};
use crate::{
    ContractLimits, Error, Instant, NotNowReason, Number, Outcome, Params, PlogPage, PlogWords,
    SeqId, SeqValue, Start, Status, Ticket, Work, WriteWords, WsId, facade,
};

wit_bindgen::generate!({
    path: "wit",
    world: "sequencer-plugin",
});

use self::exports::sequencer::plugin::events::{self as wit_events, Guest as GuestEvents};
use self::exports::sequencer::plugin::instance::Guest as GuestInstance;
use self::exports::sequencer::plugin::sequencer_api::{
    Guest, GuestSequencer, Sequencer as Handle, SequencerBorrow,
};
use self::sequencer::plugin::types as wit;
use self::sequencer::plugin::{clock, observer, storage};

/// The component's export root.
struct Component;

impl Guest for Component {
    type Sequencer = Plugin;
}

/// One sequencer resource: its shell, also the instance's sequencer (`CURRENT`) from its
/// `create` until it is dropped or another is created.
struct Plugin(Seq);

/// A sequencer's shell and its calls, each written once: the resource's methods and the
/// `instance` interface's functions both delegate to them (see `calls!`).
#[derive(Clone)]
struct Seq(Rc<RefCell<Shell>>);

thread_local! {
    /// The instance's sequencer: the one `create` made last, until its resource is dropped.
    static CURRENT: RefCell<Option<Seq>> = const { RefCell::new(None) };
    /// The full error of the `instance` interface's last refused call (its `last-error`).
    static LAST_ERROR: RefCell<Option<wit::Error>> = const { RefCell::new(None) };
    /// The flat words of the write being begun (see `Imports::begin`).
    static WRITE_WORDS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl Drop for Plugin {
    fn drop(&mut self) {
        CURRENT.with(|c| {
            let mut current = c.borrow_mut();
            if current
                .as_ref()
                .is_some_and(|s| Rc::ptr_eq(&s.0, &(self.0).0))
            {
                *current = None;
            }
        });
    }
}

/// The imports, as the shell's host.
struct Imports;

impl Host for Imports {
    fn now(&mut self) -> Instant {
        Instant::from_nanos(clock::now())
    }

    fn read_numbers(&mut self, ws: WsId, seqs: &[SeqId]) -> Read {
        read(storage::read_numbers(ws, seqs))
    }

    fn read_numbers_many(&mut self, ws: &[WsId], seqs: &[SeqId]) -> Read {
        read(storage::read_numbers_many(ws, seqs))
    }

    fn begin(&mut self, work: Work) {
        match work {
            Work::Write(w) => {
                // One buffer for every write's words: a write of a replayed page holds tens of
                // thousands of values, not worth a fresh allocation each.
                WRITE_WORDS.with(|words| {
                    let mut words = words.borrow_mut();
                    WriteWords::encode_into(&w.values, &mut words);
                    storage::begin_write(w.ticket.0, &words, w.next_plog_offset);
                });
            }
            Work::ReadNextOffset { ticket } => storage::begin_read_next_offset(ticket.0),
            Work::ReadPlog { ticket, from } => storage::begin_read_plog(ticket.0, from),
        }
    }

    fn set_wake(&mut self, at: Option<Instant>) {
        clock::set_wake(at.map(Instant::as_nanos));
    }

    fn status_changed(&mut self, status: Status) {
        observer::status_changed(to_wit_status(status));
    }
}

fn read(r: Result<Vec<Number>, String>) -> Read {
    match r {
        Ok(numbers) => Read::Numbers(numbers),
        Err(message) => Read::Failed(message),
    }
}

impl Seq {
    fn with<R>(
        &self, f: impl FnOnce(&mut Shell, &mut Imports) -> Result<R, Error>,
    ) -> Result<R, wit::Error> {
        f(&mut self.0.borrow_mut(), &mut Imports).map_err(to_wit_error)
    }
}

impl Plugin {
    fn create(params: wit::Params) -> Result<Handle, wit::Error> {
        let shell = Shell::create(from_wit_params(&params), &mut Imports).map_err(to_wit_error)?;
        let seq = Seq(Rc::new(RefCell::new(shell)));
        CURRENT.with(|c| *c.borrow_mut() = Some(seq.clone()));
        Ok(Handle::new(Plugin(seq)))
    }
}

/// What an `instance` function answers when the instance has no sequencer.
trait NoSequencer {
    fn no_sequencer() -> Self;
}

impl<T> NoSequencer for Result<T, wit::Error> {
    fn no_sequencer() -> Self {
        Err(wit::Error::CleanedUp)
    }
}

impl NoSequencer for wit::Status {
    fn no_sequencer() -> Self {
        wit::Status::CleanedUp
    }
}

impl NoSequencer for wit::HeldNumbers {
    fn no_sequencer() -> Self {
        wit::HeldNumbers {
            cached: 0,
            unflushed: 0,
            transaction: 0,
        }
    }
}

impl NoSequencer for () {
    fn no_sequencer() -> Self {}
}

/// A method's answer as the `instance` function of the same name gives it: a refusal without
/// its text (kept for `last-error`), everything else as it is.
trait ForInstance {
    type Answer;
    fn for_instance(self) -> Self::Answer;
}

impl<T> ForInstance for Result<T, wit::Error> {
    type Answer = Result<T, wit::Refusal>;
    #[inline]
    fn for_instance(self) -> Self::Answer {
        self.map_err(keep_last_error)
    }
}

/// A refused call's refusal, its full error kept for `last-error` (out of line: refusals are
/// rare).
#[cold]
#[inline(never)]
fn keep_last_error(e: wit::Error) -> wit::Refusal {
    let refusal = refusal_of(&e);
    LAST_ERROR.with(|last| *last.borrow_mut() = Some(e));
    refusal
}

macro_rules! answered_as_is {
    ($($t:ty),*) => {
        $(impl ForInstance for $t {
            type Answer = $t;
            fn for_instance(self) -> $t {
                self
            }
        })*
    };
}

answered_as_is!(wit::Status, wit::HeldNumbers, ());

/// The case of `e`, without its payload.
fn refusal_of(e: &wit::Error) -> wit::Refusal {
    match e {
        wit::Error::InvalidParams(_) => wit::Refusal::InvalidParams,
        wit::Error::CleanedUp => wit::Refusal::CleanedUp,
        wit::Error::TransactionInProgress => wit::Refusal::TransactionInProgress,
        wit::Error::NoTransaction => wit::Refusal::NoTransaction,
        wit::Error::UnknownWsKind(_) => wit::Refusal::UnknownWsKind,
        wit::Error::UnknownSeqId(_) => wit::Refusal::UnknownSeqId,
        wit::Error::AlreadyActualizing => wit::Refusal::AlreadyActualizing,
        wit::Error::SequenceExhausted(_) => wit::Refusal::SequenceExhausted,
        wit::Error::UnknownOperation(_) => wit::Refusal::UnknownOperation,
        wit::Error::WrongOutcome(_) => wit::Refusal::WrongOutcome,
        wit::Error::MalformedNumbers(_) => wit::Refusal::MalformedNumbers,
        wit::Error::MalformedPlogPage(_) => wit::Refusal::MalformedPlogPage,
        wit::Error::Storage(_) => wit::Refusal::Storage,
    }
}

/// Runs `f` on the instance's sequencer (a clone of its handle to the shell, so no borrow of
/// `CURRENT` is held while the call runs).
fn with_current<R: NoSequencer>(f: impl FnOnce(&Seq) -> R) -> R {
    match CURRENT.with(|c| c.borrow().clone()) {
        Some(seq) => f(&seq),
        None => R::no_sequencer(),
    }
}

/// The sequencer's calls: the resource's methods and the `instance` functions, each a
/// delegation to the `Seq` method of the same name.
macro_rules! calls {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        impl GuestSequencer for Plugin {
            fn create(params: wit::Params) -> Result<Handle, wit::Error> {
                Plugin::create(params)
            }
            $(fn $name(&self, $($arg: $ty),*) -> $ret {
                self.0.$name($($arg),*)
            })*
        }

        impl GuestInstance for Component {
            $(fn $name($($arg: $ty),*) -> <$ret as ForInstance>::Answer {
                with_current(|s| s.$name($($arg),*)).for_instance()
            })*

            fn last_error() -> Option<wit::Error> {
                LAST_ERROR.with(|e| e.borrow().clone())
            }
        }
    };
}

calls! {
    fn start(kind: u16, ws: u64) -> Result<wit::StartOutcome, wit::Error>;
    fn start_status(kind: u16, ws: u64) -> Result<(wit::StartOutcome, wit::Status), wit::Error>;
    fn next(seq: u16) -> Result<u64, wit::Error>;
    fn flush() -> Result<(), wit::Error>;
    fn flush_status() -> Result<wit::Status, wit::Error>;
    fn actualize() -> Result<(), wit::Error>;
    fn cleanup() -> ();
    fn status() -> wit::Status;
    fn held_numbers() -> wit::HeldNumbers;
    fn deliver(op: u64, outcome: wit::Outcome) -> Result<(), wit::Error>;
    fn pump() -> ();
    fn deliver_plog_words(op: u64, words: Vec<u64>, next: u64, end: bool) -> Result<(), wit::Error>;
    fn start_next(kind: u16, ws: u64, seqs: Vec<u16>) -> Result<(wit::StartOutcome, Vec<u64>), wit::Error>;
    fn flush_start_next(kind: u16, ws: u64, seqs: Vec<u16>) -> Result<(wit::StartOutcome, Vec<u64>), wit::Error>;
    fn start_next_quad(kind: u16, ws: u64, seqs: wit::SeqQuad) -> Result<wit::QuadNumbers, wit::Error>;
    fn flush_start_next_quad(kind: u16, ws: u64, seqs: wit::SeqQuad) -> Result<wit::QuadNumbers, wit::Error>;
    fn stage() -> Result<(), wit::Error>;
    fn start_batch(kind: u16, ws: Vec<u64>, seqs: wit::SeqQuad) -> Result<wit::BatchNumbers, wit::Error>;
    fn flush_start_batch(kind: u16, ws: Vec<u64>, seqs: wit::SeqQuad) -> Result<wit::BatchNumbers, wit::Error>;
    fn start_ahead(kind: u16, ws: u64, seqs: wit::SeqQuad) -> Result<wit::AheadNumbers, wit::Error>;
    fn take(taken: wit::SeqQuad) -> Result<(), wit::Error>;
    fn take_next(taken: wit::SeqQuad, seq: u16) -> Result<u64, wit::Error>;
    fn take_flush(taken: wit::SeqQuad) -> Result<wit::Status, wit::Error>;
    fn take_flush_start_ahead(taken: wit::SeqQuad, kind: u16, ws: u64, seqs: wit::SeqQuad) -> Result<wit::AheadNumbers, wit::Error>;
    fn actualize_beside_write() -> Result<(), wit::Error>;
}

impl Seq {
    fn start(&self, kind: u16, ws: u64) -> Result<wit::StartOutcome, wit::Error> {
        self.with(|s, h| s.start(kind, ws, h).and_then(start_outcome))
    }

    fn start_status(
        &self, kind: u16, ws: u64,
    ) -> Result<(wit::StartOutcome, wit::Status), wit::Error> {
        self.with(|s, h| {
            let (start, status) = s.start_status(kind, ws, h)?;
            Ok((start_outcome(start)?, to_wit_status(status)))
        })
    }

    fn flush_status(&self) -> Result<wit::Status, wit::Error> {
        self.with(|s, h| s.flush_status(h).map(to_wit_status))
    }

    fn next(&self, seq: u16) -> Result<u64, wit::Error> {
        self.0.borrow_mut().next(seq).map_err(to_wit_error)
    }

    fn flush(&self) -> Result<(), wit::Error> {
        self.with(|s, h| s.flush(h))
    }

    fn actualize(&self) -> Result<(), wit::Error> {
        self.with(|s, h| s.actualize(h))
    }

    fn actualize_beside_write(&self) -> Result<(), wit::Error> {
        self.with(|s, h| s.actualize_beside_write(h))
    }

    fn cleanup(&self) {
        self.0.borrow_mut().cleanup(&mut Imports);
    }

    fn status(&self) -> wit::Status {
        to_wit_status(self.0.borrow().status())
    }

    fn held_numbers(&self) -> wit::HeldNumbers {
        let h = self.0.borrow().held_numbers();
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        wit::HeldNumbers {
            cached: clamp(h.cached),
            unflushed: clamp(h.unflushed),
            transaction: clamp(h.transaction),
        }
    }

    fn deliver(&self, op: u64, outcome: wit::Outcome) -> Result<(), wit::Error> {
        let ticket = Ticket(op);
        match outcome {
            wit::Outcome::Written => self.with(|s, h| s.deliver(ticket, Outcome::Written, h)),
            wit::Outcome::NextOffset(offset) => {
                self.with(|s, h| s.deliver(ticket, Outcome::NextOffset(offset), h))
            }
            wit::Outcome::PlogPage(page) => {
                let values: Vec<_> = page
                    .values
                    .iter()
                    .map(|v| (v.offset, SeqValue::new(v.ws, v.seq, v.value)))
                    .collect();
                let page = PlogPage {
                    values: &values,
                    next: page.next,
                    end: page.end,
                };
                self.with(|s, h| s.deliver(ticket, Outcome::PlogPage(page), h))
            }
            wit::Outcome::Failed(_) => self.with(|s, h| s.deliver(ticket, Outcome::Failed, h)),
        }
    }

    fn pump(&self) {
        self.0.borrow_mut().pump(&mut Imports);
    }

    fn deliver_plog_words(
        &self, op: u64, words: Vec<u64>, next: u64, end: bool,
    ) -> Result<(), wit::Error> {
        // Read in place: the list is the guest's own buffer, written by the host's one copy.
        let page = PlogWords {
            words: &words,
            next,
            end,
        };
        self.with(|s, h| s.deliver(Ticket(op), Outcome::PlogWords(page), h))
    }

    fn start_next(
        &self, kind: u16, ws: u64, seqs: Vec<u16>,
    ) -> Result<(wit::StartOutcome, Vec<u64>), wit::Error> {
        let mut numbers = vec![0; seqs.len()];
        let outcome = self.with(|s, h| {
            s.start_next(kind, ws, &seqs, &mut numbers, h)
                .and_then(start_outcome)
        })?;
        Ok(numbers_unless_not_now(outcome, numbers))
    }

    fn flush_start_next(
        &self, kind: u16, ws: u64, seqs: Vec<u16>,
    ) -> Result<(wit::StartOutcome, Vec<u64>), wit::Error> {
        let mut numbers = vec![0; seqs.len()];
        let outcome = self.with(|s, h| {
            s.flush_start_next(kind, ws, &seqs, &mut numbers, h)
                .and_then(start_outcome)
        })?;
        Ok(numbers_unless_not_now(outcome, numbers))
    }

    fn start_next_quad(
        &self, kind: u16, ws: u64, seqs: wit::SeqQuad,
    ) -> Result<wit::QuadNumbers, wit::Error> {
        let (seqs, count) = quad_seqs(&seqs)?;
        let mut n = [0; 4];
        let outcome = self.with(|s, h| {
            s.start_next(kind, ws, &seqs[..count], &mut n, h)
                .and_then(start_outcome)
        })?;
        Ok(quad_numbers(outcome, n))
    }

    fn flush_start_next_quad(
        &self, kind: u16, ws: u64, seqs: wit::SeqQuad,
    ) -> Result<wit::QuadNumbers, wit::Error> {
        let (seqs, count) = quad_seqs(&seqs)?;
        let mut n = [0; 4];
        let outcome = self.with(|s, h| {
            s.flush_start_next(kind, ws, &seqs[..count], &mut n, h)
                .and_then(start_outcome)
        })?;
        Ok(quad_numbers(outcome, n))
    }

    fn stage(&self) -> Result<(), wit::Error> {
        self.0.borrow_mut().stage().map_err(to_wit_error)
    }

    fn start_batch(
        &self, kind: u16, ws: Vec<u64>, seqs: wit::SeqQuad,
    ) -> Result<wit::BatchNumbers, wit::Error> {
        let (seqs, count) = quad_seqs(&seqs)?;
        let mut numbers = Vec::new();
        let batch = self.with(|s, h| s.start_batch(kind, &ws, &seqs[..count], &mut numbers, h))?;
        batch_numbers(batch, numbers)
    }

    fn flush_start_batch(
        &self, kind: u16, ws: Vec<u64>, seqs: wit::SeqQuad,
    ) -> Result<wit::BatchNumbers, wit::Error> {
        let (seqs, count) = quad_seqs(&seqs)?;
        let mut numbers = Vec::new();
        let batch =
            self.with(|s, h| s.flush_start_batch(kind, &ws, &seqs[..count], &mut numbers, h))?;
        batch_numbers(batch, numbers)
    }

    fn start_ahead(
        &self, kind: u16, ws: u64, seqs: wit::SeqQuad,
    ) -> Result<wit::AheadNumbers, wit::Error> {
        let (seqs, count) = quad_seqs(&seqs)?;
        let mut n = [0; 4];
        let answer = self.with(|s, h| s.start_ahead(kind, ws, &seqs[..count], &mut n, h))?;
        ahead_numbers(answer, n)
    }

    fn take_flush_start_ahead(
        &self, taken: wit::SeqQuad, kind: u16, ws: u64, seqs: wit::SeqQuad,
    ) -> Result<wit::AheadNumbers, wit::Error> {
        let (taken, taken_count) = quad_seqs(&taken)?;
        let (seqs, count) = quad_seqs(&seqs)?;
        let mut n = [0; 4];
        let answer = self.with(|s, h| {
            let taken = &taken[..taken_count];
            s.take_flush_start_ahead(taken, kind, ws, &seqs[..count], &mut n, h)
        })?;
        ahead_numbers(answer, n)
    }

    fn take(&self, taken: wit::SeqQuad) -> Result<(), wit::Error> {
        let (taken, count) = quad_seqs(&taken)?;
        self.0
            .borrow_mut()
            .take(&taken[..count])
            .map_err(to_wit_error)
    }

    fn take_next(&self, taken: wit::SeqQuad, seq: u16) -> Result<u64, wit::Error> {
        let (taken, count) = quad_seqs(&taken)?;
        self.0
            .borrow_mut()
            .take_next(&taken[..count], seq)
            .map_err(to_wit_error)
    }

    fn take_flush(&self, taken: wit::SeqQuad) -> Result<wit::Status, wit::Error> {
        let (taken, count) = quad_seqs(&taken)?;
        self.with(|s, h| s.take_flush(&taken[..count], h).map(to_wit_status))
    }
}

/// The reply of `start-event-ahead` (and `take-flush-start-event-ahead`).
fn event_ahead(start: wit_events::EventStart, n: [u64; 4]) -> wit_events::EventAhead {
    wit_events::EventAhead {
        start,
        n0: n[0],
        n1: n[1],
        n2: n[2],
        n3: n[3],
    }
}

/// The reply of `start-ahead` (and `take-flush-start-ahead`): the start and status, and the
/// numbers ahead.
fn ahead_numbers(
    (start, status): (Start, Status), n: [u64; 4],
) -> Result<wit::AheadNumbers, wit::Error> {
    Ok(wit::AheadNumbers {
        outcome: start_outcome(start).map_err(to_wit_error)?,
        status: to_wit_status(status),
        n0: n[0],
        n1: n[1],
        n2: n[2],
        n3: n[3],
    })
}

/// The WIT start outcome; a load cannot come back here (the imports answer every read at
/// once), but it is an error rather than a panic.
fn start_outcome(start: Start) -> Result<wit::StartOutcome, Error> {
    match start {
        Start::Started(offset) => Ok(wit::StartOutcome::Started(offset)),
        Start::NotNow(reason) => Ok(wit::StartOutcome::NotNow(to_wit_reason(reason))),
        Start::Load(_) => Err(not_answered()),
    }
}

fn not_answered() -> Error {
    Error::Storage("a numbers read was not answered".into())
}

/// `start-next`'s reply: the numbers only if it started.
fn numbers_unless_not_now(
    outcome: wit::StartOutcome, mut numbers: Vec<u64>,
) -> (wit::StartOutcome, Vec<u64>) {
    if !matches!(outcome, wit::StartOutcome::Started(_)) {
        numbers.clear();
    }
    (outcome, numbers)
}

fn batch_numbers(batch: crate::Batch, numbers: Vec<u64>) -> Result<wit::BatchNumbers, wit::Error> {
    let not_now = match batch.stop {
        None => None,
        Some(BatchStop::NotNow(reason)) => Some(to_wit_reason(reason)),
        Some(BatchStop::Load(_) | BatchStop::LoadMany(_)) => {
            return Err(to_wit_error(not_answered()));
        }
    };
    Ok(wit::BatchNumbers {
        first_offset: batch.first_offset,
        started: batch.started,
        not_now,
        numbers,
    })
}

/// The sequences a `seq-quad` names, or `invalid-params` if it names more than four.
#[inline]
fn quad_seqs(q: &wit::SeqQuad) -> Result<([u16; 4], usize), wit::Error> {
    if q.count > 4 {
        return Err(too_many_in_quad(q.count));
    }
    Ok(([q.s0, q.s1, q.s2, q.s3], usize::from(q.count)))
}

/// The refusal of a `seq-quad` naming `count` (more than four) sequences.
#[cold]
fn too_many_in_quad(count: u8) -> wit::Error {
    to_wit_error(Error::InvalidArgument(format!(
        "a seq-quad names at most 4 sequences, not {count}"
    )))
}

fn quad_numbers(outcome: wit::StartOutcome, n: [u64; 4]) -> wit::QuadNumbers {
    wit::QuadNumbers {
        outcome,
        n0: n[0],
        n1: n[1],
        n2: n[2],
        n3: n[3],
    }
}

fn to_wit_reason(reason: NotNowReason) -> wit::NotNowReason {
    match reason {
        NotNowReason::Actualizing => wit::NotNowReason::Actualizing,
        NotNowReason::TooManyUnflushed => wit::NotNowReason::TooManyUnflushed,
    }
}

fn to_wit_status(status: Status) -> wit::Status {
    match status {
        Status::Actualizing => wit::Status::Actualizing,
        Status::Ready => wit::Status::Ready,
        Status::InTransaction => wit::Status::InTransaction,
        Status::CleanedUp => wit::Status::CleanedUp,
    }
}

fn from_wit_params(p: &wit::Params) -> Params {
    let limits = ContractLimits {
        max_unflushed_values: p.max_unflushed_values,
        lru_cache_size: p.lru_cache_size,
        batcher_delay_ns: p.batcher_delay_ns,
        retry_delay_ns: p.retry_delay_ns,
        max_retry_delay_ns: p.max_retry_delay_ns,
        retry_jitter_percent: p.retry_jitter_percent,
    };
    Params::from_contract(limits, p.kinds.iter().map(|k| (k.kind, &k.sequences[..])))
}

fn to_wit_params(p: &Params) -> wit::Params {
    let limits = p.contract_limits();
    wit::Params {
        kinds: (p.contract_kinds().into_iter())
            .map(|(kind, sequences)| wit::KindSequences { kind, sequences })
            .collect(),
        max_unflushed_values: limits.max_unflushed_values,
        lru_cache_size: limits.lru_cache_size,
        batcher_delay_ns: limits.batcher_delay_ns,
        retry_delay_ns: limits.retry_delay_ns,
        max_retry_delay_ns: limits.max_retry_delay_ns,
        retry_jitter_percent: limits.retry_jitter_percent,
    }
}

/// The WIT event start; a load cannot come back here (see `start_outcome`).
fn to_wit_event_start(start: EventStart) -> Result<wit_events::EventStart, Error> {
    match start {
        EventStart::Started(o) => Ok(wit_events::EventStart::Started(wit_events::EventOffsets {
            plog_offset: o.plog_offset,
            wlog_offset: o.wlog_offset,
        })),
        EventStart::NotNow(reason) => Ok(wit_events::EventStart::NotNow(to_wit_reason(reason))),
        EventStart::Load(_) => Err(not_answered()),
    }
}

fn to_wit_error(e: Error) -> wit::Error {
    match e {
        Error::InvalidParams(p) => wit::Error::InvalidParams(p.to_string()),
        Error::CleanedUp => wit::Error::CleanedUp,
        Error::TransactionInProgress => wit::Error::TransactionInProgress,
        Error::NoTransaction => wit::Error::NoTransaction,
        Error::UnknownWsKind(k) => wit::Error::UnknownWsKind(k),
        Error::UnknownSeqId { kind, seq } => wit::Error::UnknownSeqId(wit::SeqRef { kind, seq }),
        Error::AlreadyActualizing => wit::Error::AlreadyActualizing,
        Error::SequenceExhausted { kind, seq } => {
            wit::Error::SequenceExhausted(wit::SeqRef { kind, seq })
        }
        Error::UnknownTicket(t) => wit::Error::UnknownOperation(t.0),
        Error::WrongResultKind { ticket, .. } => wit::Error::WrongOutcome(ticket.0),
        e @ Error::MalformedNumbers { .. } => wit::Error::MalformedNumbers(e.to_string()),
        e @ Error::MalformedPlogPage { .. } => wit::Error::MalformedPlogPage(e.to_string()),
        Error::Storage(message) => wit::Error::Storage(message),
        Error::InvalidArgument(message) => wit::Error::InvalidParams(message),
        // Only the JavaScript glue makes it; the WIT's numbers are all exact.
        e @ Error::UnsafeInteger(_) => wit::Error::InvalidParams(e.to_string()),
    }
}

impl GuestEvents for Component {
    fn system_params(base: wit::Params) -> wit::Params {
        to_wit_params(&facade::system_params(from_wit_params(&base)))
    }

    fn start_event(s: SequencerBorrow<'_>, ws: u64) -> Result<wit_events::EventStart, wit::Error> {
        s.get::<Plugin>()
            .0
            .with(|s, h| to_wit_event_start(s.start_event(ws, h)?))
    }

    fn start_event_ahead(
        s: SequencerBorrow<'_>, ws: u64, seqs: wit::SeqQuad,
    ) -> Result<wit_events::EventAhead, wit::Error> {
        let (seqs, count) = quad_seqs(&seqs)?;
        let mut n = [0; 4];
        let start = s.get::<Plugin>().0.with(|s, h| {
            to_wit_event_start(s.start_event_ahead(ws, &seqs[..count], &mut n, h)?)
        })?;
        Ok(event_ahead(start, n))
    }

    fn take_flush_start_event_ahead(
        s: SequencerBorrow<'_>, taken: wit::SeqQuad, ws: u64, seqs: wit::SeqQuad,
    ) -> Result<wit_events::EventAhead, wit::Error> {
        let (taken, taken_count) = quad_seqs(&taken)?;
        let (seqs, count) = quad_seqs(&seqs)?;
        let mut n = [0; 4];
        let start = s.get::<Plugin>().0.with(|s, h| {
            let taken = &taken[..taken_count];
            let r = s.take_flush_start_event_ahead(taken, ws, &seqs[..count], &mut n, h)?;
            to_wit_event_start(r)
        })?;
        Ok(event_ahead(start, n))
    }

    fn next_rec_id(s: SequencerBorrow<'_>) -> Result<u64, wit::Error> {
        s.get::<Plugin>().0.with(|s, _| s.next_rec_id())
    }

    fn next_c_rec_id(s: SequencerBorrow<'_>) -> Result<u64, wit::Error> {
        s.get::<Plugin>().0.with(|s, _| s.next_c_rec_id())
    }

    fn finish_event(s: SequencerBorrow<'_>) -> Result<(), wit::Error> {
        s.get::<Plugin>().0.with(|s, h| s.finish_event(h))
    }

    fn cancel_event(s: SequencerBorrow<'_>) -> Result<(), wit::Error> {
        s.get::<Plugin>().0.with(|s, h| s.cancel_event(h))
    }

    fn status(s: SequencerBorrow<'_>) -> wit_events::SequenceStatus {
        match s.get::<Plugin>().0.0.borrow().sequence_status() {
            facade::SequenceStatus::None => wit_events::SequenceStatus::None,
            facade::SequenceStatus::Recover => wit_events::SequenceStatus::Recover,
            facade::SequenceStatus::Ready => wit_events::SequenceStatus::Ready,
            facade::SequenceStatus::Eventing => wit_events::SequenceStatus::Eventing,
            facade::SequenceStatus::Finished => wit_events::SequenceStatus::Finished,
        }
    }
}

export!(Component);
