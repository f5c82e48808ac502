//! The compiled component under wasmtime, embedded deterministically: the simulator's own
//! storage and clock are the imports, and nothing runs unless the simulator makes a call.
//!
//! The production host's driver performs storage work on a thread with real futures, which no
//! seed could replay; this embedding only records what the guest begins ([`Io::effects`]) and
//! lets the simulator decide when and how each operation completes.

use std::sync::OnceLock;

use sequencer::{HeldNumbers, NotNowReason};
use sequencer_host::runtime::link::{Instance, Limits, Linked, core_status, plog_words, wit_page};
use sequencer_host::runtime::{BatchNumbers, GuestParams, Outcome, QuadNumbers, SeqQuad};
use sequencer_host::{NotNowReason as GuestNotNow, StartOutcome};

use super::calls::{
    BatchReply, Call, Delivery, Engine, EngineFault, Quad, Refusal, Reply, Started, flat_layout,
};
use super::io::Io;

/// Fuel for one guest call: far more than any call needs, so running out means a runaway guest.
pub const FUEL_PER_CALL: u64 = 500_000_000;
/// The most linear memory an instance may grow to; growing beyond it fails the guest's
/// allocation, which traps.
pub const MEMORY_CAP_BYTES: usize = 64 << 20;

/// The component compiled and linked once per process, its imports over the simulator's [`Io`].
fn compiled() -> Result<&'static Linked<Io>, EngineFault> {
    static COMPILED: OnceLock<Result<Linked<Io>, String>> = OnceLock::new();
    COMPILED
        .get_or_init(|| {
            let limits = Limits {
                max_memory_bytes: MEMORY_CAP_BYTES,
                fuel_per_call: Some(FUEL_PER_CALL),
                pooled_instances: None,
            };
            Linked::from_file(&sequencer_host::runtime::link::component_path(), limits)
                .map_err(|e| format!("{e} (build it first: bash scripts/build-component.sh)"))
        })
        .as_ref()
        .map_err(|e| EngineFault::Trap(e.clone()))
}

/// One instance of the component holding one sequencer resource; the simulator's [`Io`] is
/// moved into its store for the duration of each call.
pub struct ComponentEngine(Instance<Io>);

fn trap(e: wasmtime::Error) -> EngineFault {
    EngineFault::Trap(format!("{e:#}"))
}

impl ComponentEngine {
    /// Instantiates the component and calls `create`.
    pub fn create(params: &GuestParams, io: &mut Io) -> Result<Result<Self, Refusal>, EngineFault> {
        let compiled = compiled()?;
        let (mut store, plugin) = compiled.instantiate(std::mem::take(io)).map_err(trap)?;
        let created = plugin
            .sequencer_plugin_sequencer_api()
            .sequencer()
            .call_create(&mut store, params);
        std::mem::swap(io, &mut store.data_mut().host);
        Ok(created.map_err(trap)?.map_err(Refusal::from).map(|handle| {
            Self(Instance {
                store,
                plugin,
                handle,
            })
        }))
    }

    fn dispatch(&mut self, call: &Call) -> wasmtime::Result<Reply> {
        let i = &mut self.0;
        let api = i.plugin.sequencer_plugin_sequencer_api().sequencer();
        let (store, h) = (&mut i.store, i.handle);
        Ok(match call {
            Call::Start { kind, ws } => Reply::Start(
                api.call_start(store, h, *kind, *ws)?
                    .map(started)
                    .map_err(Refusal::from),
            ),
            Call::StartNext { kind, ws, seqs } => Reply::StartNext(
                api.call_start_next(store, h, *kind, *ws, seqs)?
                    .map(|(o, n)| (started(o), n))
                    .map_err(Refusal::from),
            ),
            Call::FlushStartNext { kind, ws, seqs } => Reply::StartNext(
                api.call_flush_start_next(store, h, *kind, *ws, seqs)?
                    .map(|(o, n)| (started(o), n))
                    .map_err(Refusal::from),
            ),
            Call::StartNextQuad { kind, ws, seqs } => Reply::Quad(
                api.call_start_next_quad(store, h, *kind, *ws, seq_quad(seqs))?
                    .map(quad_reply)
                    .map_err(Refusal::from),
            ),
            Call::FlushStartNextQuad { kind, ws, seqs } => Reply::Quad(
                api.call_flush_start_next_quad(store, h, *kind, *ws, seq_quad(seqs))?
                    .map(quad_reply)
                    .map_err(Refusal::from),
            ),
            Call::Stage => Reply::Done(api.call_stage(store, h)?.map_err(Refusal::from)),
            Call::StartBatch { kind, ws, seqs } => Reply::Batch(
                api.call_start_batch(store, h, *kind, ws, seq_quad(seqs))?
                    .map(batch_reply)
                    .map_err(Refusal::from),
            ),
            Call::FlushStartBatch { kind, ws, seqs } => Reply::Batch(
                api.call_flush_start_batch(store, h, *kind, ws, seq_quad(seqs))?
                    .map(batch_reply)
                    .map_err(Refusal::from),
            ),
            Call::Next { seq } => {
                Reply::Number(api.call_next(store, h, *seq)?.map_err(Refusal::from))
            }
            Call::Flush => Reply::Done(api.call_flush(store, h)?.map_err(Refusal::from)),
            Call::Actualize => Reply::Done(api.call_actualize(store, h)?.map_err(Refusal::from)),
            Call::ActualizeBesideWrite => Reply::Done(
                api.call_actualize_beside_write(store, h)?
                    .map_err(Refusal::from),
            ),
            Call::Cleanup => {
                api.call_cleanup(store, h)?;
                Reply::Nothing
            }
            Call::Status => Reply::Status(core_status(api.call_status(store, h)?)),
            Call::HeldNumbers => {
                let h = api.call_held_numbers(store, h)?;
                Reply::Held(HeldNumbers {
                    cached: h.cached as usize,
                    unflushed: h.unflushed as usize,
                    transaction: h.transaction as usize,
                })
            }
            Call::Deliver {
                op,
                outcome: Delivery::PlogPage { values, next, end },
            } if flat_layout(*op) => Reply::Done(
                api.call_deliver_plog_words(store, h, *op, &plog_words(values), *next, *end)?
                    .map_err(Refusal::from),
            ),
            Call::Deliver { op, outcome } => Reply::Done(
                api.call_deliver(store, h, *op, &outcome_to_guest(outcome))?
                    .map_err(Refusal::from),
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
        self.0.refuel(FUEL_PER_CALL).map_err(trap)?;
        std::mem::swap(io, &mut self.0.store.data_mut().host);
        let reply = self.dispatch(call);
        std::mem::swap(io, &mut self.0.store.data_mut().host);
        reply.map_err(trap)
    }

    fn memory_peak(&self) -> Option<usize> {
        Some(self.0.store.data().peak_memory())
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
        Delivery::PlogPage { values, next, end } => {
            Outcome::PlogPage(wit_page(values, *next, *end))
        }
        Delivery::Failed(m) => Outcome::Failed(m.clone()),
    }
}
