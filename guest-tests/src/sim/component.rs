//! The compiled component under wasmtime, embedded deterministically: the simulator's own
//! storage and clock are the imports, and nothing runs unless the simulator makes a call.
//!
//! The production host's driver performs storage work on a thread with real futures, which no
//! seed could replay; this embedding only records what the guest begins ([`Io::effects`]) and
//! lets the simulator decide when and how each operation completes.

use std::sync::OnceLock;

use sequencer::{HeldNumbers, NotNowReason, SeqValue, Status};
use sequencer_host::bindings::sequencer::plugin::types;
use sequencer_host::bindings::{
    BatchNumbers, GuestError, GuestParams, GuestSeqValue, NotNowReason as GuestNotNow, Outcome,
    PlogPage, PlogValue, QuadNumbers, SeqQuad, SequencerPlugin, SequencerPluginPre, StartOutcome,
    Status as GuestStatus, clock, storage,
};
use wasmtime::component::{Component, HasSelf, Linker, ResourceAny};
use wasmtime::{Config, Engine as Wasmtime, ResourceLimiter, Store};

use super::engine::{
    BatchReply, Begun, Call, Delivery, Effect, Engine, EngineFault, Io, Quad, Refusal, Reply,
    Started,
};

/// Fuel for one guest call: far more than any call needs, so running out means a runaway guest.
pub const FUEL_PER_CALL: u64 = 500_000_000;
/// The most linear memory an instance may grow to; growing beyond it fails the guest's
/// allocation, which traps.
pub const MEMORY_CAP_BYTES: usize = 64 << 20;

/// Store data: the simulator's [`Io`] (moved in for the duration of a call) and memory
/// accounting.
#[derive(Default)]
pub struct SimHost {
    io: Io,
    memory_peak: usize,
}

impl storage::Host for SimHost {
    fn read_numbers(&mut self, ws: u64, seqs: Vec<u16>) -> Result<Vec<u64>, String> {
        self.io.read_numbers(ws, &seqs)
    }

    fn read_numbers_many(&mut self, ws: Vec<u64>, seqs: Vec<u16>) -> Result<Vec<u64>, String> {
        self.io.read_numbers_many(&ws, &seqs)
    }

    fn begin_read_next_offset(&mut self, op: u64) {
        self.io
            .effects
            .push(Effect::Begin(Begun::ReadNextOffset { op }));
    }

    fn begin_write(&mut self, op: u64, values: Vec<GuestSeqValue>, next_plog_offset: u64) {
        let values = values
            .into_iter()
            .map(|v| SeqValue::new(v.ws, v.seq, v.value))
            .collect();
        self.io.begin_write(op, values, next_plog_offset);
    }

    fn begin_read_plog(&mut self, op: u64, first: u64) {
        self.io
            .effects
            .push(Effect::Begin(Begun::ReadPlog { op, from: first }));
    }
}

impl clock::Host for SimHost {
    fn now(&mut self) -> u64 {
        self.io.now
    }

    fn set_wake(&mut self, at: Option<u64>) {
        self.io.effects.push(Effect::SetWake(at));
    }
}

impl types::Host for SimHost {}

impl ResourceLimiter for SimHost {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.memory_peak = self.memory_peak.max(desired);
        Ok(desired <= MEMORY_CAP_BYTES)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 10_000)
    }
}

struct Compiled {
    engine: Wasmtime,
    pre: SequencerPluginPre<SimHost>,
}

/// The component compiled and linked once per process.
fn compiled() -> Result<&'static Compiled, EngineFault> {
    static COMPILED: OnceLock<Result<Compiled, String>> = OnceLock::new();
    COMPILED
        .get_or_init(|| {
            let path = crate::component_path();
            let bytes = std::fs::read(&path).map_err(|e| {
                format!(
                    "cannot read the component {}: {e} (build it first: bash scripts/build-component.sh)",
                    path.display()
                )
            })?;
            let mut config = Config::new();
            config.consume_fuel(true);
            let engine = Wasmtime::new(&config).map_err(|e| format!("{e:#}"))?;
            let component = Component::new(&engine, &bytes).map_err(|e| format!("{e:#}"))?;
            let mut linker = Linker::<SimHost>::new(&engine);
            SequencerPlugin::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
                .map_err(|e| format!("{e:#}"))?;
            linker
                .define_unknown_imports_as_traps(&component)
                .map_err(|e| format!("{e:#}"))?;
            let pre = linker
                .instantiate_pre(&component)
                .map_err(|e| format!("{e:#}"))?;
            let pre = SequencerPluginPre::new(pre).map_err(|e| format!("{e:#}"))?;
            Ok(Compiled { engine, pre })
        })
        .as_ref()
        .map_err(|e| EngineFault::Trap(e.clone()))
}

/// One instance of the component holding one sequencer resource.
pub struct ComponentEngine {
    store: Store<SimHost>,
    plugin: SequencerPlugin,
    handle: ResourceAny,
}

fn trap(e: wasmtime::Error) -> EngineFault {
    EngineFault::Trap(format!("{e:#}"))
}

impl ComponentEngine {
    /// Instantiates the component and calls `create`.
    pub fn create(params: &GuestParams, io: &mut Io) -> Result<Result<Self, Refusal>, EngineFault> {
        let compiled = compiled()?;
        let mut store = Store::new(&compiled.engine, SimHost::default());
        store.limiter(|s| s as &mut dyn ResourceLimiter);
        store.set_fuel(FUEL_PER_CALL).map_err(trap)?;
        std::mem::swap(io, &mut store.data_mut().io);
        let created = compiled.pre.instantiate(&mut store).and_then(|plugin| {
            let created = plugin
                .sequencer_plugin_sequencer_api()
                .sequencer()
                .call_create(&mut store, params)?;
            Ok((plugin, created))
        });
        std::mem::swap(io, &mut store.data_mut().io);
        let (plugin, created) = created.map_err(trap)?;
        Ok(created.map_err(refusal).map(|handle| Self {
            store,
            plugin,
            handle,
        }))
    }

    fn dispatch(&mut self, call: &Call) -> wasmtime::Result<Reply> {
        let api = self.plugin.sequencer_plugin_sequencer_api().sequencer();
        let (store, h) = (&mut self.store, self.handle);
        Ok(match call {
            Call::Start { kind, ws } => Reply::Start(
                api.call_start(store, h, *kind, *ws)?
                    .map(started)
                    .map_err(refusal),
            ),
            Call::StartNext { kind, ws, seqs } => Reply::StartNext(
                api.call_start_next(store, h, *kind, *ws, seqs)?
                    .map(|(o, n)| (started(o), n))
                    .map_err(refusal),
            ),
            Call::FlushStartNext { kind, ws, seqs } => Reply::StartNext(
                api.call_flush_start_next(store, h, *kind, *ws, seqs)?
                    .map(|(o, n)| (started(o), n))
                    .map_err(refusal),
            ),
            Call::StartNextQuad { kind, ws, seqs } => Reply::Quad(
                api.call_start_next_quad(store, h, *kind, *ws, seq_quad(seqs))?
                    .map(quad_reply)
                    .map_err(refusal),
            ),
            Call::FlushStartNextQuad { kind, ws, seqs } => Reply::Quad(
                api.call_flush_start_next_quad(store, h, *kind, *ws, seq_quad(seqs))?
                    .map(quad_reply)
                    .map_err(refusal),
            ),
            Call::Stage => Reply::Done(api.call_stage(store, h)?.map_err(refusal)),
            Call::StartBatch { kind, ws, seqs } => Reply::Batch(
                api.call_start_batch(store, h, *kind, ws, seq_quad(seqs))?
                    .map(batch_reply)
                    .map_err(refusal),
            ),
            Call::FlushStartBatch { kind, ws, seqs } => Reply::Batch(
                api.call_flush_start_batch(store, h, *kind, ws, seq_quad(seqs))?
                    .map(batch_reply)
                    .map_err(refusal),
            ),
            Call::Next { seq } => Reply::Number(api.call_next(store, h, *seq)?.map_err(refusal)),
            Call::Flush => Reply::Done(api.call_flush(store, h)?.map_err(refusal)),
            Call::Actualize => Reply::Done(api.call_actualize(store, h)?.map_err(refusal)),
            Call::Cleanup => {
                api.call_cleanup(store, h)?;
                Reply::Nothing
            }
            Call::Status => Reply::Status(match api.call_status(store, h)? {
                GuestStatus::Actualizing => Status::Actualizing,
                GuestStatus::Ready => Status::Ready,
                GuestStatus::InTransaction => Status::InTransaction,
                GuestStatus::CleanedUp => Status::CleanedUp,
            }),
            Call::HeldNumbers => {
                let h = api.call_held_numbers(store, h)?;
                Reply::Held(HeldNumbers {
                    cached: h.cached as usize,
                    unflushed: h.unflushed as usize,
                    transaction: h.transaction as usize,
                })
            }
            Call::Deliver { op, outcome } => Reply::Done(
                api.call_deliver(store, h, *op, &outcome_to_guest(outcome))?
                    .map_err(refusal),
            ),
            Call::Pump => {
                api.call_pump(store, h)?;
                Reply::Nothing
            }
        })
    }
}

impl Engine for ComponentEngine {
    fn call(&mut self, call: &Call, io: &mut Io) -> Result<Reply, EngineFault> {
        self.store.set_fuel(FUEL_PER_CALL).map_err(trap)?;
        std::mem::swap(io, &mut self.store.data_mut().io);
        let reply = self.dispatch(call);
        std::mem::swap(io, &mut self.store.data_mut().io);
        reply.map_err(trap)
    }

    fn memory_peak(&self) -> Option<usize> {
        Some(self.store.data().memory_peak)
    }
}

fn started(o: StartOutcome) -> Started {
    match o {
        StartOutcome::Started(offset) => Started::Offset(offset),
        StartOutcome::NotNow(reason) => Started::NotNow(not_now(reason)),
    }
}

fn not_now(reason: GuestNotNow) -> NotNowReason {
    match reason {
        GuestNotNow::Actualizing => NotNowReason::Actualizing,
        GuestNotNow::TooManyUnflushed => NotNowReason::TooManyUnflushed,
    }
}

fn seq_quad(q: &Quad) -> SeqQuad {
    SeqQuad {
        count: q.count,
        s0: q.seqs[0],
        s1: q.seqs[1],
        s2: q.seqs[2],
        s3: q.seqs[3],
    }
}

fn quad_reply(q: QuadNumbers) -> (Started, [u64; 4]) {
    (started(q.outcome), [q.n0, q.n1, q.n2, q.n3])
}

fn batch_reply(b: BatchNumbers) -> BatchReply {
    BatchReply {
        first_offset: b.first_offset,
        started: b.started,
        not_now: b.not_now.map(not_now),
        numbers: b.numbers,
    }
}

/// The WIT outcome for a simulator delivery.
pub fn outcome_to_guest(d: &Delivery) -> Outcome {
    match d {
        Delivery::Written => Outcome::Written,
        Delivery::NextOffset(o) => Outcome::NextOffset(*o),
        Delivery::PlogPage { values, next, end } => Outcome::PlogPage(PlogPage {
            values: values
                .iter()
                .map(|(offset, v)| PlogValue {
                    offset: *offset,
                    ws: v.key.ws,
                    seq: v.key.seq,
                    value: v.value,
                })
                .collect(),
            next: *next,
            end: *end,
        }),
        Delivery::Failed(m) => Outcome::Failed(m.clone()),
    }
}

fn refusal(e: GuestError) -> Refusal {
    match e {
        GuestError::InvalidParams(_) => Refusal::InvalidParams,
        GuestError::CleanedUp => Refusal::CleanedUp,
        GuestError::TransactionInProgress => Refusal::TransactionInProgress,
        GuestError::NoTransaction => Refusal::NoTransaction,
        GuestError::UnknownWsKind(k) => Refusal::UnknownWsKind(k),
        GuestError::UnknownSeqId(r) => Refusal::UnknownSeqId {
            kind: r.kind,
            seq: r.seq,
        },
        GuestError::AlreadyActualizing => Refusal::AlreadyActualizing,
        GuestError::SequenceExhausted(r) => Refusal::SequenceExhausted {
            kind: r.kind,
            seq: r.seq,
        },
        GuestError::UnknownOperation(op) => Refusal::UnknownOperation(op),
        GuestError::WrongOutcome(op) => Refusal::WrongOutcome(op),
        GuestError::MalformedNumbers(m) => Refusal::MalformedNumbers(m),
        GuestError::MalformedPlogPage(m) => Refusal::MalformedPlogPage(m),
        GuestError::Storage(m) => Refusal::Storage(m),
    }
}
