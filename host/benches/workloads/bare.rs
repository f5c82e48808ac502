//! The bare boundary: the cost of an empty component call without this host's per-call work
//! (lock, refuel, hand-off to the driver), on a store of the bench's own.

use sequencer::{Host, Instant, Read, SeqId, Status, Work, WsId};
use sequencer_host::runtime::SeqQuad;
use sequencer_host::runtime::bindings::sequencer::plugin::types;
use sequencer_host::runtime::exports::InstanceFunctions as Guest;
use sequencer_host::runtime::link::{Instance, Limits, Linked, StoreData};
use wasmtime::Store;

/// Imports that answer at once and keep nothing.
pub struct State;

impl Host for State {
    fn now(&mut self) -> Instant {
        Instant::from_nanos(0)
    }
    fn read_numbers(&mut self, _ws: WsId, seqs: &[SeqId]) -> Read {
        Read::Numbers(vec![0; seqs.len()])
    }
    fn read_numbers_many(&mut self, ws: &[WsId], seqs: &[SeqId]) -> Read {
        Read::Numbers(vec![0; ws.len() * seqs.len()])
    }
    fn begin(&mut self, _work: Work) {}
    fn set_wake(&mut self, _at: Option<Instant>) {}
    fn status_changed(&mut self, _status: Status) {}
}

/// Nanoseconds per empty call, per `flush-start-next` and per `flush-start-next-quad`
/// (W2's transaction in one call, with and without lists), `n` calls each, and per W2
/// transaction one call per step (`start`, 3 `next`, `flush`: five calls, whose status changes
/// twice, so the guest reports it twice), `n / 5` transactions, and the same with
/// `start-status` and `flush-status` (the status in the results, no import call); all through
/// the WIT's `instance` interface, as the host calls; last, the empty call through the
/// `sequencer` resource's method (a handle lent per call).
pub fn empty_call_ns(bytes: &[u8], fuel: bool, n: u64) -> [f64; 6] {
    let instance = bare(bytes, fuel);
    let (mut store, handle) = (instance.store, instance.handle);
    // The host's path: the `instance` interface (no handle lent); the resource's method for
    // comparison.
    let api = instance.plugin.sequencer_plugin_instance();
    let t = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(api.call_status(&mut store).expect("status"));
    }
    let empty = t.elapsed().as_nanos() as f64 / n as f64;
    let resource = instance.plugin.sequencer_plugin_sequencer_api().sequencer();
    let t = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(resource.call_status(&mut store, handle).expect("status"));
    }
    let through_handle = t.elapsed().as_nanos() as f64 / n as f64;
    ready(api, &mut store);
    let seqs = crate::SEQS;
    let t = std::time::Instant::now();
    for _ in 0..n {
        let r = api.call_flush_start_next(&mut store, crate::KIND, 7, &seqs);
        std::hint::black_box(r.expect("call").expect("flush-start-next"));
    }
    let lists = t.elapsed().as_nanos() as f64 / n as f64;
    let quad = crate::seq_quad();
    let t = std::time::Instant::now();
    for _ in 0..n {
        let r = api.call_flush_start_next_quad(&mut store, crate::KIND, 7, quad);
        std::hint::black_box(r.expect("call").expect("flush-start-next-quad"));
    }
    let fixed = t.elapsed().as_nanos() as f64 / n as f64;
    api.call_flush(&mut store).expect("call").expect("flush");
    let steps = (n / 5).max(1);
    let t = std::time::Instant::now();
    for _ in 0..steps {
        let r = api.call_start(&mut store, crate::KIND, 7);
        std::hint::black_box(r.expect("call").expect("start"));
        for s in seqs {
            std::hint::black_box(api.call_next(&mut store, s).expect("call").expect("next"));
        }
        api.call_flush(&mut store).expect("call").expect("flush");
    }
    let per_step = t.elapsed().as_nanos() as f64 / steps as f64;
    let t = std::time::Instant::now();
    for _ in 0..steps {
        let r = api.call_start_status(&mut store, crate::KIND, 7);
        std::hint::black_box(r.expect("call").expect("start-status"));
        for s in seqs {
            std::hint::black_box(api.call_next(&mut store, s).expect("call").expect("next"));
        }
        let r = api.call_flush_status(&mut store);
        std::hint::black_box(r.expect("call").expect("flush-status"));
    }
    let status_in_results = t.elapsed().as_nanos() as f64 / steps as f64;
    [
        empty,
        lists,
        fixed,
        per_step,
        status_in_results,
        through_handle,
    ]
}

/// A sequencer on a bare store: imports that answer at once, fuel without limit (`fuel`) or
/// none. `SEQUENCER_PERF_MAP=1` names the guest's functions for `perf report`.
fn bare(bytes: &[u8], fuel: bool) -> Instance<State> {
    let limits = Limits {
        fuel_per_call: fuel.then_some(u64::MAX),
        ..Limits::default()
    };
    let linked = Linked::from_bytes(bytes, limits).expect("component");
    let params = sequencer_host::runtime::link::guest_params(&crate::params());
    linked
        .create(State, &params)
        .expect("call")
        .expect("create")
}

/// Actualizes from empty storage, then opens W2's first transaction: what the bare calls
/// continue. Writes are begun but never reported: no driver, the numbers stay in memory
/// (three keys).
fn ready(api: &Guest, store: &mut Store<StoreData<State>>) {
    api.call_deliver(&mut *store, 0, &types::Outcome::NextOffset(0))
        .expect("call")
        .expect("offset");
    let page = types::PlogPage {
        values: Vec::new(),
        next: 1,
        end: true,
    };
    api.call_deliver(&mut *store, 1, &types::Outcome::PlogPage(page))
        .expect("call")
        .expect("page");
    let _ = api.call_start_next(store, crate::KIND, 7, &crate::SEQS);
}

/// The wasm operators the guest runs per call, counted by fuel (one unit per operator): a
/// figure this machine's noise cannot move, for comparing two builds of the component. For
/// `status()`, W2's transaction in one `flush-start-next-quad`, and in five calls (`start`,
/// 3 `next`, `flush`).
pub fn wasm_ops(bytes: &[u8]) -> [u64; 3] {
    let instance = bare(bytes, true);
    let mut store = instance.store;
    let api = instance.plugin.sequencer_plugin_instance();
    ready(api, &mut store);
    let quad = crate::seq_quad();
    // The first flush begins the one write (never reported): counted apart from the steady
    // state measured.
    for _ in 0..2 {
        let r = api.call_flush_start_next_quad(&mut store, crate::KIND, 7, quad);
        r.expect("call").expect("flush-start-next-quad");
    }
    let mut burnt = |call: &mut dyn FnMut(&mut Store<StoreData<State>>)| {
        let before = store.get_fuel().expect("fuel");
        call(&mut store);
        before - store.get_fuel().expect("fuel")
    };
    let status = burnt(&mut |s| {
        api.call_status(s).expect("status");
    });
    let one_call = burnt(&mut |s| {
        let r = api.call_flush_start_next_quad(s, crate::KIND, 7, quad);
        r.expect("call").expect("flush-start-next-quad");
    });
    let per_step = burnt(&mut |s| {
        api.call_flush(&mut *s).expect("call").expect("flush");
        api.call_start(&mut *s, crate::KIND, 7)
            .expect("call")
            .expect("start");
        for seq in crate::SEQS {
            api.call_next(&mut *s, seq).expect("call").expect("next");
        }
    });
    [status, one_call, per_step]
}

/// The wasm operators per event of W3's replay (see [`wasm_ops`]): one page of `events`
/// events on as many workspaces, each with the transaction's sequences, delivered to a
/// sequencer that has just read the PLog's end; its replay, and the write it then begins.
pub fn replay_ops(bytes: &[u8], events: usize) -> f64 {
    let instance = bare(bytes, true);
    let mut store = instance.store;
    let api = instance.plugin.sequencer_plugin_instance();
    api.call_deliver(&mut store, 0, &types::Outcome::NextOffset(0))
        .expect("call")
        .expect("offset");
    let values = (1..=events as u64)
        .flat_map(|offset| {
            crate::SEQS.map(|seq| types::PlogValue {
                offset,
                ws: offset,
                seq,
                value: 1,
            })
        })
        .collect();
    let page = types::PlogPage {
        values,
        next: events as u64 + 1,
        end: true,
    };
    let before = store.get_fuel().expect("fuel");
    api.call_deliver(&mut store, 1, &types::Outcome::PlogPage(page))
        .expect("call")
        .expect("page");
    (before - store.get_fuel().expect("fuel")) as f64 / events as f64
}

/// `BENCH_BARE_QUAD=N` (for profiling, e.g. under callgrind): only N `flush-start-next-quad`
/// calls on a bare store with fuel on, then exit; W2's workspace, or W1's with
/// `BENCH_BARE_SPREAD=1`.
pub fn quad_only(bytes: &[u8], n: u64) -> ! {
    let instance = bare(bytes, true);
    let mut store = instance.store;
    let api = instance.plugin.sequencer_plugin_instance();
    ready(api, &mut store);
    let quad = crate::seq_quad();
    run_quad(api, &mut store, quad, n);
    std::process::exit(0)
}

/// `n` calls of `flush-start-next-quad`, each expected to start.
#[inline(never)]
fn run_quad(api: &Guest, store: &mut Store<StoreData<State>>, quad: SeqQuad, n: u64) {
    let spread = std::env::var_os("BENCH_BARE_SPREAD").is_some();
    for i in 0..n {
        let ws = if spread { crate::workspace_w1(i) } else { 7 };
        let r = api.call_flush_start_next_quad(&mut *store, crate::KIND, ws, quad);
        std::hint::black_box(r.expect("call").expect("flush-start-next-quad"));
    }
}
