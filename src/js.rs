//! wasm-bindgen glue: the core [`Sequencer`] as a JavaScript class, for the driver in `js/`.
//!
//! The boundary is shaped for speed and for JavaScript's numbers:
//!
//! - Every integer crosses as a JS `number` (`f64`). Inputs must be safe integers (at most
//!   `Number.MAX_SAFE_INTEGER`, code `INVALID_ARGUMENT` otherwise); a sequence whose next number
//!   would not be a safe integer is refused with code `UNSAFE_INTEGER`. Plain numbers cost
//!   nothing to pass, where `BigInt` would allocate on every call.
//! - No call throws and none allocates on the success path. A refused call returns a negative
//!   sentinel ([`ERR`]); the code and message of the last refusal are then read with
//!   [`SequencerCore::error_code`] and [`SequencerCore::error_message`].
//! - Work and PLog pages cross as flat arrays of numbers, never one JS object per value.
//! - Time crosses as milliseconds on the driver's clock and becomes the core's nanoseconds.

use core::time::Duration;

use wasm_bindgen::prelude::*;

use crate::{
    Error, Instant, NotNowReason, Number, Params, PlogPage, SeqId, SeqValue, Sequencer, Start,
    Status, Ticket, Work,
};

/// The largest integer a JS number holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE: u64 = (1 << 53) - 1;

// The sentinels and work kinds below are mirrored by the driver in `js/src/sequencer.js`
// (wasm-bindgen exports no constants); change both together.

/// Returned by a call the core refused; the reason is in `errorCode` / `errorMessage`.
pub const ERR: i32 = -1;
/// `start` / `completeNumbers`: not now, actualization is in progress.
pub const START_NOT_NOW_ACTUALIZING: i32 = -2;
/// `start` / `completeNumbers`: not now, too many values wait to be flushed.
pub const START_NOT_NOW_TOO_MANY_UNFLUSHED: i32 = -3;
/// `start`: numbers must be read first (`loadTicket`, `loadSeqs`, then `completeNumbers`).
pub const START_LOAD: i32 = -4;

/// `pollWork`: nothing to do now.
pub const WORK_NONE: u32 = 0;
/// `pollWork`: write `workValues()`, then `workNextOffset()`.
pub const WORK_WRITE: u32 = 1;
/// `pollWork`: read the stored next PLog offset.
pub const WORK_READ_NEXT_OFFSET: u32 = 2;
/// `pollWork`: read PLog events from `workFrom()` on.
pub const WORK_READ_PLOG: u32 = 3;

/// The stable code of a core error, one per variant.
fn error_code(e: &Error) -> &'static str {
    match e {
        Error::InvalidParams(_) => "INVALID_PARAMS",
        Error::CleanedUp => "CLEANED_UP",
        Error::TransactionInProgress => "TRANSACTION_IN_PROGRESS",
        Error::NoTransaction => "NO_TRANSACTION",
        Error::UnknownWsKind(_) => "UNKNOWN_WS_KIND",
        Error::UnknownSeqId { .. } => "UNKNOWN_SEQ_ID",
        Error::AlreadyActualizing => "ALREADY_ACTUALIZING",
        Error::SequenceExhausted { .. } => "SEQUENCE_EXHAUSTED",
        Error::UnknownTicket(_) => "UNKNOWN_TICKET",
        Error::WrongResultKind { .. } => "WRONG_RESULT_KIND",
        Error::MalformedNumbers { .. } => "MALFORMED_NUMBERS",
        Error::MalformedPlogPage { .. } => "MALFORMED_PLOG_PAGE",
    }
}

/// A refusal: a stable code and a human-readable message.
struct Refusal {
    code: &'static str,
    message: String,
}

impl From<Error> for Refusal {
    fn from(e: Error) -> Self {
        Self {
            code: error_code(&e),
            message: e.to_string(),
        }
    }
}

/// An argument that is not what the boundary accepts.
fn invalid(what: &str, x: f64, range: &str) -> Refusal {
    Refusal {
        code: "INVALID_ARGUMENT",
        message: format!("{what} must be an integer in {range}, got {x}"),
    }
}

/// `x` as a `u16`, if it is an integer in range.
#[inline]
fn to_u16(what: &str, x: f64) -> Result<u16, Refusal> {
    let n = x as u16;
    if f64::from(n) == x {
        Ok(n)
    } else {
        Err(invalid(what, x, "0..=65535"))
    }
}

/// `x` as a `u64`, if it is a safe non-negative integer.
#[inline]
fn to_u64(what: &str, x: f64) -> Result<u64, Refusal> {
    let n = x as u64;
    if n <= MAX_SAFE && n as f64 == x {
        Ok(n)
    } else {
        Err(invalid(what, x, "0..=Number.MAX_SAFE_INTEGER"))
    }
}

/// Milliseconds on the driver's clock as the core's instant (negative and NaN clamp to 0).
#[inline]
fn instant(now_ms: f64) -> Instant {
    Instant::from_nanos((now_ms * 1e6) as u64)
}

/// A duration given in milliseconds (non-negative, finite).
fn duration(what: &str, ms: f64) -> Result<Duration, Refusal> {
    if ms.is_finite() && ms >= 0.0 {
        Ok(Duration::from_secs_f64(ms / 1000.0))
    } else {
        Err(Refusal {
            code: "INVALID_ARGUMENT",
            message: format!("{what} must be a finite number of milliseconds >= 0, got {ms}"),
        })
    }
}

/// The JS encoding of a [`Start`]: the offset, or a negative sentinel.
fn encode_start(start: &Start) -> f64 {
    match start {
        Start::Started(offset) => *offset as f64,
        Start::NotNow(NotNowReason::Actualizing) => f64::from(START_NOT_NOW_ACTUALIZING),
        Start::NotNow(NotNowReason::TooManyUnflushed) => {
            f64::from(START_NOT_NOW_TOO_MANY_UNFLUSHED)
        }
        Start::Load(_) => f64::from(START_LOAD),
    }
}

/// Construction parameters, filled by setters and checked by `validate`.
///
/// Setters return `false` for an argument out of range (see `errorCode` / `errorMessage`).
#[wasm_bindgen(js_name = CoreParams)]
pub struct CoreParams {
    inner: Params,
    error: Option<Refusal>,
}

impl Default for CoreParams {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen(js_class = CoreParams)]
impl CoreParams {
    /// Default limits, no sequences yet.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Self {
        Self {
            inner: Params::new(),
            error: None,
        }
    }

    /// Adds sequence `seq` to workspace kind `kind`, handing out `initial` first.
    #[wasm_bindgen(js_name = addSeq)]
    pub fn add_seq(&mut self, kind: f64, seq: f64, initial: f64) -> bool {
        let r = (|| {
            let kind = to_u16("workspace kind", kind)?;
            let seq = to_u16("sequence id", seq)?;
            let initial = to_u64("initial value", initial)?;
            let params = core::mem::take(&mut self.inner);
            self.inner = params.with_seq(kind, seq, initial);
            Ok(())
        })();
        self.record(r)
    }

    /// Sets the number of unflushed values above which `start` says "not now".
    #[wasm_bindgen(js_name = setMaxUnflushedValues)]
    pub fn set_max_unflushed_values(&mut self, n: f64) -> bool {
        let r = to_u64("maxUnflushedValues", n).map(|n| {
            self.inner.max_unflushed_values = usize::try_from(n).unwrap_or(usize::MAX);
        });
        self.record(r)
    }

    /// Sets how many numbers the LRU cache keeps.
    #[wasm_bindgen(js_name = setLruCacheSize)]
    pub fn set_lru_cache_size(&mut self, n: f64) -> bool {
        let r = to_u64("lruCacheSize", n).map(|n| {
            self.inner.lru_cache_size = usize::try_from(n).unwrap_or(usize::MAX);
        });
        self.record(r)
    }

    /// Sets how often replay held back by unflushed values looks again, in milliseconds.
    #[wasm_bindgen(js_name = setBatcherDelayMs)]
    pub fn set_batcher_delay_ms(&mut self, ms: f64) -> bool {
        let r = duration("batcherDelayOnOverflowMs", ms).map(|d| {
            self.inner.batcher_delay_on_overflow = d;
        });
        self.record(r)
    }

    /// Sets the retry delays in milliseconds: `first` after the first failure, doubling up to
    /// `max`.
    #[wasm_bindgen(js_name = setRetryDelayMs)]
    pub fn set_retry_delay_ms(&mut self, first: f64, max: f64) -> bool {
        let r = (|| {
            self.inner.retry_delay = duration("retryDelayMs", first)?;
            self.inner.max_retry_delay = duration("maxRetryDelayMs", max)?;
            Ok(())
        })();
        self.record(r)
    }

    /// Checks the params as a sequencer would; `false` with code `INVALID_PARAMS` if invalid.
    pub fn validate(&mut self) -> bool {
        let r = self
            .inner
            .validate()
            .map_err(|e| Refusal::from(Error::from(e)));
        self.record(r)
    }

    /// The code of the last refusal (`""` if none).
    #[wasm_bindgen(js_name = errorCode)]
    pub fn error_code(&self) -> String {
        self.error.as_ref().map_or("", |e| e.code).to_owned()
    }

    /// The message of the last refusal (`""` if none).
    #[wasm_bindgen(js_name = errorMessage)]
    pub fn error_message(&self) -> String {
        self.error
            .as_ref()
            .map_or_else(String::new, |e| e.message.clone())
    }

    fn record(&mut self, r: Result<(), Refusal>) -> bool {
        match r {
            Ok(()) => true,
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }
}

/// The sequencer core, driven from JavaScript.
///
/// Transactions: `start`, `next`, then `flush` or `actualize`. Driver: `pollWork` until it
/// returns `WORK_NONE`, perform each item against storage, report it with the matching
/// `complete*` call or `fail`, and poll again after every report and at `pollTimeout()`.
#[wasm_bindgen(js_name = SequencerCore)]
pub struct SequencerCore {
    seq: Sequencer,
    /// The work last returned by `pollWork`, for the `work*` getters.
    work: Option<Work>,
    /// The read last asked for by `start` / `completeNumbers`, for the `load*` getters.
    load_ticket: Ticket,
    load_seqs: Vec<SeqId>,
    /// A number of the transaction in progress is beyond `MAX_SAFE`: it must not be flushed.
    unsafe_tx: bool,
    /// Reused buffers for numbers reads and PLog pages.
    numbers_buf: Vec<Number>,
    page_buf: Vec<(u64, SeqValue)>,
    error: Option<Refusal>,
}

#[wasm_bindgen(js_class = SequencerCore)]
impl SequencerCore {
    /// A sequencer over `params`; it starts by actualizing. Throws for invalid params (call
    /// `params.validate()` first to get a coded refusal instead).
    #[wasm_bindgen(constructor)]
    pub fn new(params: &CoreParams) -> Result<SequencerCore, JsError> {
        let seq = Sequencer::new(params.inner.clone()).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(Self {
            seq,
            work: None,
            load_ticket: Ticket(0),
            load_seqs: Vec::new(),
            unsafe_tx: false,
            numbers_buf: Vec::new(),
            page_buf: Vec::new(),
            error: None,
        })
    }

    /// Begins a transaction: the PLog offset (≥ 1), `START_NOT_NOW_*`, `START_LOAD`, or `ERR`.
    pub fn start(&mut self, kind: f64, ws: f64) -> f64 {
        let r = (|| {
            let kind = to_u16("workspace kind", kind)?;
            let ws = to_u64("workspace id", ws)?;
            Ok(self.seq.start(kind, ws)?)
        })();
        self.encode_start_result(r)
    }

    /// Reports the numbers read for `START_LOAD` (in `loadSeqs()` order, 0 if never stored) and
    /// retries the start: same results as `start`.
    #[wasm_bindgen(js_name = completeNumbers)]
    pub fn complete_numbers(&mut self, ticket: f64, numbers: &[f64]) -> f64 {
        let r = (|| {
            let ticket = Ticket(to_u64("ticket", ticket)?);
            self.numbers_buf.clear();
            for &n in numbers {
                self.numbers_buf.push(to_u64("stored number", n)?);
            }
            Ok(self.seq.complete_numbers(ticket, &self.numbers_buf)?)
        })();
        self.encode_start_result(r)
    }

    /// The ticket of the read `START_LOAD` asked for.
    #[wasm_bindgen(js_name = loadTicket)]
    pub fn load_ticket(&self) -> f64 {
        self.load_ticket.0 as f64
    }

    /// The sequences whose stored numbers `START_LOAD` asked for, in the order to report them.
    #[wasm_bindgen(js_name = loadSeqs)]
    pub fn load_seqs(&self) -> Vec<u16> {
        self.load_seqs.clone()
    }

    /// The next number of sequence `seq` in the transaction in progress, or `ERR`.
    pub fn next(&mut self, seq: f64) -> f64 {
        let r = (|| {
            let seq = to_u16("sequence id", seq)?;
            let n = self.seq.next(seq)?;
            if n > MAX_SAFE {
                self.unsafe_tx = true;
                return Err(Refusal {
                    code: "UNSAFE_INTEGER",
                    message: format!(
                        "sequence {seq} reached {n}, beyond Number.MAX_SAFE_INTEGER; actualize this transaction"
                    ),
                });
            }
            Ok(n as f64)
        })();
        match r {
            Ok(n) => n,
            Err(e) => self.refuse(e),
        }
    }

    /// Completes the transaction in progress; `0`, or `ERR`.
    pub fn flush(&mut self) -> i32 {
        if let Some(refused) = self.refuse_unsafe() {
            return refused;
        }
        match self.seq.flush() {
            Ok(()) => 0,
            Err(e) => self.refuse(e.into()) as i32,
        }
    }

    /// Ends the open event but not the transaction (the next `start` numbers another event of
    /// it; `flush` completes them all, `actualize` drops them all); `0`, or `ERR`.
    pub fn stage(&mut self) -> i32 {
        if let Some(refused) = self.refuse_unsafe() {
            return refused;
        }
        match self.seq.stage() {
            Ok(()) => 0,
            Err(e) => self.refuse(e.into()) as i32,
        }
    }

    /// `ERR` if the open event issued a number JavaScript cannot hold exactly: such an event
    /// may only be actualized.
    fn refuse_unsafe(&mut self) -> Option<i32> {
        if !(self.unsafe_tx && self.seq.status() == Status::InTransaction) {
            return None;
        }
        Some(
            self.refuse(Refusal {
                code: "UNSAFE_INTEGER",
                message: "the transaction issued a number beyond Number.MAX_SAFE_INTEGER; \
                      actualize it instead"
                    .to_owned(),
            }) as i32,
        )
    }

    /// Drops the transaction in progress (if any) and recovers from storage; `0`, or `ERR`.
    pub fn actualize(&mut self) -> i32 {
        match self.seq.actualize() {
            Ok(()) => {
                self.unsafe_tx = false;
                0
            }
            Err(e) => self.refuse(e.into()) as i32,
        }
    }

    /// Stops the core: outstanding work is abandoned and every later call refused.
    pub fn cleanup(&mut self) {
        self.seq.cleanup();
        self.work = None;
    }

    /// 0 actualizing, 1 ready, 2 in a transaction, 3 cleaned up.
    pub fn status(&self) -> u32 {
        match self.seq.status() {
            Status::Actualizing => 0,
            Status::Ready => 1,
            Status::InTransaction => 2,
            Status::CleanedUp => 3,
        }
    }

    /// Numbers held in memory: `[cached, unflushed, transaction]`.
    #[wasm_bindgen(js_name = heldNumbers)]
    pub fn held_numbers(&self) -> Vec<f64> {
        let h = self.seq.held_numbers();
        vec![h.cached as f64, h.unflushed as f64, h.transaction as f64]
    }

    /// The next storage operation due at `now_ms`: one of the `WORK_*` kinds. Its details are
    /// read with the `work*` getters until the next call.
    #[wasm_bindgen(js_name = pollWork)]
    pub fn poll_work(&mut self, now_ms: f64) -> u32 {
        self.work = self.seq.poll_work(instant(now_ms));
        match &self.work {
            None => WORK_NONE,
            Some(Work::Write(_)) => WORK_WRITE,
            Some(Work::ReadNextOffset { .. }) => WORK_READ_NEXT_OFFSET,
            Some(Work::ReadPlog { .. }) => WORK_READ_PLOG,
        }
    }

    /// The ticket of the polled work.
    #[wasm_bindgen(js_name = workTicket)]
    pub fn work_ticket(&self) -> f64 {
        self.work.as_ref().map_or(-1.0, |w| w.ticket().0 as f64)
    }

    /// `WORK_READ_PLOG`: the first offset to read.
    #[wasm_bindgen(js_name = workFrom)]
    pub fn work_from(&self) -> f64 {
        match &self.work {
            Some(Work::ReadPlog { from, .. }) => *from as f64,
            _ => -1.0,
        }
    }

    /// `WORK_WRITE`: the next PLog offset to store after the values.
    #[wasm_bindgen(js_name = workNextOffset)]
    pub fn work_next_offset(&self) -> f64 {
        match &self.work {
            Some(Work::Write(w)) => w.next_plog_offset as f64,
            _ => -1.0,
        }
    }

    /// `WORK_WRITE`: the values to store, as three blocks of equal length: workspaces, then
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

    /// The instant (ms on the driver's clock) by which `pollWork` must be called again if no
    /// outcome is reported before; `-1` when only a report can make work due.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> f64 {
        self.seq
            .poll_timeout()
            .map_or(-1.0, |t| t.as_nanos() as f64 / 1e6)
    }

    /// Reports a write durable; `0`, or `ERR`.
    #[wasm_bindgen(js_name = completeWrite)]
    pub fn complete_write(&mut self, ticket: f64) -> i32 {
        let r = (|| {
            let ticket = Ticket(to_u64("ticket", ticket)?);
            Ok(self.seq.complete_write(ticket)?)
        })();
        self.status_code(r.map(|()| 0))
    }

    /// Reports the stored next PLog offset (0 if none); `0`, or `ERR`.
    #[wasm_bindgen(js_name = completeNextOffset)]
    pub fn complete_next_offset(&mut self, ticket: f64, offset: f64) -> i32 {
        let r = (|| {
            let ticket = Ticket(to_u64("ticket", ticket)?);
            let offset = to_u64("next PLog offset", offset)?;
            Ok(self.seq.complete_next_offset(ticket, offset)?)
        })();
        self.status_code(r.map(|()| 0))
    }

    /// Reports a PLog page as parallel arrays (one entry per value, in offset order), the
    /// offset after the page and whether the PLog ends there. `1` if actualization finished,
    /// `0` if more is to be read, or `ERR`.
    #[wasm_bindgen(js_name = completePlogRead)]
    #[allow(clippy::too_many_arguments)]
    pub fn complete_plog_read(
        &mut self,
        ticket: f64,
        offsets: &[f64],
        ws: &[f64],
        seqs: &[f64],
        values: &[f64],
        next: f64,
        end: bool,
        now_ms: f64,
    ) -> i32 {
        let r = (|| {
            let ticket = Ticket(to_u64("ticket", ticket)?);
            let next = to_u64("page next offset", next)?;
            let n = offsets.len();
            if ws.len() != n || seqs.len() != n || values.len() != n {
                return Err(Refusal {
                    code: "MALFORMED_PLOG_PAGE",
                    message: format!(
                        "page arrays differ in length: {n} offsets, {} workspaces, {} sequences, {} values",
                        ws.len(),
                        seqs.len(),
                        values.len()
                    ),
                });
            }
            self.page_buf.clear();
            for i in 0..n {
                let offset = to_u64("event offset", offsets[i])?;
                let ws = to_u64("workspace id", ws[i])?;
                let seq = to_u16("sequence id", seqs[i])?;
                let value = to_u64("number", values[i])?;
                self.page_buf.push((offset, SeqValue::new(ws, seq, value)));
            }
            let page = PlogPage {
                values: &self.page_buf,
                next,
                end,
            };
            Ok(self.seq.complete_plog_read(ticket, page, instant(now_ms))?)
        })();
        self.status_code(r.map(|p| i32::from(p.finished)))
    }

    /// Reports that the work under `ticket` failed at `now_ms`; the core schedules the retry.
    /// `0`, or `ERR`.
    pub fn fail(&mut self, ticket: f64, now_ms: f64) -> i32 {
        let r = (|| {
            let ticket = Ticket(to_u64("ticket", ticket)?);
            Ok(self.seq.fail(ticket, instant(now_ms))?)
        })();
        self.status_code(r.map(|()| 0))
    }

    /// The code of the last refusal (`""` if none).
    #[wasm_bindgen(js_name = errorCode)]
    pub fn error_code(&self) -> String {
        self.error.as_ref().map_or("", |e| e.code).to_owned()
    }

    /// The message of the last refusal (`""` if none).
    #[wasm_bindgen(js_name = errorMessage)]
    pub fn error_message(&self) -> String {
        self.error
            .as_ref()
            .map_or_else(String::new, |e| e.message.clone())
    }
}

impl SequencerCore {
    /// Records a refusal and returns `ERR`.
    #[cold]
    fn refuse(&mut self, e: Refusal) -> f64 {
        self.error = Some(e);
        f64::from(ERR)
    }

    fn status_code(&mut self, r: Result<i32, Refusal>) -> i32 {
        match r {
            Ok(code) => code,
            Err(e) => self.refuse(e) as i32,
        }
    }

    fn encode_start_result(&mut self, r: Result<Start, Refusal>) -> f64 {
        match r {
            Ok(start) => {
                if let Start::Load(read) = &start {
                    self.load_ticket = read.ticket;
                    self.load_seqs.clone_from(&read.seqs);
                } else {
                    self.unsafe_tx = false;
                }
                encode_start(&start)
            }
            Err(e) => self.refuse(e),
        }
    }
}
