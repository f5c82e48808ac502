//! wasm-bindgen glue: the [`Shell`] as a JavaScript class, for the driver in `js/`.
//!
//! Type conversion only; every rule is the shell's. The boundary is shaped for speed and for
//! JavaScript's numbers:
//!
//! - Every integer crosses as a JS `number` (`f64`). Inputs must be safe integers (at most
//!   `Number.MAX_SAFE_INTEGER`, code `INVALID_ARGUMENT` otherwise); a sequence whose next number
//!   would not be a safe integer is refused with code `UNSAFE_INTEGER`. Plain numbers cost
//!   nothing to pass, where `BigInt` would allocate on every call.
//! - No call throws and none allocates on the success path of a single event. A refused call
//!   returns [`Sentinel::Refused`]; the code and message of the last refusal are then read with
//!   [`SequencerCore::error_code`] and [`SequencerCore::error_message`]. The sentinels, work
//!   kinds and statuses are enums this module exports, so the driver mirrors none of them.
//! - The host's numbers reads happen in JavaScript (they may be asynchronous): the shell hands
//!   them out as loads ([`Sentinel::Load`], [`Sentinel::LoadMany`]), the driver performs them,
//!   reports them with `completeNumbers` / `completeNumbersMany` and calls again (a `start`'s
//!   load: `completeNumbersStart` reports it and starts in one call; `loadRequestFor` finds a
//!   start's load still pending, so a second `start` need not ask for it again, and answers in
//!   place, in the module's memory read through `wasmMemory()`: a returned `Vec` costs an
//!   allocation, a copy and a second crossing to free it, more than the rest of the call).
//! - Storage work the shell begins waits in a queue the driver takes from (`takeWork`); the
//!   wake-up it asks for is `wakeAt()`. Work and PLog pages cross as flat arrays of numbers.
//! - Time crosses as milliseconds on the driver's clock (`clock.now()`, read by the shell only
//!   when the core has a deadline) and becomes the core's nanoseconds.
//!
//! By concern: the conversions of numbers, times and refusals at the boundary ([`convert`]),
//! the construction parameters ([`params`]), the vocabulary tables the driver checks itself
//! against ([`vocabulary`]); this module holds the sequencer class and its host.

use std::collections::VecDeque;

use wasm_bindgen::prelude::*;

use crate::shell::{Batch, BatchStop, EventStart, Host, Read, Shell};
use crate::{
    Error, Instant, NotNowReason, Number, Outcome, PlogPage, ReadNumbers, ReadNumbersMany, SeqId,
    SeqValue, Start, Status, Ticket, Work, WsId,
};

use convert::{code, instant, message, to_f64, to_u16, to_u64};
pub use params::CoreParams;

mod convert;
mod params;
mod vocabulary;

/// What the starting calls return instead of an offset (offsets are at least 1).
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sentinel {
    /// The call was refused; the reason is in `errorCode` / `errorMessage`.
    Refused = -1,
    /// Not now: actualization is in progress.
    NotNowActualizing = -2,
    /// Not now: too many values wait to be flushed.
    NotNowTooManyUnflushed = -3,
    /// Numbers must be read first (`loadRequest`, then `completeNumbers`), then the call made
    /// again (for `start`: `completeNumbersStart` does both).
    Load = -4,
    /// A batch's cold workspaces must be read first (`loadManyWs`, `loadSeqs`, then
    /// `completeNumbersMany`), then the call made again.
    LoadMany = -5,
}

/// What `takeWork` took.
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkKind {
    /// Nothing to do now.
    None = 0,
    /// Write `workValues()`, then `workNextOffset()`.
    Write = 1,
    /// Read the stored next PLog offset.
    ReadNextOffset = 2,
    /// Read PLog events from `workFrom()` on.
    ReadPlog = 3,
}

/// What `status()` returns (`statusNames()[status]` is its name).
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreStatus {
    /// Recovering from storage and the PLog.
    Actualizing = 0,
    /// Ready for a transaction.
    Ready = 1,
    /// A transaction is in progress.
    InTransaction = 2,
    /// Cleaned up (closed).
    CleanedUp = 3,
}

impl From<Status> for CoreStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Actualizing => Self::Actualizing,
            Status::Ready => Self::Ready,
            Status::InTransaction => Self::InTransaction,
            Status::CleanedUp => Self::CleanedUp,
        }
    }
}

/// The module's `WebAssembly.Memory`, where calls that answer in place (`loadRequestFor`) put
/// their answer for the driver to read (through a view renewed when the memory grew).
#[wasm_bindgen(js_name = wasmMemory)]
pub fn wasm_memory() -> JsValue {
    wasm_bindgen::memory()
}

#[wasm_bindgen]
extern "C" {
    /// The driver's clock: an object whose `now()` gives milliseconds.
    #[wasm_bindgen(typescript_type = "{ now(): number }")]
    pub type Clock;

    #[wasm_bindgen(method)]
    fn now(this: &Clock) -> f64;
}

/// The shell's host in JavaScript: reads are the driver's (answered later), storage work waits
/// in a queue, the wake-up and the status are kept for the driver to read.
struct JsHost {
    clock: Clock,
    queue: VecDeque<Work>,
    wake: Option<Instant>,
}

impl Host for JsHost {
    fn now(&mut self) -> Instant {
        instant(self.clock.now())
    }

    fn read_numbers(&mut self, _ws: WsId, _seqs: &[SeqId]) -> Read {
        Read::Later
    }

    fn read_numbers_many(&mut self, _ws: &[WsId], _seqs: &[SeqId]) -> Read {
        Read::Later
    }

    fn begin(&mut self, work: Work) {
        self.queue.push_back(work);
    }

    fn set_wake(&mut self, at: Option<Instant>) {
        self.wake = at;
    }

    fn status_changed(&mut self, _status: Status) {}
}

/// The sequencer, driven from JavaScript: the shell's calls plus what the driver needs to
/// perform the work it hands out.
///
/// Transactions: `start` (or the batched calls), `next`, then `flush` or `actualize`. Driver:
/// after a call that may begin work, `takeWork` until it returns `WorkKind.None`, perform each
/// item against storage and report it with the matching `complete*` call or `fail`; call
/// `pump` at `wakeAt()`.
#[wasm_bindgen(js_name = SequencerCore)]
pub struct SequencerCore {
    shell: Shell,
    host: JsHost,
    /// The work last taken, for the `work*` getters.
    work: Option<Work>,
    /// The read last handed out, for the `load*` getters.
    load: Option<ReadNumbers>,
    load_many: Option<ReadNumbersMany>,
    /// A number of the open event is beyond `MAX_SAFE`: it must not be flushed or staged.
    unsafe_tx: bool,
    /// Reused buffers: sequences and workspaces asked for, numbers, PLog pages.
    seqs: Vec<SeqId>,
    ws: Vec<WsId>,
    numbers: Vec<Number>,
    page: Vec<(u64, SeqValue)>,
    /// `loadRequestFor`'s answer, read in place by the driver.
    request: Vec<f64>,
    error: Option<Error>,
}

#[wasm_bindgen(js_class = SequencerCore)]
impl SequencerCore {
    /// A sequencer over `params` on `clock`; it begins actualizing (take its work). Throws for
    /// invalid params (call `params.validate()` first to get a coded refusal instead).
    #[wasm_bindgen(constructor)]
    pub fn new(params: &CoreParams, clock: Clock) -> Result<SequencerCore, JsError> {
        let mut host = JsHost {
            clock,
            queue: VecDeque::new(),
            wake: None,
        };
        let shell = Shell::create(params.params().clone(), &mut host)
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(Self {
            shell,
            host,
            work: None,
            load: None,
            load_many: None,
            unsafe_tx: false,
            seqs: Vec::new(),
            ws: Vec::new(),
            numbers: Vec::new(),
            page: Vec::new(),
            request: Vec::new(),
            error: None,
        })
    }

    /// `start`: the PLog offset (≥ 1), or a [`Sentinel`].
    pub fn start(&mut self, kind: f64, ws: f64) -> f64 {
        let r = (|| {
            let kind = to_u16("workspace kind", kind)?;
            let ws = to_u64("workspace id", ws)?;
            self.shell.start(kind, ws, &mut self.host)
        })();
        self.started(r)
    }

    /// Reports the numbers read for a [`Sentinel::Load`] (in the order of `loadRequest()`'s sequences, 0 if never
    /// stored); `0`, or `Refused`. Then make the call again.
    #[wasm_bindgen(js_name = completeNumbers)]
    pub fn complete_numbers(&mut self, ticket: f64, numbers: &[f64]) -> i32 {
        let r = (|| {
            let ticket = Ticket(to_u64("ticket", ticket)?);
            self.read_numbers(numbers)?;
            self.shell.complete_numbers(ticket, &self.numbers)
        })();
        self.done(r)
    }

    /// Reports the numbers read for a [`Sentinel::Load`] as `completeNumbers` does, then makes
    /// the start the load was for (its kind and workspace) in the same call: the PLog offset,
    /// or a [`Sentinel`] (`Load` again if another read is needed). `Refused` with code
    /// `UNKNOWN_TICKET` when the load was dropped meanwhile (start again); any other refusal
    /// of the report leaves the load awaited (`fail` it).
    #[wasm_bindgen(js_name = completeNumbersStart)]
    pub fn complete_numbers_start(&mut self, ticket: f64, numbers: &[f64]) -> f64 {
        let r = (|| {
            let ticket = Ticket(to_u64("ticket", ticket)?);
            self.read_numbers(numbers)?;
            self.shell
                .complete_numbers_start(ticket, &self.numbers, &mut self.host)
        })();
        self.started(r)
    }

    /// The read a start of workspace `ws` of kind `kind` handed out ([`Sentinel::Load`]) and
    /// that is still awaited: perform it and report it with `completeNumbersStart` instead of
    /// starting again. Answered in place, for the driver to read before its next call into the
    /// module: the byte address in `wasmMemory()` of the numbers `[count, ticket, workspace,
    /// ...sequences]` (`count` sequences), in a buffer reused from call to call (no allocation
    /// once it holds the longest read). `0` if none (nor for ids `start` would refuse).
    #[wasm_bindgen(js_name = loadRequestFor)]
    pub fn load_request_for(&mut self, kind: f64, ws: f64) -> usize {
        let (Ok(kind), Ok(ws)) = (to_u16("workspace kind", kind), to_u64("workspace id", ws))
        else {
            return 0;
        };
        let Some((ticket, seqs)) = self.shell.pending_load(kind, ws) else {
            return 0;
        };
        let request = &mut self.request;
        request.clear();
        request.extend([seqs.len() as f64, ticket.0 as f64, ws as f64]);
        request.extend(seqs.iter().map(|&s| f64::from(s)));
        request.as_ptr() as usize
    }

    /// Reports the numbers read for a [`Sentinel::LoadMany`] (`loadSeqs().length` per
    /// workspace of `loadManyWs()`, in order); `0`, or `Refused`. Then make the call again.
    #[wasm_bindgen(js_name = completeNumbersMany)]
    pub fn complete_numbers_many(&mut self, kind: f64, ws: &[f64], numbers: &[f64]) -> i32 {
        let r = (|| {
            let kind = to_u16("workspace kind", kind)?;
            self.read_ws(ws)?;
            self.read_numbers(numbers)?;
            self.shell
                .complete_numbers_many(kind, &self.ws, &self.numbers)
        })();
        self.done(r)
    }

    /// The read [`Sentinel::Load`] asked for, in one call: its ticket, its workspace, then the
    /// sequences whose stored numbers to report, in that order; empty if none was asked for.
    #[wasm_bindgen(js_name = loadRequest)]
    pub fn load_request(&self) -> Vec<f64> {
        self.load.as_ref().map_or_else(Vec::new, |l| {
            let mut request = Vec::with_capacity(2 + l.seqs.len());
            request.extend([l.ticket.0 as f64, l.ws as f64]);
            request.extend(l.seqs.iter().map(|&s| f64::from(s)));
            request
        })
    }

    /// The sequences whose stored numbers [`Sentinel::LoadMany`] asked for, in the order to
    /// report.
    #[wasm_bindgen(js_name = loadSeqs)]
    pub fn load_seqs(&self) -> Vec<u16> {
        self.load_many
            .as_ref()
            .map_or_else(Vec::new, |m| m.seqs.clone())
    }

    /// The workspaces whose numbers [`Sentinel::LoadMany`] asked for, in order.
    #[wasm_bindgen(js_name = loadManyWs)]
    pub fn load_many_ws(&self) -> Vec<f64> {
        self.load_many
            .as_ref()
            .map_or_else(Vec::new, |m| m.ws.iter().map(|&w| w as f64).collect())
    }

    /// `next`: the next number of sequence `seq` in the transaction, or `Refused`.
    pub fn next(&mut self, seq: f64) -> f64 {
        let r = to_u16("sequence id", seq).and_then(|seq| self.shell.next(seq));
        self.number(r)
    }

    /// `flush`: `0`, or `Refused`.
    pub fn flush(&mut self) -> i32 {
        let r = self
            .check_safe()
            .and_then(|()| self.shell.flush(&mut self.host));
        self.done(r)
    }

    /// `stage`: ends the open event but not the transaction; `0`, or `Refused`.
    pub fn stage(&mut self) -> i32 {
        let r = self.check_safe().and_then(|()| self.shell.stage());
        self.done(r)
    }

    /// `actualize`: `0`, or `Refused`.
    pub fn actualize(&mut self) -> i32 {
        let r = self.shell.actualize(&mut self.host);
        if r.is_ok() {
            self.unsafe_tx = false;
        }
        self.done(r)
    }

    /// `cleanup`: stops; work in progress is abandoned and every later call refused.
    pub fn cleanup(&mut self) {
        self.shell.cleanup(&mut self.host);
        self.host.queue.clear();
        self.work = None;
    }

    /// The status, a [`CoreStatus`].
    pub fn status(&self) -> u32 {
        CoreStatus::from(self.shell.status()) as u32
    }

    /// the facade's status (docs/DESIGN.md §5.3; an index into `sequenceStatusNames()`).
    #[wasm_bindgen(js_name = sequenceStatus)]
    pub fn sequence_status(&self) -> u32 {
        self.shell.sequence_status() as u32
    }

    /// Numbers held in memory: `[cached, unflushed, transaction]`.
    #[wasm_bindgen(js_name = heldNumbers)]
    pub fn held_numbers(&self) -> Vec<f64> {
        let h = self.shell.held_numbers();
        vec![h.cached as f64, h.unflushed as f64, h.transaction as f64]
    }

    /// Takes the oldest storage work begun and not taken yet: a [`WorkKind`]; its details are
    /// read with the `work*` getters until the next call.
    #[wasm_bindgen(js_name = takeWork)]
    pub fn take_work(&mut self) -> u32 {
        self.work = self.host.queue.pop_front();
        (match &self.work {
            None => WorkKind::None,
            Some(Work::Write(_)) => WorkKind::Write,
            Some(Work::ReadNextOffset { .. }) => WorkKind::ReadNextOffset,
            Some(Work::ReadPlog { .. }) => WorkKind::ReadPlog,
        }) as u32
    }

    /// The ticket of the work taken.
    #[wasm_bindgen(js_name = workTicket)]
    pub fn work_ticket(&self) -> f64 {
        self.work.as_ref().map_or(-1.0, |w| w.ticket().0 as f64)
    }

    /// `ReadPlog`: the first offset to read.
    #[wasm_bindgen(js_name = workFrom)]
    pub fn work_from(&self) -> f64 {
        match &self.work {
            Some(Work::ReadPlog { from, .. }) => *from as f64,
            _ => -1.0,
        }
    }

    /// `Write`: the next PLog offset to store after the values.
    #[wasm_bindgen(js_name = workNextOffset)]
    pub fn work_next_offset(&self) -> f64 {
        match &self.work {
            Some(Work::Write(w)) => w.next_plog_offset as f64,
            _ => -1.0,
        }
    }

    /// `Write`: the values to store, as three blocks of equal length: workspaces, then
    /// sequences, then numbers.
    #[wasm_bindgen(js_name = workValues)]
    pub fn work_values(&self) -> Vec<f64> {
        let Some(Work::Write(w)) = &self.work else {
            return Vec::new();
        };
        let n = w.values.len();
        let mut out = vec![0.0; 3 * n];
        for (i, v) in w.values.iter().enumerate() {
            out[i] = v.key.ws as f64;
            out[n + i] = f64::from(v.key.seq);
            out[2 * n + i] = v.value as f64;
        }
        out
    }

    /// The instant (ms on the driver's clock) at which to call `pump`; `-1` for none.
    #[wasm_bindgen(js_name = wakeAt)]
    pub fn wake_at(&self) -> f64 {
        self.host.wake.map_or(-1.0, |t| t.as_nanos() as f64 / 1e6)
    }

    /// `pump`: begins any work now due (call at `wakeAt()`).
    pub fn pump(&mut self) {
        self.shell.pump(&mut self.host);
    }

    /// Reports a write durable; `0`, or `Refused`.
    #[wasm_bindgen(js_name = completeWrite)]
    pub fn complete_write(&mut self, ticket: f64) -> i32 {
        self.deliver(ticket, || Ok(Outcome::Written))
    }

    /// Reports the stored next PLog offset (0 if none); `0`, or `Refused`.
    #[wasm_bindgen(js_name = completeNextOffset)]
    pub fn complete_next_offset(&mut self, ticket: f64, offset: f64) -> i32 {
        self.deliver(ticket, || {
            Ok(Outcome::NextOffset(to_u64("next PLog offset", offset)?))
        })
    }

    /// Reports a PLog page as parallel arrays (one entry per value, in offset order), the
    /// offset after the page and whether the PLog ends there; `0`, or `Refused`.
    #[wasm_bindgen(js_name = completePlogRead)]
    #[allow(clippy::too_many_arguments)]
    pub fn complete_plog_read(
        &mut self, ticket: f64, offsets: &[f64], ws: &[f64], seqs: &[f64], values: &[f64],
        next: f64, end: bool,
    ) -> i32 {
        let r = (|| {
            let ticket = Ticket(to_u64("ticket", ticket)?);
            let next = to_u64("page next offset", next)?;
            let n = offsets.len();
            if ws.len() != n || seqs.len() != n || values.len() != n {
                return Err(Error::InvalidArgument(format!(
                    "page arrays differ in length: {n} offsets, {} workspaces, {} sequences, {} values",
                    ws.len(),
                    seqs.len(),
                    values.len()
                )));
            }
            self.page.clear();
            for i in 0..n {
                let offset = to_u64("event offset", offsets[i])?;
                let ws = to_u64("workspace id", ws[i])?;
                let seq = to_u16("sequence id", seqs[i])?;
                let value = to_u64("number", values[i])?;
                self.page.push((offset, SeqValue::new(ws, seq, value)));
            }
            let page = PlogPage {
                values: &self.page,
                next,
                end,
            };
            self.shell
                .deliver(ticket, Outcome::PlogPage(page), &mut self.host)
        })();
        self.done(r)
    }

    /// Reports that the work under `ticket` failed; the shell schedules the retry. `0`, or
    /// `Refused`.
    pub fn fail(&mut self, ticket: f64) -> i32 {
        self.deliver(ticket, || Ok(Outcome::Failed))
    }

    /// `start-next`: `start`, then `next` of each of `seqs` into `out` (unless not started);
    /// the offset or a [`Sentinel`]. A refused `next` drops the transaction.
    #[wasm_bindgen(js_name = startNext)]
    pub fn start_next(&mut self, kind: f64, ws: f64, seqs: &[f64], out: &mut [f64]) -> f64 {
        self.numbered(kind, ws, seqs, out, false)
    }

    /// `flush-start-next`: `flush`, then `start-next`, in one call (one crossing per event).
    #[wasm_bindgen(js_name = flushStartNext)]
    pub fn flush_start_next(&mut self, kind: f64, ws: f64, seqs: &[f64], out: &mut [f64]) -> f64 {
        self.numbered(kind, ws, seqs, out, true)
    }

    /// `start-batch`: numbers and stages one event per workspace of `ws`, each taking a `next`
    /// of each of `seqs`. Returns `[started, firstOffset, stop, ...numbers]`: `stop` is 0 when
    /// every event started, else a [`Sentinel`] (not now, or a load to perform before calling
    /// again); `started` is `Refused` (and nothing else follows) for a refusal.
    #[wasm_bindgen(js_name = startBatch)]
    pub fn start_batch(&mut self, kind: f64, ws: &[f64], seqs: &[f64]) -> Vec<f64> {
        self.batch(kind, ws, seqs, false)
    }

    /// `flush-start-batch`: `flush`, then `start-batch`, in one call (one crossing per batch).
    #[wasm_bindgen(js_name = flushStartBatch)]
    pub fn flush_start_batch(&mut self, kind: f64, ws: &[f64], seqs: &[f64]) -> Vec<f64> {
        self.batch(kind, ws, seqs, true)
    }

    /// `start-event` (docs/DESIGN.md §5.1): the event's PLog offset, its WLog offset in `out[0]`;
    /// or a [`Sentinel`].
    #[wasm_bindgen(js_name = startEvent)]
    pub fn start_event(&mut self, ws: f64, out: &mut [f64]) -> f64 {
        let r = (|| {
            let ws = to_u64("workspace id", ws)?;
            let wlog = match self.shell.start_event(ws, &mut self.host)? {
                EventStart::Started(o) => {
                    if let Some(slot) = out.first_mut() {
                        *slot = to_f64(o.wlog_offset)?;
                    }
                    return Ok(Start::Started(o.plog_offset));
                }
                EventStart::NotNow(reason) => Start::NotNow(reason),
                EventStart::Load(read) => Start::Load(read),
            };
            Ok(wlog)
        })();
        self.started(r)
    }

    /// `next-rec-id` (docs/DESIGN.md §5.1), or `Refused`.
    #[wasm_bindgen(js_name = nextRecId)]
    pub fn next_rec_id(&mut self) -> f64 {
        let r = self.shell.next_rec_id();
        self.number(r)
    }

    /// `next-c-rec-id` (docs/DESIGN.md §5.1), or `Refused`.
    #[wasm_bindgen(js_name = nextCRecId)]
    pub fn next_c_rec_id(&mut self) -> f64 {
        let r = self.shell.next_c_rec_id();
        self.number(r)
    }

    /// `finish-event` (docs/DESIGN.md §5.1): `flush`; `0`, or `Refused`.
    #[wasm_bindgen(js_name = finishEvent)]
    pub fn finish_event(&mut self) -> i32 {
        let r = self
            .check_safe()
            .and_then(|()| self.shell.finish_event(&mut self.host));
        self.done(r)
    }

    /// `cancel-event` (docs/DESIGN.md §5.1): drops the event in progress and recovers; `0`, or
    /// `Refused` (`NO_TRANSACTION` without an event).
    #[wasm_bindgen(js_name = cancelEvent)]
    pub fn cancel_event(&mut self) -> i32 {
        let r = self.shell.cancel_event(&mut self.host);
        if r.is_ok() {
            self.unsafe_tx = false;
        }
        self.done(r)
    }

    /// The code of the last refusal (`""` if none).
    #[wasm_bindgen(js_name = errorCode)]
    pub fn error_code(&self) -> String {
        code(&self.error)
    }

    /// The message of the last refusal (`""` if none).
    #[wasm_bindgen(js_name = errorMessage)]
    pub fn error_message(&self) -> String {
        message(&self.error)
    }
}

impl SequencerCore {
    /// Records a refusal.
    #[cold]
    fn refuse(&mut self, e: Error) {
        self.error = Some(e);
    }

    fn done(&mut self, r: Result<(), Error>) -> i32 {
        match r {
            Ok(()) => 0,
            Err(e) => {
                self.refuse(e);
                Sentinel::Refused as i32
            }
        }
    }

    /// A number for JavaScript: refused (and the open event marked unsafe) beyond
    /// `MAX_SAFE`.
    fn number(&mut self, r: Result<Number, Error>) -> f64 {
        match r.and_then(|n| {
            to_f64(n).inspect_err(|_| {
                self.unsafe_tx = true;
            })
        }) {
            Ok(n) => n,
            Err(e) => {
                self.refuse(e);
                f64::from(Sentinel::Refused as i32)
            }
        }
    }

    /// `UNSAFE_INTEGER` if the open event issued a number JavaScript cannot hold exactly:
    /// such an event may only be actualized.
    fn check_safe(&self) -> Result<(), Error> {
        if self.unsafe_tx && self.shell.status() == Status::InTransaction {
            return Err(Error::UnsafeInteger(
                "the transaction issued a number beyond Number.MAX_SAFE_INTEGER; actualize it instead"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The JS encoding of a start: the offset, or a sentinel (a load is kept for the getters).
    fn started(&mut self, r: Result<Start, Error>) -> f64 {
        match r {
            Ok(Start::Started(offset)) => {
                self.unsafe_tx = false;
                offset as f64
            }
            Ok(Start::NotNow(reason)) => {
                self.unsafe_tx = false;
                f64::from(not_now(reason) as i32)
            }
            Ok(Start::Load(read)) => {
                self.keep_load(Some(read), None);
                f64::from(Sentinel::Load as i32)
            }
            Err(e) => {
                self.refuse(e);
                f64::from(Sentinel::Refused as i32)
            }
        }
    }

    fn keep_load(&mut self, load: Option<ReadNumbers>, many: Option<ReadNumbersMany>) {
        self.load = load;
        self.load_many = many;
    }

    /// `numbers` as stored numbers into the reused buffer.
    fn read_numbers(&mut self, numbers: &[f64]) -> Result<(), Error> {
        self.numbers.clear();
        for &n in numbers {
            self.numbers.push(to_u64("stored number", n)?);
        }
        Ok(())
    }

    /// `ws` as workspace ids into the reused buffer.
    fn read_ws(&mut self, ws: &[f64]) -> Result<(), Error> {
        self.ws.clear();
        for &w in ws {
            self.ws.push(to_u64("workspace id", w)?);
        }
        Ok(())
    }

    /// `seqs` as sequence ids into the reused buffer.
    fn read_seqs(&mut self, seqs: &[f64]) -> Result<(), Error> {
        self.seqs.clear();
        for &s in seqs {
            self.seqs.push(to_u16("sequence id", s)?);
        }
        Ok(())
    }

    fn deliver(
        &mut self, ticket: f64, outcome: impl FnOnce() -> Result<Outcome<'static>, Error>,
    ) -> i32 {
        let r = (|| {
            let ticket = Ticket(to_u64("ticket", ticket)?);
            let outcome = outcome()?;
            self.shell.deliver(ticket, outcome, &mut self.host)
        })();
        self.done(r)
    }

    /// `start-next` or (`flush`) `flush-start-next`.
    fn numbered(&mut self, kind: f64, ws: f64, seqs: &[f64], out: &mut [f64], flush: bool) -> f64 {
        let r = (|| {
            let kind = to_u16("workspace kind", kind)?;
            let ws = to_u64("workspace id", ws)?;
            self.read_seqs(seqs)?;
            if out.len() < seqs.len() {
                return Err(Error::InvalidArgument(format!(
                    "out holds {} numbers, {} are asked for",
                    out.len(),
                    seqs.len()
                )));
            }
            if flush {
                self.check_safe()?;
            }
            self.numbers.clear();
            self.numbers.resize(self.seqs.len(), 0);
            let host = &mut self.host;
            let start = if flush {
                self.shell
                    .flush_start_next(kind, ws, &self.seqs, &mut self.numbers, host)?
            } else {
                self.shell
                    .start_next(kind, ws, &self.seqs, &mut self.numbers, host)?
            };
            if let Start::Started(_) = start {
                self.numbers_out(out)?;
            }
            Ok(start)
        })();
        self.started(r)
    }

    /// The numbers just issued into `out`; if one is beyond `MAX_SAFE`, the transaction is
    /// dropped (JavaScript could not hold it).
    fn numbers_out(&mut self, out: &mut [f64]) -> Result<(), Error> {
        for (slot, &n) in out.iter_mut().zip(&self.numbers) {
            match to_f64(n) {
                Ok(x) => *slot = x,
                Err(e) => {
                    let _ = self.shell.actualize(&mut self.host);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// `start-batch` or (`flush`) `flush-start-batch`.
    fn batch(&mut self, kind: f64, ws: &[f64], seqs: &[f64], flush: bool) -> Vec<f64> {
        let r = (|| {
            let kind = to_u16("workspace kind", kind)?;
            self.read_ws(ws)?;
            self.read_seqs(seqs)?;
            if flush {
                self.check_safe()?;
            }
            self.numbers.clear();
            let host = &mut self.host;
            let batch = if flush {
                self.shell
                    .flush_start_batch(kind, &self.ws, &self.seqs, &mut self.numbers, host)?
            } else {
                self.shell
                    .start_batch(kind, &self.ws, &self.seqs, &mut self.numbers, host)?
            };
            let mut out = Vec::with_capacity(3 + self.numbers.len());
            let Batch {
                first_offset,
                started,
                stop,
            } = batch;
            let stop = match stop {
                None => 0,
                Some(BatchStop::NotNow(reason)) => not_now(reason) as i32,
                Some(BatchStop::Load(read)) => {
                    self.keep_load(Some(read), None);
                    Sentinel::Load as i32
                }
                Some(BatchStop::LoadMany(many)) => {
                    self.keep_load(None, Some(many));
                    Sentinel::LoadMany as i32
                }
            };
            out.extend([f64::from(started), first_offset as f64, f64::from(stop)]);
            out.resize(3 + self.numbers.len(), 0.0);
            self.numbers_out(&mut out[3..])?;
            Ok(out)
        })();
        r.unwrap_or_else(|e| {
            self.refuse(e);
            vec![f64::from(Sentinel::Refused as i32)]
        })
    }
}

fn not_now(reason: NotNowReason) -> Sentinel {
    match reason {
        NotNowReason::Actualizing => Sentinel::NotNowActualizing,
        NotNowReason::TooManyUnflushed => Sentinel::NotNowTooManyUnflushed,
    }
}
