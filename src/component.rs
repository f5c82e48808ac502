//! wit-bindgen glue: the core as the `sequencer-plugin` world of `wit/sequencer.wit`.
//!
//! Thin by design: every export converts its arguments, calls the core, begins whatever storage
//! work the core then has due through the imported `storage`, and converts the result. Nothing
//! here panics on bad input; refused calls come back as the WIT `error` variant.

use core::cell::{Cell, RefCell};
use core::time::Duration;

use crate::{
    Error, Instant, Params, PlogPage, SeqValue, Sequencer, Start, Status, Ticket, Work, facade,
};

wit_bindgen::generate!({
    path: "wit",
    world: "sequencer-plugin",
});

use self::exports::sequencer::plugin::events::{self as wit_events, Guest as GuestEvents};
use self::exports::sequencer::plugin::sequencer_api::{
    Guest, GuestSequencer, Sequencer as Handle, SequencerBorrow,
};
use self::sequencer::plugin::types as wit;
use self::sequencer::plugin::{clock, storage};

/// The component's export root.
struct Component;

impl Guest for Component {
    type Sequencer = Plugin;
}

/// One sequencer resource: the core plus the wake-up last asked of the host (`None`: the host's
/// view is unknown and must be refreshed).
struct Plugin {
    core: RefCell<Sequencer>,
    wake: Cell<Option<Option<u64>>>,
    /// The clock as last read.
    last_now: Cell<u64>,
}

fn now() -> Instant {
    Instant::from_nanos(clock::now())
}

impl Plugin {
    /// Begins every storage operation now due and keeps the host's wake-up current.
    fn pump_core(&self, core: &mut Sequencer) {
        // The core makes no decision by the time unless it has a deadline (`poll_timeout`), so
        // the clock (an import call) is read only then; a flush usually has none.
        let now = match core.poll_timeout() {
            Some(_) => {
                let now = now();
                self.last_now.set(now.as_nanos());
                now
            }
            None => Instant::from_nanos(self.last_now.get()),
        };
        while let Some(work) = core.poll_work(now) {
            match work {
                Work::Write(w) => {
                    let values: Vec<wit::SeqValue> = w.values.iter().map(to_wit_value).collect();
                    storage::begin_write(w.ticket.0, &values, w.next_plog_offset);
                }
                Work::ReadNextOffset { ticket } => storage::begin_read_next_offset(ticket.0),
                Work::ReadPlog { ticket, from } => storage::begin_read_plog(ticket.0, from),
            }
        }
        let wake = core.poll_timeout().map(Instant::as_nanos);
        if Some(wake) != self.wake.get() {
            self.wake.set(Some(wake));
            clock::set_wake(wake);
        }
    }

    /// `start`, reading numbers through the imported storage when the core asks for them.
    fn start_core(
        core: &mut Sequencer,
        kind: u16,
        ws: u64,
    ) -> Result<wit::StartOutcome, wit::Error> {
        let mut outcome = core.start(kind, ws).map_err(to_wit_error)?;
        // A load completes the start; a second load cannot follow because loaded numbers stay
        // cached (the cache holds at least one whole kind), but it is bounded all the same.
        for _ in 0..2 {
            let Start::Load(read) = outcome else { break };
            outcome = match storage::read_numbers(read.ws, &read.seqs) {
                Ok(numbers) => core
                    .complete_numbers(read.ticket, &numbers)
                    .map_err(to_wit_error)?,
                Err(message) => {
                    let _ = core.fail(read.ticket, now());
                    return Err(wit::Error::Storage(message));
                }
            };
        }
        match outcome {
            Start::Started(offset) => Ok(wit::StartOutcome::Started(offset)),
            Start::NotNow(reason) => Ok(wit::StartOutcome::NotNow(match reason {
                crate::NotNowReason::Actualizing => wit::NotNowReason::Actualizing,
                crate::NotNowReason::TooManyUnflushed => wit::NotNowReason::TooManyUnflushed,
            })),
            Start::Load(_) => Err(wit::Error::Storage(
                "numbers read for start did not stay in memory".into(),
            )),
        }
    }
}

impl GuestSequencer for Plugin {
    fn create(params: wit::Params) -> Result<Handle, wit::Error> {
        let core = Sequencer::new(from_wit_params(&params)).map_err(to_wit_error)?;
        let plugin = Plugin {
            core: RefCell::new(core),
            wake: Cell::new(None),
            last_now: Cell::new(0),
        };
        plugin.pump_core(&mut plugin.core.borrow_mut());
        Ok(Handle::new(plugin))
    }

    fn start(&self, kind: u16, ws: u64) -> Result<wit::StartOutcome, wit::Error> {
        Self::start_core(&mut self.core.borrow_mut(), kind, ws)
    }

    fn next(&self, seq: u16) -> Result<u64, wit::Error> {
        self.core.borrow_mut().next(seq).map_err(to_wit_error)
    }

    fn flush(&self) -> Result<(), wit::Error> {
        let mut core = self.core.borrow_mut();
        core.flush().map_err(to_wit_error)?;
        self.pump_core(&mut core);
        Ok(())
    }

    fn actualize(&self) -> Result<(), wit::Error> {
        let mut core = self.core.borrow_mut();
        core.actualize().map_err(to_wit_error)?;
        self.pump_core(&mut core);
        Ok(())
    }

    fn cleanup(&self) {
        self.core.borrow_mut().cleanup();
        if self.wake.replace(Some(None)) != Some(None) {
            clock::set_wake(None);
        }
    }

    fn status(&self) -> wit::Status {
        match self.core.borrow().status() {
            Status::Actualizing => wit::Status::Actualizing,
            Status::Ready => wit::Status::Ready,
            Status::InTransaction => wit::Status::InTransaction,
            Status::CleanedUp => wit::Status::CleanedUp,
        }
    }

    fn held_numbers(&self) -> wit::HeldNumbers {
        let h = self.core.borrow().held_numbers();
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        wit::HeldNumbers {
            cached: clamp(h.cached),
            unflushed: clamp(h.unflushed),
            transaction: clamp(h.transaction),
        }
    }

    fn deliver(&self, op: u64, outcome: wit::Outcome) -> Result<(), wit::Error> {
        let mut core = self.core.borrow_mut();
        let ticket = Ticket(op);
        let result = match outcome {
            wit::Outcome::Written => core.complete_write(ticket),
            wit::Outcome::NextOffset(offset) => core.complete_next_offset(ticket, offset),
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
                core.complete_plog_read(ticket, page, now()).map(|_| ())
            }
            wit::Outcome::Failed(_) => core.fail(ticket, now()),
        };
        result.map_err(to_wit_error)?;
        self.pump_core(&mut core);
        Ok(())
    }

    fn pump(&self) {
        // The host calls this when a wake-up came due and has forgotten it: tell it afresh.
        self.wake.set(None);
        self.pump_core(&mut self.core.borrow_mut());
    }

    fn start_next(
        &self,
        kind: u16,
        ws: u64,
        seqs: Vec<u16>,
    ) -> Result<(wit::StartOutcome, Vec<u64>), wit::Error> {
        self.start_next_core(&mut self.core.borrow_mut(), kind, ws, &seqs)
    }

    fn flush_start_next(
        &self,
        kind: u16,
        ws: u64,
        seqs: Vec<u16>,
    ) -> Result<(wit::StartOutcome, Vec<u64>), wit::Error> {
        self.flush_then(|p, core| p.start_next_core(core, kind, ws, &seqs))
    }

    fn start_next_quad(
        &self,
        kind: u16,
        ws: u64,
        seqs: wit::SeqQuad,
    ) -> Result<wit::QuadNumbers, wit::Error> {
        let (seqs, count) = quad_seqs(&seqs)?;
        self.start_next_quad_core(&mut self.core.borrow_mut(), kind, ws, &seqs[..count])
    }

    fn flush_start_next_quad(
        &self,
        kind: u16,
        ws: u64,
        seqs: wit::SeqQuad,
    ) -> Result<wit::QuadNumbers, wit::Error> {
        let (seqs, count) = quad_seqs(&seqs)?;
        self.flush_then(|p, core| p.start_next_quad_core(core, kind, ws, &seqs[..count]))
    }

    fn stage(&self) -> Result<(), wit::Error> {
        self.core.borrow_mut().stage().map_err(to_wit_error)
    }

    fn start_batch(
        &self,
        kind: u16,
        ws: Vec<u64>,
        seqs: wit::SeqQuad,
    ) -> Result<wit::BatchNumbers, wit::Error> {
        let (seqs, count) = quad_seqs(&seqs)?;
        self.start_batch_core(&mut self.core.borrow_mut(), kind, &ws, &seqs[..count])
    }

    fn flush_start_batch(
        &self,
        kind: u16,
        ws: Vec<u64>,
        seqs: wit::SeqQuad,
    ) -> Result<wit::BatchNumbers, wit::Error> {
        let (seqs, count) = quad_seqs(&seqs)?;
        self.flush_then(|p, core| p.start_batch_core(core, kind, &ws, &seqs[..count]))
    }
}

impl Plugin {
    /// `flush`, then `start` (one of the start cores), then one pump for both: after the start,
    /// so the write the flush made due carries nothing the start changed. A refused flush does
    /// nothing more.
    fn flush_then<R>(
        &self,
        start: impl FnOnce(&Self, &mut Sequencer) -> Result<R, wit::Error>,
    ) -> Result<R, wit::Error> {
        let mut core = self.core.borrow_mut();
        core.flush().map_err(to_wit_error)?;
        let result = start(self, &mut core);
        self.pump_core(&mut core);
        result
    }

    /// `start`, then `next` of each of `seqs` (at most four), as a `quad-numbers`.
    fn start_next_quad_core(
        &self,
        core: &mut Sequencer,
        kind: u16,
        ws: u64,
        seqs: &[u16],
    ) -> Result<wit::QuadNumbers, wit::Error> {
        let mut numbers = [0; 4];
        let outcome = self.start_next_into(core, kind, ws, seqs, &mut numbers)?;
        Ok(quad_numbers(outcome, numbers))
    }

    /// `start`, then `next` of each of `seqs`; on a refused `next` the transaction is dropped.
    fn start_next_core(
        &self,
        core: &mut Sequencer,
        kind: u16,
        ws: u64,
        seqs: &[u16],
    ) -> Result<(wit::StartOutcome, Vec<u64>), wit::Error> {
        let mut numbers = vec![0; seqs.len()];
        let outcome = self.start_next_into(core, kind, ws, seqs, &mut numbers)?;
        if !matches!(outcome, wit::StartOutcome::Started(_)) {
            numbers.clear();
        }
        Ok((outcome, numbers))
    }

    /// `start`, then `next` of each of `seqs` into the same places of `numbers` (untouched
    /// unless started); on a refused `next` the transaction is dropped.
    fn start_next_into(
        &self,
        core: &mut Sequencer,
        kind: u16,
        ws: u64,
        seqs: &[u16],
        numbers: &mut [u64],
    ) -> Result<wit::StartOutcome, wit::Error> {
        let outcome = Self::start_core(core, kind, ws)?;
        if !matches!(outcome, wit::StartOutcome::Started(_)) {
            return Ok(outcome);
        }
        for (&seq, number) in seqs.iter().zip(numbers.iter_mut()) {
            match core.next(seq) {
                Ok(n) => *number = n,
                // The call is refused as a whole: no transaction stays open behind it.
                Err(e) => return Err(self.drop_transaction(core, to_wit_error(e))),
            }
        }
        Ok(outcome)
    }
}

impl Plugin {
    /// Starts, numbers and stages one event per entry of `ws` until one is "not now".
    fn start_batch_core(
        &self,
        core: &mut Sequencer,
        kind: u16,
        ws: &[u64],
        seqs: &[u16],
    ) -> Result<wit::BatchNumbers, wit::Error> {
        core.check_seqs(kind, seqs).map_err(to_wit_error)?;
        if ws.len() > 1 {
            Self::preload(core, kind, ws)?;
        }
        let mut batch = wit::BatchNumbers {
            first_offset: 0,
            started: 0,
            not_now: None,
            numbers: Vec::with_capacity(ws.len() * seqs.len()),
        };
        for &w in ws {
            let outcome = match Self::start_core(core, kind, w) {
                Ok(outcome) => outcome,
                // Nothing of this call is staged yet: the refusal changes nothing.
                Err(e) if batch.started == 0 => return Err(e),
                Err(e) => return Err(self.drop_transaction(core, e)),
            };
            match outcome {
                wit::StartOutcome::Started(offset) if batch.started == 0 => {
                    batch.first_offset = offset;
                }
                wit::StartOutcome::Started(_) => {}
                wit::StartOutcome::NotNow(reason) => {
                    batch.not_now = Some(reason);
                    break;
                }
            }
            for &seq in seqs {
                match core.next(seq) {
                    Ok(n) => batch.numbers.push(n),
                    Err(e) => return Err(self.drop_transaction(core, to_wit_error(e))),
                }
            }
            if let Err(e) = core.stage() {
                return Err(self.drop_transaction(core, to_wit_error(e)));
            }
            batch.started += 1;
        }
        Ok(batch)
    }

    /// Reads the numbers of every workspace of `ws` a start would load, in one import call.
    fn preload(core: &mut Sequencer, kind: u16, ws: &[u64]) -> Result<(), wit::Error> {
        let mut ahead = Vec::new();
        core.loads_ahead(kind, ws, &mut ahead);
        if ahead.is_empty() {
            return Ok(());
        }
        let seqs: Vec<u16> = core.kind_seqs(kind).map_err(to_wit_error)?.collect();
        let stored = storage::read_numbers_many(&ahead, &seqs).map_err(wit::Error::Storage)?;
        if stored.len() != ahead.len() * seqs.len() {
            return Err(to_wit_error(Error::MalformedNumbers {
                expected: ahead.len() * seqs.len(),
                got: stored.len(),
            }));
        }
        for (&w, numbers) in ahead.iter().zip(stored.chunks_exact(seqs.len().max(1))) {
            core.preload(kind, w, numbers).map_err(to_wit_error)?;
        }
        Ok(())
    }

    /// Drops the whole transaction (the caller cannot learn the numbers it held) and returns
    /// `error`.
    fn drop_transaction(&self, core: &mut Sequencer, error: wit::Error) -> wit::Error {
        let _ = core.actualize();
        self.pump_core(core);
        error
    }
}

/// The sequences a `seq-quad` names, or `invalid-params` if it names more than four.
fn quad_seqs(q: &wit::SeqQuad) -> Result<([u16; 4], usize), wit::Error> {
    if q.count > 4 {
        return Err(wit::Error::InvalidParams(format!(
            "a seq-quad names at most 4 sequences, not {}",
            q.count
        )));
    }
    Ok(([q.s0, q.s1, q.s2, q.s3], usize::from(q.count)))
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

fn to_wit_value(v: &SeqValue) -> wit::SeqValue {
    wit::SeqValue {
        ws: v.key.ws,
        seq: v.key.seq,
        value: v.value,
    }
}

fn from_wit_params(p: &wit::Params) -> Params {
    let mut params = Params::new()
        .with_max_unflushed_values(p.max_unflushed_values as usize)
        .with_lru_cache_size(p.lru_cache_size as usize)
        .with_batcher_delay_on_overflow(Duration::from_nanos(p.batcher_delay_ns))
        .with_retry_delay(
            Duration::from_nanos(p.retry_delay_ns),
            Duration::from_nanos(p.max_retry_delay_ns),
        );
    for k in &p.kinds {
        params.seq_types.entry(k.kind).or_default();
        for &(seq, initial) in &k.sequences {
            params = params.with_seq(k.kind, seq, initial);
        }
    }
    params
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
    }
}

impl GuestEvents for Component {
    fn system_params(base: wit::Params) -> wit::Params {
        // As the core's `facade::system_params`: the system sequences replace any of the same
        // ids in kind 0; kind 0's other sequences and the other kinds are kept.
        let system = [
            (facade::SEQ_WLOG_OFFSET, facade::FIRST_WLOG_OFFSET),
            (facade::SEQ_REC_ID, facade::FIRST_REC_ID),
            (facade::SEQ_CREC_ID, facade::FIRST_CREC_ID),
        ];
        let mut params = base;
        if !params.kinds.iter().any(|k| k.kind == facade::SYSTEM_KIND) {
            params.kinds.push(wit::KindSequences {
                kind: facade::SYSTEM_KIND,
                sequences: Vec::new(),
            });
        }
        for kind in params
            .kinds
            .iter_mut()
            .filter(|k| k.kind == facade::SYSTEM_KIND)
        {
            kind.sequences
                .retain(|(seq, _)| !system.iter().any(|(s, _)| s == seq));
            kind.sequences.extend(system);
        }
        params
    }

    fn start_event(s: SequencerBorrow<'_>, ws: u64) -> Result<wit_events::EventStart, wit::Error> {
        let plugin = s.get::<Plugin>();
        let mut core = plugin.core.borrow_mut();
        match Plugin::start_core(&mut core, facade::SYSTEM_KIND, ws)? {
            wit::StartOutcome::NotNow(reason) => Ok(wit_events::EventStart::NotNow(reason)),
            wit::StartOutcome::Started(plog_offset) => match core.next(facade::SEQ_WLOG_OFFSET) {
                Ok(wlog_offset) => Ok(wit_events::EventStart::Started(wit_events::EventOffsets {
                    plog_offset,
                    wlog_offset,
                })),
                Err(e) => {
                    let _ = core.actualize();
                    plugin.pump_core(&mut core);
                    Err(to_wit_error(e))
                }
            },
        }
    }

    fn next_rec_id(s: SequencerBorrow<'_>) -> Result<u64, wit::Error> {
        s.get::<Plugin>()
            .core
            .borrow_mut()
            .next_rec_id()
            .map_err(to_wit_error)
    }

    fn next_c_rec_id(s: SequencerBorrow<'_>) -> Result<u64, wit::Error> {
        s.get::<Plugin>()
            .core
            .borrow_mut()
            .next_c_rec_id()
            .map_err(to_wit_error)
    }

    fn finish_event(s: SequencerBorrow<'_>) -> Result<(), wit::Error> {
        s.get::<Plugin>().flush()
    }

    fn cancel_event(s: SequencerBorrow<'_>) -> Result<(), wit::Error> {
        s.get::<Plugin>().actualize()
    }

    fn status(s: SequencerBorrow<'_>) -> wit_events::SequenceStatus {
        match s.get::<Plugin>().core.borrow().sequence_status() {
            facade::SequenceStatus::None => wit_events::SequenceStatus::None,
            facade::SequenceStatus::Recover => wit_events::SequenceStatus::Recover,
            facade::SequenceStatus::Ready => wit_events::SequenceStatus::Ready,
            facade::SequenceStatus::Eventing => wit_events::SequenceStatus::Eventing,
            facade::SequenceStatus::Finished => wit_events::SequenceStatus::Finished,
        }
    }
}

export!(Component);
