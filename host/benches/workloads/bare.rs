//! The bare boundary: the cost of an empty component call without this host's per-call work
//! (lock, refuel, hand-off to the driver), on a store of the bench's own.

use sequencer::{Host, Instant, Read, SeqId, Status, Work, WsId};
use sequencer_host::runtime::bindings::sequencer::plugin::types;
use sequencer_host::runtime::link::{Limits, Linked};

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
    let limits = Limits {
        fuel_per_call: fuel.then_some(u64::MAX),
        ..Limits::default()
    };
    // `SEQUENCER_PERF_MAP=1` names the guest's functions for `perf report`.
    let linked = Linked::from_bytes(bytes, limits).expect("component");
    let params = sequencer_host::runtime::link::guest_params(&crate::params());
    let instance = linked
        .create(State, &params)
        .expect("call")
        .expect("create");
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
    // Actualize from empty storage, then W2's transactions on the batched path. Writes are
    // begun but never reported: no driver, the numbers stay in memory (three keys).
    api.call_deliver(&mut store, 0, &types::Outcome::NextOffset(0))
        .expect("call")
        .expect("offset");
    let page = types::PlogPage {
        values: Vec::new(),
        next: 1,
        end: true,
    };
    api.call_deliver(&mut store, 1, &types::Outcome::PlogPage(page))
        .expect("call")
        .expect("page");
    let seqs = crate::SEQS;
    let _ = api.call_start_next(&mut store, crate::KIND, 7, &seqs);
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
