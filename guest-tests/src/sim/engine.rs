//! The two engines the simulator drives through one interface, the calls of the WIT contract:
//! the core's shell natively (the code the component's glue wraps), and the compiled component
//! under wasmtime ([`super::component`]). [`Lockstep`] runs both on every call and fails on the
//! first difference in what they return or ask of their host.

use core::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use sequencer::shell::{Batch, BatchStop, Host, Read, Shell};
use sequencer::{
    Error, HeldNumbers, Instant, NotNowReason, Outcome, PLogOffset, PlogPage, PlogWords, SeqValue,
    Start, Status, Ticket, Work,
};
use sequencer_host::bindings::GuestParams;
use sequencer_host::params_from_guest;

use super::storage::SimStorage;

/// What the guest's imports see during one call, and what the guest asked of them.
///
/// The simulator owns it; an engine borrows it for a call (the component engine moves it into
/// its store for the duration of the call), so both engines see exactly the same world.
#[derive(Debug, Default)]
pub struct Io {
    /// The clock's reading for the whole call (`clock.now`).
    pub now: u64,
    /// The partition's storage (only `read-numbers` touches it during a call, and only reads).
    pub storage: SimStorage,
    /// How `read-numbers` answers during the call.
    pub numbers: NumbersAnswer,
    /// What the guest asked of its host, in order.
    pub effects: Vec<Effect>,
}

/// How the `read-numbers` and `read-numbers-many` imports answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum NumbersAnswer {
    /// From the storage view.
    #[default]
    FromStorage,
    /// Both fail with this error.
    Fail(String),
    /// `read-numbers-many` fails with this error; `read-numbers` answers from the view.
    FailMany(String),
    /// `read-numbers-many` answers one number short; `read-numbers` answers from the view.
    ShortMany,
    /// With exactly these numbers, however many were asked for (fuzzing only).
    Fixed(Vec<u64>),
}

impl Io {
    /// The `read-numbers` import.
    pub fn read_numbers(&mut self, ws: u64, seqs: &[u16]) -> Result<Vec<u64>, String> {
        self.effects.push(Effect::ReadNumbers {
            ws,
            seqs: seqs.to_vec(),
        });
        match &self.numbers {
            NumbersAnswer::Fail(m) => Err(m.clone()),
            NumbersAnswer::Fixed(n) => Ok(n.clone()),
            _ if self.storage.down() => Err("storage is down".into()),
            _ => Ok(self.storage.mem.read_numbers(ws, seqs)),
        }
    }

    /// The `read-numbers-many` import: `seqs.len()` numbers per workspace of `ws`.
    pub fn read_numbers_many(&mut self, ws: &[u64], seqs: &[u16]) -> Result<Vec<u64>, String> {
        self.effects.push(Effect::ReadNumbersMany {
            ws: ws.to_vec(),
            seqs: seqs.to_vec(),
        });
        match &self.numbers {
            NumbersAnswer::Fail(m) | NumbersAnswer::FailMany(m) => Err(m.clone()),
            NumbersAnswer::Fixed(n) => Ok(n.clone()),
            _ if self.storage.down() => Err("storage is down".into()),
            answer => {
                let mut out: Vec<u64> = ws
                    .iter()
                    .flat_map(|&w| self.storage.mem.read_numbers(w, seqs))
                    .collect();
                if *answer == NumbersAnswer::ShortMany {
                    out.pop();
                }
                Ok(out)
            }
        }
    }
}

/// Something the guest asked of its host during a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// `read-numbers` (answered during the call).
    ReadNumbers {
        /// The workspace.
        ws: u64,
        /// The sequences, in the order asked.
        seqs: Vec<u16>,
    },
    /// `read-numbers-many` (answered during the call).
    ReadNumbersMany {
        /// The workspaces, in the order asked.
        ws: Vec<u64>,
        /// The sequences, in the order asked.
        seqs: Vec<u16>,
    },
    /// A storage operation to perform and report with `deliver` (a write's values sorted:
    /// their order carries no meaning and comes from a hash map whose order differs between
    /// native code and the component).
    Begin(Work),
    /// `set-wake`: pump at this time (`None`: never).
    SetWake(Option<u64>),
    /// `status-changed`: the status is now this.
    Status(Status),
}

/// True if the engines hand a PLog page of operation `op` over in the flat layout
/// (`deliver-plog-words`, [`PlogWords`]) rather than as records (`deliver`): odd operations
/// do, even ones do not, so every simulation replays through both layouts and compares them.
pub fn flat_layout(op: u64) -> bool {
    op % 2 == 1
}

/// The outcome of a storage operation, as `deliver` takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The write is durable.
    Written,
    /// The stored next PLog offset.
    NextOffset(u64),
    /// PLog events read.
    PlogPage {
        /// The values with their events' offsets.
        values: Vec<(PLogOffset, SeqValue)>,
        /// The offset after the last event read.
        next: PLogOffset,
        /// No event exists at or after `next`.
        end: bool,
    },
    /// The operation failed.
    Failed(String),
}

/// A WIT `seq-quad`: the first `count` of `seqs` (a count above 4 is refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quad {
    /// How many of `seqs` are named.
    pub count: u8,
    /// The sequences.
    pub seqs: [u16; 4],
}

impl Quad {
    /// The quad naming `seqs` (at most 4).
    pub fn of(seqs: &[u16]) -> Self {
        let mut q = Self {
            count: seqs.len().min(4) as u8,
            seqs: [0; 4],
        };
        q.seqs[..usize::from(q.count)].copy_from_slice(&seqs[..usize::from(q.count)]);
        q
    }

    /// The sequences named, or `None` if the count is above 4.
    pub fn named(&self) -> Option<&[u16]> {
        self.seqs.get(..usize::from(self.count))
    }
}

/// The reply of `start-batch` and `flush-start-batch`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchReply {
    /// The offset of the first event started.
    pub first_offset: PLogOffset,
    /// How many events were started and staged.
    pub started: u32,
    /// Why the next event was not started, if one was not.
    pub not_now: Option<NotNowReason>,
    /// `count` numbers per started event.
    pub numbers: Vec<u64>,
}

/// One call of the WIT `sequencer` resource (`create` is [`boot`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `start`.
    Start {
        /// Workspace kind.
        kind: u16,
        /// Workspace.
        ws: u64,
    },
    /// `start-next`.
    StartNext {
        /// Workspace kind.
        kind: u16,
        /// Workspace.
        ws: u64,
        /// The sequences to take a number of.
        seqs: Vec<u16>,
    },
    /// `flush-start-next`.
    FlushStartNext {
        /// Workspace kind.
        kind: u16,
        /// Workspace.
        ws: u64,
        /// The sequences to take a number of.
        seqs: Vec<u16>,
    },
    /// `start-next-quad`.
    StartNextQuad {
        /// Workspace kind.
        kind: u16,
        /// Workspace.
        ws: u64,
        /// The sequences to take a number of.
        seqs: Quad,
    },
    /// `flush-start-next-quad`.
    FlushStartNextQuad {
        /// Workspace kind.
        kind: u16,
        /// Workspace.
        ws: u64,
        /// The sequences to take a number of.
        seqs: Quad,
    },
    /// `stage`.
    Stage,
    /// `start-batch`.
    StartBatch {
        /// Workspace kind.
        kind: u16,
        /// One event per workspace.
        ws: Vec<u64>,
        /// The sequences each event takes a number of.
        seqs: Quad,
    },
    /// `flush-start-batch`.
    FlushStartBatch {
        /// Workspace kind.
        kind: u16,
        /// One event per workspace.
        ws: Vec<u64>,
        /// The sequences each event takes a number of.
        seqs: Quad,
    },
    /// `next`.
    Next {
        /// The sequence.
        seq: u16,
    },
    /// `flush`.
    Flush,
    /// `actualize`.
    Actualize,
    /// `cleanup`.
    Cleanup,
    /// `status`.
    Status,
    /// `held-numbers`.
    HeldNumbers,
    /// `deliver`.
    Deliver {
        /// The operation id.
        op: u64,
        /// Its outcome.
        outcome: Delivery,
    },
    /// `pump`.
    Pump,
}

/// The outcome of a successful `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Started {
    /// The transaction began at this PLog offset.
    Offset(PLogOffset),
    /// Not now.
    NotNow(NotNowReason),
}

/// A call the sequencer refused: the WIT `error` variant, comparable across engines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Invalid params. (The text is left out: which rule is reported first depends on hash
    /// map order, which differs between engines.)
    InvalidParams,
    /// Cleaned up.
    CleanedUp,
    /// `start` during a transaction.
    TransactionInProgress,
    /// `next`/`flush` without a transaction.
    NoTransaction,
    /// Unknown workspace kind.
    UnknownWsKind(u16),
    /// Unknown sequence of the transaction's kind.
    UnknownSeqId {
        /// Kind.
        kind: u16,
        /// Sequence.
        seq: u16,
    },
    /// `actualize` while actualizing.
    AlreadyActualizing,
    /// A sequence reached `u64::MAX`.
    SequenceExhausted {
        /// Kind.
        kind: u16,
        /// Sequence.
        seq: u16,
    },
    /// `deliver` for no outstanding operation.
    UnknownOperation(u64),
    /// `deliver` with the wrong kind of outcome.
    WrongOutcome(u64),
    /// `read-numbers` returned the wrong count.
    MalformedNumbers(String),
    /// A PLog page broke its contract.
    MalformedPlogPage(String),
    /// `read-numbers` failed.
    Storage(String),
}

/// What a call returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// From `start`.
    Start(Result<Started, Refusal>),
    /// From `start-next`, `flush-start-next`.
    StartNext(Result<(Started, Vec<u64>), Refusal>),
    /// From `start-next-quad`, `flush-start-next-quad`: the outcome and the four places.
    Quad(Result<(Started, [u64; 4]), Refusal>),
    /// From `start-batch`, `flush-start-batch`.
    Batch(Result<BatchReply, Refusal>),
    /// From `next`.
    Number(Result<u64, Refusal>),
    /// From `flush`, `actualize`, `deliver`, `stage`.
    Done(Result<(), Refusal>),
    /// From `status`.
    Status(Status),
    /// From `held-numbers`.
    Held(HeldNumbers),
    /// From `cleanup`, `pump`.
    Nothing,
}

/// An engine failed in a way no call may: a bug, not a refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineFault {
    /// The component trapped (a guest panic, running out of fuel or memory, a bad import).
    Trap(String),
    /// Native code panicked.
    Panic(String),
    /// The two engines of a [`Lockstep`] disagreed.
    Divergence {
        /// The call.
        call: String,
        /// What the native core returned and asked for.
        native: String,
        /// What the component returned and asked for.
        component: String,
    },
}

impl fmt::Display for EngineFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Trap(m) => write!(f, "the component trapped: {m}"),
            Self::Panic(m) => write!(f, "native code panicked: {m}"),
            Self::Divergence {
                call,
                native,
                component,
            } => write!(
                f,
                "engines diverged on {call}:\n    native:    {native}\n    component: {component}"
            ),
        }
    }
}

/// A sequencer the simulator can drive: one call at a time, against an [`Io`].
pub trait Engine {
    /// Performs one call.
    fn call(&mut self, call: &Call, io: &mut Io) -> Result<Reply, EngineFault>;

    /// The most linear memory the engine's instance has grown to, in bytes (component only).
    fn memory_peak(&self) -> Option<usize> {
        None
    }
}

/// Which engine a simulation runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// The native core (fast: for volume).
    Native,
    /// The compiled component under wasmtime.
    Component,
    /// Both in lockstep, compared call by call.
    Both,
}

impl EngineKind {
    /// Parses `native`, `component` or `both`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "native" => Some(Self::Native),
            "component" => Some(Self::Component),
            "both" => Some(Self::Both),
            _ => None,
        }
    }
}

/// A created engine, or the refusal of `create`.
pub type Booted = Result<Box<dyn Engine>, Refusal>;

/// Creates a sequencer with `params` in an engine of `kind` (`create`, which begins its first
/// storage operations through `io`).
pub fn boot(kind: EngineKind, params: &GuestParams, io: &mut Io) -> Result<Booted, EngineFault> {
    match kind {
        EngineKind::Native => {
            Ok(NativeEngine::create(params, io)?.map(|e| Box::new(e) as Box<dyn Engine>))
        }
        EngineKind::Component => Ok(super::component::ComponentEngine::create(params, io)?
            .map(|e| Box::new(e) as Box<dyn Engine>)),
        EngineKind::Both => {
            let mark = io.effects.len();
            let native = NativeEngine::create(params, io)?;
            let native_effects = io.effects.split_off(mark);
            let component = super::component::ComponentEngine::create(params, io)?;
            let component_effects = io.effects.split_off(mark);
            let (native_ok, component_ok) = (native.is_ok(), component.is_ok());
            let n_err = native.as_ref().err().cloned();
            let c_err = component.as_ref().err().cloned();
            if native_ok != component_ok || n_err != c_err || native_effects != component_effects {
                return Err(EngineFault::Divergence {
                    call: "create".into(),
                    native: format!("{n_err:?} {native_effects:?}"),
                    component: format!("{c_err:?} {component_effects:?}"),
                });
            }
            io.effects.extend(native_effects);
            match (native, component) {
                (Ok(a), Ok(b)) => Ok(Ok(Box::new(Lockstep {
                    native: Box::new(a),
                    component: Box::new(b),
                }))),
                (Err(e), _) | (_, Err(e)) => Ok(Err(e)),
            }
        }
    }
}

/// Runs the native engine and the component on every call and fails on the first difference
/// in replies or effects.
pub struct Lockstep {
    native: Box<dyn Engine>,
    component: Box<dyn Engine>,
}

impl Lockstep {
    /// Two engines created over the same params and I/O, compared from now on.
    pub fn new(native: Box<dyn Engine>, component: Box<dyn Engine>) -> Self {
        Self { native, component }
    }
}

impl Engine for Lockstep {
    fn call(&mut self, call: &Call, io: &mut Io) -> Result<Reply, EngineFault> {
        let mark = io.effects.len();
        let native = self.native.call(call, io)?;
        let native_effects = io.effects.split_off(mark);
        let component = self.component.call(call, io)?;
        let component_effects = io.effects.split_off(mark);
        if native != component || native_effects != component_effects {
            return Err(EngineFault::Divergence {
                call: format!("{call:?}"),
                native: format!("{native:?} {native_effects:?}"),
                component: format!("{component:?} {component_effects:?}"),
            });
        }
        io.effects.extend(native_effects);
        Ok(native)
    }

    fn memory_peak(&self) -> Option<usize> {
        self.component.memory_peak()
    }
}

/// The native core behind the shell (`sequencer::Shell`, which the component glue wraps as
/// well): the same rules, the same storage operations begun, the same wake-ups asked for. Where
/// the native build and the component differ, [`Lockstep`] says so.
pub struct NativeEngine {
    shell: Shell,
}

/// The sequences a quad names, or `invalid-params` if it names more than four.
fn quad_seqs(q: &Quad) -> Result<&[u16], Refusal> {
    q.named().ok_or(Refusal::InvalidParams)
}

fn refusal(e: Error) -> Refusal {
    match e {
        Error::InvalidParams(_) | Error::InvalidArgument(_) | Error::UnsafeInteger(_) => {
            Refusal::InvalidParams
        }
        Error::CleanedUp => Refusal::CleanedUp,
        Error::TransactionInProgress => Refusal::TransactionInProgress,
        Error::NoTransaction => Refusal::NoTransaction,
        Error::UnknownWsKind(k) => Refusal::UnknownWsKind(k),
        Error::UnknownSeqId { kind, seq } => Refusal::UnknownSeqId { kind, seq },
        Error::AlreadyActualizing => Refusal::AlreadyActualizing,
        Error::SequenceExhausted { kind, seq } => Refusal::SequenceExhausted { kind, seq },
        Error::UnknownTicket(t) => Refusal::UnknownOperation(t.0),
        Error::WrongResultKind { ticket, .. } => Refusal::WrongOutcome(ticket.0),
        e @ Error::MalformedNumbers { .. } => Refusal::MalformedNumbers(e.to_string()),
        e @ Error::MalformedPlogPage { .. } => Refusal::MalformedPlogPage(e.to_string()),
        Error::Storage(message) => Refusal::Storage(message),
    }
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// What the component's imports do, for the shell: answer numbers reads from the simulated
/// storage and record everything the guest asks of its host.
impl Host for Io {
    fn now(&mut self) -> Instant {
        Instant::from_nanos(self.now)
    }

    fn read_numbers(&mut self, ws: u64, seqs: &[u16]) -> Read {
        match Io::read_numbers(self, ws, seqs) {
            Ok(numbers) => Read::Numbers(numbers),
            Err(message) => Read::Failed(message),
        }
    }

    fn read_numbers_many(&mut self, ws: &[u64], seqs: &[u16]) -> Read {
        match Io::read_numbers_many(self, ws, seqs) {
            Ok(numbers) => Read::Numbers(numbers),
            Err(message) => Read::Failed(message),
        }
    }

    fn begin(&mut self, mut work: Work) {
        if let Work::Write(w) = &mut work {
            w.values.sort_by_key(|v| (v.key, v.value));
        }
        self.effects.push(Effect::Begin(work));
    }

    fn set_wake(&mut self, at: Option<Instant>) {
        self.effects
            .push(Effect::SetWake(at.map(Instant::as_nanos)));
    }

    fn status_changed(&mut self, status: Status) {
        self.effects.push(Effect::Status(status));
    }
}

/// A start's outcome as the contract returns it (a load cannot come back: [`Io`] answers every
/// read at once).
fn started(start: Start) -> Result<Started, Refusal> {
    match start {
        Start::Started(offset) => Ok(Started::Offset(offset)),
        Start::NotNow(reason) => Ok(Started::NotNow(reason)),
        Start::Load(_) => Err(Refusal::Storage("a numbers read was not answered".into())),
    }
}

/// `start-next`'s reply: the numbers only if it started.
fn start_next_reply(r: Result<Start, Error>, mut numbers: Vec<u64>) -> Reply {
    Reply::StartNext(r.map_err(refusal).and_then(started).map(|outcome| {
        if !matches!(outcome, Started::Offset(_)) {
            numbers.clear();
        }
        (outcome, numbers)
    }))
}

fn quad_reply(r: Result<Start, Error>, numbers: [u64; 4]) -> Reply {
    Reply::Quad(
        r.map_err(refusal)
            .and_then(started)
            .map(|outcome| (outcome, numbers)),
    )
}

fn batch_reply(r: Result<Batch, Error>, numbers: Vec<u64>) -> Reply {
    Reply::Batch(r.map_err(refusal).and_then(|b| {
        let not_now = match b.stop {
            None => None,
            Some(BatchStop::NotNow(reason)) => Some(reason),
            Some(BatchStop::Load(_) | BatchStop::LoadMany(_)) => {
                return Err(Refusal::Storage("a numbers read was not answered".into()));
            }
        };
        Ok(BatchReply {
            first_offset: b.first_offset,
            started: b.started,
            not_now,
            numbers,
        })
    }))
}

impl NativeEngine {
    /// `create`: a new shell over `params`, which at once begins its first storage work.
    pub fn create(params: &GuestParams, io: &mut Io) -> Result<Result<Self, Refusal>, EngineFault> {
        catch_unwind(AssertUnwindSafe(|| {
            let shell = Shell::create(params_from_guest(params), io).map_err(refusal)?;
            Ok(Self { shell })
        }))
        .map_err(|p| EngineFault::Panic(panic_message(p)))
    }

    fn dispatch(&mut self, call: &Call, io: &mut Io) -> Reply {
        let shell = &mut self.shell;
        let done = |r: Result<(), Error>| Reply::Done(r.map_err(refusal));
        match call {
            Call::Start { kind, ws } => Reply::Start(
                shell
                    .start(*kind, *ws, io)
                    .map_err(refusal)
                    .and_then(started),
            ),
            Call::StartNext { kind, ws, seqs } => {
                let mut numbers = vec![0; seqs.len()];
                let r = shell.start_next(*kind, *ws, seqs, &mut numbers, io);
                start_next_reply(r, numbers)
            }
            Call::FlushStartNext { kind, ws, seqs } => {
                let mut numbers = vec![0; seqs.len()];
                let r = shell.flush_start_next(*kind, *ws, seqs, &mut numbers, io);
                start_next_reply(r, numbers)
            }
            Call::StartNextQuad { kind, ws, seqs } => {
                let Ok(seqs) = quad_seqs(seqs) else {
                    return Reply::Quad(Err(Refusal::InvalidParams));
                };
                let mut numbers = [0; 4];
                let r = shell.start_next(*kind, *ws, seqs, &mut numbers, io);
                quad_reply(r, numbers)
            }
            Call::FlushStartNextQuad { kind, ws, seqs } => {
                let Ok(seqs) = quad_seqs(seqs) else {
                    return Reply::Quad(Err(Refusal::InvalidParams));
                };
                let mut numbers = [0; 4];
                let r = shell.flush_start_next(*kind, *ws, seqs, &mut numbers, io);
                quad_reply(r, numbers)
            }
            Call::Stage => done(shell.stage()),
            Call::StartBatch { kind, ws, seqs } => {
                let Ok(seqs) = quad_seqs(seqs) else {
                    return Reply::Batch(Err(Refusal::InvalidParams));
                };
                let mut numbers = Vec::new();
                let r = shell.start_batch(*kind, ws, seqs, &mut numbers, io);
                batch_reply(r, numbers)
            }
            Call::FlushStartBatch { kind, ws, seqs } => {
                let Ok(seqs) = quad_seqs(seqs) else {
                    return Reply::Batch(Err(Refusal::InvalidParams));
                };
                let mut numbers = Vec::new();
                let r = shell.flush_start_batch(*kind, ws, seqs, &mut numbers, io);
                batch_reply(r, numbers)
            }
            Call::Next { seq } => Reply::Number(shell.next(*seq).map_err(refusal)),
            Call::Flush => done(shell.flush(io)),
            Call::Actualize => done(shell.actualize(io)),
            Call::Cleanup => {
                shell.cleanup(io);
                Reply::Nothing
            }
            Call::Status => Reply::Status(shell.status()),
            Call::HeldNumbers => {
                // The component reports these as u32, clamped.
                let h = shell.held_numbers();
                let clamp = |n: usize| n.min(u32::MAX as usize);
                Reply::Held(HeldNumbers {
                    cached: clamp(h.cached),
                    unflushed: clamp(h.unflushed),
                    transaction: clamp(h.transaction),
                })
            }
            Call::Deliver { op, outcome } => {
                let ticket = Ticket(*op);
                done(match outcome {
                    Delivery::Written => shell.deliver(ticket, Outcome::Written, io),
                    Delivery::NextOffset(o) => shell.deliver(ticket, Outcome::NextOffset(*o), io),
                    Delivery::PlogPage { values, next, end } if flat_layout(*op) => {
                        let mut words = Vec::new();
                        PlogWords::encode_into(values, &mut words);
                        let page = PlogWords {
                            words: &words,
                            next: *next,
                            end: *end,
                        };
                        shell.deliver(ticket, Outcome::PlogWords(page), io)
                    }
                    Delivery::PlogPage { values, next, end } => {
                        let page = PlogPage {
                            values,
                            next: *next,
                            end: *end,
                        };
                        shell.deliver(ticket, Outcome::PlogPage(page), io)
                    }
                    Delivery::Failed(_) => shell.deliver(ticket, Outcome::Failed, io),
                })
            }
            Call::Pump => {
                shell.pump(io);
                Reply::Nothing
            }
        }
    }
}

impl Engine for NativeEngine {
    fn call(&mut self, call: &Call, io: &mut Io) -> Result<Reply, EngineFault> {
        catch_unwind(AssertUnwindSafe(|| self.dispatch(call, io)))
            .map_err(|p| EngineFault::Panic(panic_message(p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sequencer_host::bindings::sequencer::plugin::types::KindSequences;

    /// A native engine that misreports its status: what a broken engine looks like.
    struct Skewed(NativeEngine);

    impl Engine for Skewed {
        fn call(&mut self, call: &Call, io: &mut Io) -> Result<Reply, EngineFault> {
            match self.0.call(call, io)? {
                Reply::Status(Status::Actualizing) => Ok(Reply::Status(Status::Ready)),
                other => Ok(other),
            }
        }
    }

    fn params() -> GuestParams {
        GuestParams {
            kinds: vec![KindSequences {
                kind: 1,
                sequences: vec![(1, 1)],
            }],
            max_unflushed_values: 4,
            lru_cache_size: 8,
            batcher_delay_ns: 1,
            retry_delay_ns: 1,
            max_retry_delay_ns: 1,
            retry_jitter_percent: 0,
        }
    }

    #[test]
    fn lockstep_reports_the_first_call_on_which_engines_differ() {
        let mut io = Io::default();
        let a = NativeEngine::create(&params(), &mut io).unwrap().unwrap();
        let b = NativeEngine::create(&params(), &mut io).unwrap().unwrap();
        let mut both = Lockstep::new(Box::new(a), Box::new(Skewed(b)));
        assert_eq!(
            both.call(&Call::Pump, &mut io),
            Ok(Reply::Nothing),
            "equal engines agree"
        );
        match both.call(&Call::Status, &mut io) {
            Err(EngineFault::Divergence {
                call,
                native,
                component,
            }) => {
                assert_eq!(call, "Status");
                assert!(native.contains("Actualizing") && component.contains("Ready"));
            }
            other => panic!("expected a divergence, got {other:?}"),
        }
    }
}
