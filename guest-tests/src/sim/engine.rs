//! The two engines the simulator drives through one interface ([`Engine`], the calls of the
//! WIT contract): the core's shell natively (the code the component's glue wraps), and the
//! compiled component under wasmtime ([`super::component`]). [`Lockstep`] runs both on every
//! call and fails on the first difference in what they return or ask of their host.

use std::panic::{AssertUnwindSafe, catch_unwind};

use sequencer::shell::{Batch, BatchStop, Shell};
use sequencer::{Error, HeldNumbers, Outcome, PlogPage, PlogWords, Start, Ticket};
use sequencer_host::runtime::link::params_from_guest;
use sequencer_host::runtime::{GuestError, GuestParams};

use super::calls::{
    BatchReply, Call, Delivery, Engine, EngineFault, Quad, Refusal, Reply, Started, flat_layout,
};
use super::component::ComponentEngine;
use super::io::Io;

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
        EngineKind::Component => {
            Ok(ComponentEngine::create(params, io)?.map(|e| Box::new(e) as Box<dyn Engine>))
        }
        EngineKind::Both => {
            let mark = io.effects.len();
            let native = NativeEngine::create(params, io)?;
            let native_effects = io.effects.split_off(mark);
            let component = ComponentEngine::create(params, io)?;
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

/// A core error as the component reports it (one mapping, `GuestError`'s), compared as a
/// [`Refusal`].
fn refusal(e: Error) -> Refusal {
    GuestError::from(e).into()
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
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
            Call::ActualizeBesideWrite => done(shell.actualize_beside_write(io)),
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
    use sequencer::Status;
    use sequencer_host::runtime::bindings::sequencer::plugin::types::KindSequences;

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
