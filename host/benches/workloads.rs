//! Issue 6's workloads on two engines: the native core and the component under wasmtime (the
//! wasm-bindgen build runs in Node: `js/bench/workloads.mjs`). `bash scripts/bench.sh` runs both
//! and prints one table; this alone: `cargo bench -p sequencer-host --bench workloads`.
//!
//! Environment:
//! - `BENCH_SCALE` (default 1): multiplies every workload's size (0.1 for a smoke run).
//! - `BENCH_RUNS` (default 3): runs per figure; the median is reported.
//! - `BENCH_ONLY`: comma-separated workloads to run (`empty,W1,W2,W3,W4,W5,W6`).
//! - `BENCH_OUT`: also write the rows there, tab-separated, for `js/bench/table.mjs`.
//! - `BENCH_ENGINES` (default `native,component`): `native` skips the component rows.
//! - `BENCH_WRITE_INTERVAL_US` (default 100): the group commit window of every engine's driver
//!   (`Driver::with_min_write_interval`); W1 and W2 also run without it.
//! - `BENCH_PAGE_EVENTS` (default: the driver's 4096): events per PLog read in W3.
//! - `SEQUENCER_COMPONENT`: the component (default: the `wasm`-profile build in the target dir).
//!
//! Storage is `BenchStorage` below: in memory like `MemoryStorage`, without its per-write log
//! (which would grow by millions of records) and with an optional write latency (W5). Every
//! engine runs against it; the native engine performs writes on a writer thread, as the
//! component's task driver does, so that a slow write never blocks a transaction on either.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant as StdInstant};

use futures::future::{BoxFuture, FutureExt};
use hashbrown::HashMap;
use sequencer::{
    Instant, Number, PLogOffset, Params, PlogPage as CorePage, SeqId, SeqValue, Sequencer, Start,
    Ticket, Work, WriteRequest, WsId,
};
use sequencer_host::bindings::{StartOutcome, Status};
use sequencer_host::{
    AppendError, Driver, DriverConfig, Limits, MonotonicClock, PartitionId, PartitionSequencer,
    PlogPage, Runtime, Storage, StorageError,
};

const KIND: u16 = 1;
/// The sequences a transaction takes a number from (the kind has four: 1..=4).
const SEQS: [u16; 3] = [1, 2, 3];
/// Large enough that backpressure never decides a figure (W1 holds at most 6,000 distinct
/// keys unwritten, W3 30,000; W4 adds 3 per transaction while a write is in flight).
const MAX_UNFLUSHED: usize = 1_000_000;

/// Marks the rows run without group commit.
const NO_GC: &str = "no group commit";

/// How the component engine runs a transaction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    /// `flush_start_batch`: finish the previous batch and number the next [`BATCH`] events as
    /// one transaction, one call.
    Batch,
    /// `flush_start_next_quad`: finish the previous event and start this one, one call with
    /// no list.
    Quad,
    /// `flush_start_next`: the same with the sequences and numbers as lists.
    Lists,
    /// `start_next`, then `flush`: two calls.
    StartNext,
    /// `start`, `next` per sequence, `flush`: five calls.
    PerStep,
}

/// Events per `flush_start_batch` call.
const BATCH: usize = 64;

impl Path {
    fn name(self) -> String {
        match self {
            Path::Batch => format!("batches of {BATCH} (flush-start-batch)"),
            Path::Quad => "1 event/call (flush-start-next-quad)".into(),
            Path::Lists => "1 event/call, lists (flush-start-next)".into(),
            Path::StartNext => "start-next + flush".into(),
            Path::PerStep => "per step (start, 3 next, flush)".into(),
        }
    }

    fn crossings(self) -> f64 {
        match self {
            Path::Batch => 1.0 / BATCH as f64,
            Path::Quad | Path::Lists => 1.0,
            Path::StartNext => 2.0,
            Path::PerStep => 5.0,
        }
    }

    /// Runs `n` transactions on workspaces `ws(0..n)` along this path.
    fn run(self, c: &Component, n: u64, ws: impl Fn(u64) -> WsId) {
        match self {
            Path::Batch => {
                let mut open = false;
                let mut chunk = Vec::with_capacity(BATCH);
                for first in (0..n).step_by(BATCH) {
                    chunk.clear();
                    chunk.extend((first..n.min(first + BATCH as u64)).map(&ws));
                    c.tx_batch(&chunk, &mut open);
                }
                if open {
                    c.finish();
                }
            }
            Path::Quad => {
                for i in 0..n {
                    c.tx_quad(ws(i), i == 0);
                }
                c.finish();
            }
            Path::Lists => {
                for i in 0..n {
                    c.tx_lists(ws(i), i == 0);
                }
                c.finish();
            }
            Path::StartNext => {
                for i in 0..n {
                    c.tx_start_next(ws(i));
                }
            }
            Path::PerStep => {
                for i in 0..n {
                    c.tx(ws(i));
                }
            }
        }
    }
}

/// Calls per bare-boundary figure (`BENCH_RAW_CALLS`, for profiling; 200,000).
fn raw_calls() -> u64 {
    std::env::var("BENCH_RAW_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000)
}

/// [`SEQS`] as the fixed-shape calls name them.
fn seq_quad() -> sequencer_host::bindings::SeqQuad {
    sequencer_host::bindings::SeqQuad {
        count: SEQS.len() as u8,
        s0: SEQS[0],
        s1: SEQS[1],
        s2: SEQS[2],
        s3: 0,
    }
}

fn params() -> Params {
    (1..=4)
        .fold(Params::new(), |p, s| p.with_seq(KIND, s, 1))
        .with_max_unflushed_values(MAX_UNFLUSHED)
}

// ---- storage ------------------------------------------------------------------------------

#[derive(Default)]
struct Data {
    view: HashMap<(PartitionId, WsId, SeqId), Number>,
    next_offset: HashMap<PartitionId, PLogOffset>,
    /// Partition 0's PLog: the event at offset `i + 1` is `plog[i]` (other partitions: empty).
    plog: Vec<Vec<SeqValue>>,
}

/// In-memory storage, optionally slow to write.
#[derive(Clone, Default)]
struct BenchStorage {
    data: Arc<Mutex<Data>>,
    write_delay: Option<Duration>,
}

impl BenchStorage {
    fn with_write_delay(delay: Duration) -> Self {
        Self {
            write_delay: Some(delay),
            ..Self::default()
        }
    }

    fn lock(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets the view and the stored offsets (the PLog stays), so a replay starts afresh.
    fn reset_view(&self) {
        let mut d = self.lock();
        d.view = HashMap::new();
        d.next_offset = HashMap::new();
    }

    fn seed_view(&self, partition: PartitionId, ws: WsId, seq: SeqId, value: Number) {
        self.lock().view.insert((partition, ws, seq), value);
    }

    fn seed_plog(&self, events: impl Iterator<Item = Vec<SeqValue>>) {
        self.lock().plog.extend(events);
    }

    fn numbers(&self, partition: PartitionId, ws: WsId, seqs: &[SeqId]) -> Vec<Number> {
        let d = self.lock();
        seqs.iter()
            .map(|&s| d.view.get(&(partition, ws, s)).copied().unwrap_or(0))
            .collect()
    }

    fn stored_offset(&self, partition: PartitionId) -> PLogOffset {
        self.lock()
            .next_offset
            .get(&partition)
            .copied()
            .unwrap_or(0)
    }

    fn apply(&self, partition: PartitionId, values: &[SeqValue], next_offset: PLogOffset) {
        let mut d = self.lock();
        for v in values {
            d.view.insert((partition, v.key.ws, v.key.seq), v.value);
        }
        d.next_offset.insert(partition, next_offset);
    }

    fn page(&self, partition: PartitionId, from: PLogOffset, max_events: usize) -> PlogPage {
        let d = self.lock();
        let mut page = PlogPage {
            values: Vec::new(),
            next: from,
            end: true,
        };
        if partition != 0 || from == 0 {
            return page;
        }
        let first = (from - 1) as usize;
        let last = d.plog.len().min(first.saturating_add(max_events));
        if first < last {
            let events = &d.plog[first..last];
            page.values
                .reserve(events.iter().map(Vec::len).sum::<usize>());
            for (i, event) in events.iter().enumerate() {
                let offset = from + i as u64;
                page.values.extend(event.iter().map(|v| (offset, *v)));
            }
            page.next = from + (last - first) as u64;
        }
        page.end = last >= d.plog.len();
        page
    }
}

impl Storage for BenchStorage {
    fn read_numbers(
        &self,
        partition: PartitionId,
        ws: WsId,
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        Ok(self.numbers(partition, ws, seqs))
    }

    fn read_numbers_many(
        &self,
        partition: PartitionId,
        ws: &[WsId],
        seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        let d = self.lock();
        let keys = ws.iter().flat_map(|&w| seqs.iter().map(move |&s| (w, s)));
        Ok(keys
            .map(|(w, s)| d.view.get(&(partition, w, s)).copied().unwrap_or(0))
            .collect())
    }

    fn read_next_offset(
        &self,
        partition: PartitionId,
    ) -> BoxFuture<'static, Result<PLogOffset, StorageError>> {
        futures::future::ready(Ok(self.stored_offset(partition))).boxed()
    }

    fn write(
        &self,
        partition: PartitionId,
        values: Vec<SeqValue>,
        next_offset: PLogOffset,
    ) -> BoxFuture<'static, Result<(), StorageError>> {
        let this = self.clone();
        match self.write_delay {
            None => {
                this.apply(partition, &values, next_offset);
                futures::future::ready(Ok(())).boxed()
            }
            Some(delay) => async move {
                futures_timer::Delay::new(delay).await;
                this.apply(partition, &values, next_offset);
                Ok(())
            }
            .boxed(),
        }
    }

    fn read_plog(
        &self,
        partition: PartitionId,
        from: PLogOffset,
        max_events: usize,
    ) -> BoxFuture<'static, Result<PlogPage, StorageError>> {
        futures::future::ready(Ok(self.page(partition, from, max_events))).boxed()
    }

    fn append_event(
        &self,
        partition: PartitionId,
        offset: PLogOffset,
        values: &[SeqValue],
        _payload: &[u8],
    ) -> Result<(), AppendError> {
        let mut d = self.lock();
        let expected = d.plog.len() as u64 + 1;
        if partition != 0 || offset != expected {
            return Err(AppendError::WrongOffset {
                expected,
                offered: offset,
            });
        }
        d.plog.push(values.to_vec());
        Ok(())
    }
}

// ---- the native engine --------------------------------------------------------------------

/// The core driven in-process: reads inline, writes on a writer thread (as the component's
/// task driver performs them on its own thread).
struct Native {
    seq: Sequencer,
    storage: BenchStorage,
    writes: Option<mpsc::Sender<(StdInstant, WriteRequest)>>,
    done: mpsc::Receiver<Ticket>,
    writer: Option<JoinHandle<()>>,
    writes_in_flight: usize,
    origin: StdInstant,
    page_events: usize,
}

impl Native {
    /// `interval`: group commit as `Driver::with_min_write_interval` does it.
    fn new(storage: &BenchStorage, page_events: usize, interval: Duration) -> Self {
        let (writes, rx) = mpsc::channel::<(StdInstant, WriteRequest)>();
        let (done_tx, done) = mpsc::channel();
        let st = storage.clone();
        let writer = std::thread::spawn(move || {
            for (began, w) in rx {
                let _ = futures::executor::block_on(st.write(0, w.values, w.next_plog_offset));
                let due = began + interval;
                let now = StdInstant::now();
                if now < due {
                    std::thread::sleep(due - now);
                }
                if done_tx.send(w.ticket).is_err() {
                    return;
                }
            }
        });
        let mut n = Self {
            seq: Sequencer::new(params()).expect("params"),
            storage: storage.clone(),
            writes: Some(writes),
            done,
            writer: Some(writer),
            writes_in_flight: 0,
            origin: StdInstant::now(),
            page_events,
        };
        n.pump();
        n
    }

    fn now(&self) -> Instant {
        Instant::from_nanos(self.origin.elapsed().as_nanos() as u64)
    }

    /// Reports finished writes, then performs all work due.
    fn pump(&mut self) {
        while let Ok(t) = self.done.try_recv() {
            self.writes_in_flight -= 1;
            self.seq.complete_write(t).expect("complete_write");
        }
        let now = self.now();
        while let Some(work) = self.seq.poll_work(now) {
            match work {
                Work::Write(w) => {
                    self.writes_in_flight += 1;
                    let _ = self
                        .writes
                        .as_ref()
                        .expect("writer")
                        .send((StdInstant::now(), w));
                }
                Work::ReadNextOffset { ticket } => {
                    let o = self.storage.stored_offset(0);
                    self.seq.complete_next_offset(ticket, o).expect("offset");
                }
                Work::ReadPlog { ticket, from } => {
                    let page = self.storage.page(0, from, self.page_events);
                    let page = CorePage {
                        values: &page.values,
                        next: page.next,
                        end: page.end,
                    };
                    self.seq
                        .complete_plog_read(ticket, page, now)
                        .expect("plog page");
                }
            }
        }
    }

    /// `start`, reading numbers inline; `None` for "not now".
    fn start(&mut self, ws: WsId) -> Option<PLogOffset> {
        match self.seq.start(KIND, ws).expect("start") {
            Start::Started(o) => Some(o),
            Start::NotNow(_) => {
                self.pump();
                std::thread::yield_now();
                None
            }
            Start::Load(r) => {
                let numbers = self.storage.numbers(0, r.ws, &r.seqs);
                match self.seq.complete_numbers(r.ticket, &numbers).expect("load") {
                    Start::Started(o) => Some(o),
                    _ => None,
                }
            }
        }
    }

    fn tx(&mut self, ws: WsId) {
        while self.start(ws).is_none() {}
        for s in SEQS {
            std::hint::black_box(self.seq.next(s).expect("next"));
        }
        self.seq.flush().expect("flush");
        self.pump();
    }

    /// Waits until every write is done.
    fn drain(&mut self) {
        loop {
            self.pump();
            if self.writes_in_flight == 0 && self.seq.poll_timeout().is_none() {
                break;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

impl Drop for Native {
    fn drop(&mut self) {
        self.writes = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

// ---- the component engine -----------------------------------------------------------------

struct Component {
    driver: Driver,
    seq: PartitionSequencer,
}

impl Component {
    fn open(
        runtime: &Runtime,
        storage: &BenchStorage,
        page_events: usize,
        interval: Duration,
    ) -> Self {
        let driver = Driver::spawn(
            Arc::new(storage.clone()),
            Arc::new(MonotonicClock::new()),
            DriverConfig { page_events },
        )
        .with_min_write_interval(interval);
        let seq = driver.open(runtime, 0, &params()).expect("open");
        Self { driver, seq }
    }

    fn wait_ready(&self) {
        while self.seq.status() == Status::Actualizing {
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    fn start(&self, ws: WsId) {
        loop {
            match self.seq.start(KIND, ws).expect("start") {
                StartOutcome::Started(_) => return,
                StartOutcome::NotNow(_) => std::thread::yield_now(),
            }
        }
    }

    /// One call per step: start, next per sequence, flush.
    fn tx(&self, ws: WsId) {
        self.start(ws);
        for s in SEQS {
            std::hint::black_box(self.seq.next(s).expect("next"));
        }
        self.seq.flush().expect("flush");
    }

    /// One event per call, no lists: the first event `start_next_quad`, every later one
    /// `flush_start_next_quad` (finishing the previous event in the same call); `finish`
    /// flushes the last.
    fn tx_quad(&self, ws: WsId, first: bool) {
        let quad = seq_quad();
        let mut n = if first {
            self.seq.start_next_quad(KIND, ws, quad)
        } else {
            self.seq.flush_start_next_quad(KIND, ws, quad)
        }
        .expect("quad start");
        while let StartOutcome::NotNow(_) = n.outcome {
            std::thread::yield_now();
            n = self
                .seq
                .start_next_quad(KIND, ws, quad)
                .expect("start_next_quad");
        }
        std::hint::black_box(n);
    }

    /// `ws` as events of transactions of up to [`BATCH`] events: `flush_start_batch` completes
    /// the events staged before (`open`) and numbers the next ones, until all of `ws` are.
    fn tx_batch(&self, ws: &[WsId], open: &mut bool) {
        let mut rest = ws;
        while !rest.is_empty() {
            let batch = if *open {
                self.seq.flush_start_batch(KIND, rest, seq_quad())
            } else {
                self.seq.start_batch(KIND, rest, seq_quad())
            }
            .expect("batch");
            *open = batch.started > 0;
            rest = &rest[batch.started as usize..];
            if batch.started == 0 {
                std::thread::yield_now();
            }
            std::hint::black_box(batch.numbers);
        }
    }

    /// One event per call with lists: the first event `start_next`, every later one
    /// `flush_start_next`; `finish` flushes the last.
    fn tx_lists(&self, ws: WsId, first: bool) {
        let (mut outcome, numbers) = if first {
            self.seq.start_next(KIND, ws, &SEQS)
        } else {
            self.seq.flush_start_next(KIND, ws, &SEQS)
        }
        .expect("batched start");
        std::hint::black_box(numbers);
        while let StartOutcome::NotNow(_) = outcome {
            std::thread::yield_now();
            let (o, numbers) = self.seq.start_next(KIND, ws, &SEQS).expect("start_next");
            std::hint::black_box(numbers);
            outcome = o;
        }
    }

    /// The batched path without `flush_start_next`: `start_next`, then `flush` (two calls).
    fn tx_start_next(&self, ws: WsId) {
        loop {
            let (outcome, numbers) = self.seq.start_next(KIND, ws, &SEQS).expect("start_next");
            std::hint::black_box(numbers);
            if let StartOutcome::Started(_) = outcome {
                break;
            }
            std::thread::yield_now();
        }
        self.seq.flush().expect("flush");
    }

    fn finish(&self) {
        self.seq.flush().expect("flush");
    }
}

impl Drop for Component {
    fn drop(&mut self) {
        self.seq.cleanup();
        self.driver.sync();
    }
}

// ---- the bare boundary --------------------------------------------------------------------

/// The cost of an empty component call without this host's per-call work (lock, refuel,
/// hand-off to the driver): `status` on a store of the bench's own.
mod raw {
    use sequencer_host::bindings::{
        GuestSeqValue, SequencerPlugin, clock, sequencer::plugin::types, storage,
    };
    use wasmtime::component::{Component, HasSelf, Linker};
    use wasmtime::{Config, Engine, Store};

    pub struct State;

    impl storage::Host for State {
        fn read_numbers(&mut self, _ws: u64, seqs: Vec<u16>) -> Result<Vec<u64>, String> {
            Ok(vec![0; seqs.len()])
        }
        fn read_numbers_many(&mut self, ws: Vec<u64>, seqs: Vec<u16>) -> Result<Vec<u64>, String> {
            Ok(vec![0; ws.len() * seqs.len()])
        }
        fn begin_read_next_offset(&mut self, _op: u64) {}
        fn begin_write(&mut self, _op: u64, _values: Vec<GuestSeqValue>, _next: u64) {}
        fn begin_read_plog(&mut self, _op: u64, _first: u64) {}
    }

    impl clock::Host for State {
        fn now(&mut self) -> u64 {
            0
        }
        fn set_wake(&mut self, _at: Option<u64>) {}
    }

    impl types::Host for State {}

    /// Nanoseconds per empty call, per `flush-start-next` and per `flush-start-next-quad`
    /// (W2's transaction in one call, with and without lists), `n` calls each.
    pub fn empty_call_ns(bytes: &[u8], fuel: bool, n: u64) -> [f64; 3] {
        let mut config = Config::new();
        config.consume_fuel(fuel);
        config.concurrency_support(false);
        if std::env::var_os("BENCH_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config).expect("engine");
        let component = Component::new(&engine, bytes).expect("component");
        let mut linker = Linker::<State>::new(&engine);
        SequencerPlugin::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s).expect("link");
        linker
            .define_unknown_imports_as_traps(&component)
            .expect("wasi traps");
        let mut store = Store::new(&engine, State);
        if fuel {
            store.set_fuel(u64::MAX).expect("fuel");
        }
        let plugin = SequencerPlugin::instantiate(&mut store, &component, &linker).expect("inst");
        let api = plugin.sequencer_plugin_sequencer_api().sequencer();
        let params = sequencer_host::guest_params(&super::params());
        let handle = api
            .call_create(&mut store, &params)
            .expect("call")
            .expect("create");
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(api.call_status(&mut store, handle).expect("status"));
        }
        let empty = t.elapsed().as_nanos() as f64 / n as f64;
        // Actualize from empty storage, then W2's transactions on the batched path. Writes are
        // begun but never reported: no driver, the numbers stay in memory (three keys).
        api.call_deliver(&mut store, handle, 0, &types::Outcome::NextOffset(0))
            .expect("call")
            .expect("offset");
        let page = types::PlogPage {
            values: Vec::new(),
            next: 1,
            end: true,
        };
        api.call_deliver(&mut store, handle, 1, &types::Outcome::PlogPage(page))
            .expect("call")
            .expect("page");
        let seqs = super::SEQS;
        let _ = api.call_start_next(&mut store, handle, super::KIND, 7, &seqs);
        let t = std::time::Instant::now();
        for _ in 0..n {
            let r = api.call_flush_start_next(&mut store, handle, super::KIND, 7, &seqs);
            std::hint::black_box(r.expect("call").expect("flush-start-next"));
        }
        let lists = t.elapsed().as_nanos() as f64 / n as f64;
        let quad = super::seq_quad();
        let t = std::time::Instant::now();
        for _ in 0..n {
            let r = api.call_flush_start_next_quad(&mut store, handle, super::KIND, 7, quad);
            std::hint::black_box(r.expect("call").expect("flush-start-next-quad"));
        }
        let fixed = t.elapsed().as_nanos() as f64 / n as f64;
        [empty, lists, fixed]
    }
}

// ---- measuring ----------------------------------------------------------------------------

struct Config {
    scale: f64,
    runs: usize,
    only: Option<Vec<String>>,
    page_events: usize,
    /// Run the component engine too (`BENCH_ENGINES=native` skips it).
    components: bool,
    /// Group commit window of every engine's driver (`BENCH_WRITE_INTERVAL_US`, default 100).
    interval: Duration,
    component: PathBuf,
}

impl Config {
    fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let component = var("SEQUENCER_COMPONENT")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let target = var("CARGO_TARGET_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
                target.join("wasm32-wasip2/wasm/sequencer.wasm")
            });
        Self {
            scale: var("BENCH_SCALE")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1.0),
            runs: var("BENCH_RUNS")
                .and_then(|v| v.parse().ok())
                .unwrap_or(3)
                .max(1),
            only: var("BENCH_ONLY").map(|v| v.split(',').map(|s| s.trim().to_owned()).collect()),
            page_events: var("BENCH_PAGE_EVENTS")
                .and_then(|v| v.parse().ok())
                .unwrap_or(DriverConfig::default().page_events),
            components: var("BENCH_ENGINES").is_none_or(|e| e.contains("component")),
            interval: Duration::from_micros(
                var("BENCH_WRITE_INTERVAL_US")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(100),
            ),
            component,
        }
    }

    fn n(&self, full: u64) -> u64 {
        ((full as f64 * self.scale) as u64).max(1)
    }

    fn wants(&self, w: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|x| x.eq_ignore_ascii_case(w)))
    }
}

/// One line of the table.
struct Row {
    workload: &'static str,
    engine: &'static str,
    path: String,
    ops: u64,
    unit: &'static str,
    /// Median nanoseconds per operation.
    ns: f64,
    /// Upper bound for `ns` (W1/W2 component rows), if any.
    bound: Option<f64>,
    /// Minimum operations per second (or, for W6, maximum µs per instance), if any.
    target: Option<Target>,
    note: String,
}

#[derive(Clone, Copy)]
enum Target {
    OpsPerSec(f64),
    MaxNs(f64),
}

impl Row {
    fn met(&self) -> &'static str {
        let ok = match self.target {
            None => return "",
            Some(Target::OpsPerSec(t)) => 1e9 / self.ns >= t,
            Some(Target::MaxNs(t)) => self.ns <= t,
        } && self.bound.is_none_or(|b| self.ns <= b);
        if ok { "met" } else { "MISSED" }
    }

    fn target_text(&self) -> String {
        match self.target {
            None => String::new(),
            Some(Target::OpsPerSec(t)) => format!(">= {}/s", si(t)),
            Some(Target::MaxNs(t)) => format!("<= {:.0} us", t / 1e3),
        }
    }
}

fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs `f` `runs` times; each returns its measured nanoseconds; the median per op.
fn measure(runs: usize, ops: u64, mut f: impl FnMut() -> f64) -> f64 {
    median((0..runs).map(|_| f() / ops as f64).collect())
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

// ---- workloads ----------------------------------------------------------------------------

struct Runtimes {
    fuel: Runtime,
    no_fuel: Runtime,
}

struct Bench {
    cfg: Config,
    rt: Runtimes,
    rows: Vec<Row>,
    /// Empty-call cost (ns) through `PartitionSequencer::status`, fuel on / off.
    empty: (f64, f64),
}

fn workspace_w1(i: u64) -> WsId {
    i % 1000
}

impl Bench {
    fn native_tx(
        &self,
        n: u64,
        storage: &BenchStorage,
        ws: fn(u64) -> WsId,
        interval: Duration,
    ) -> f64 {
        let mut e = Native::new(storage, self.cfg.page_events, interval);
        // Warm-up outside the clock: the workspaces' first loads.
        for i in 0..1000.min(n) {
            e.tx(ws(i));
        }
        let t = StdInstant::now();
        for i in 0..n {
            e.tx(ws(i));
        }
        let ns = t.elapsed().as_nanos() as f64;
        e.drain();
        ns
    }

    fn component_tx(
        &self,
        rt: &Runtime,
        n: u64,
        storage: &BenchStorage,
        ws: fn(u64) -> WsId,
        path: Path,
        interval: Duration,
    ) -> f64 {
        let c = Component::open(rt, storage, self.cfg.page_events, interval);
        c.wait_ready();
        for i in 0..1000.min(n) {
            c.tx(ws(i));
        }
        let t = StdInstant::now();
        path.run(&c, n, ws);
        let ns = t.elapsed().as_nanos() as f64;
        c.driver.idle();
        ns
    }

    /// W1, W2, W5: transactions over workspaces `ws(i)`. W1 and W2 (`with_bound`) also run
    /// without fuel, the two-call batched path, and without group commit.
    fn tx_workload(
        &mut self,
        name: &'static str,
        full: u64,
        ws: fn(u64) -> WsId,
        delay: Option<Duration>,
        targets: (f64, Option<f64>),
        with_bound: bool,
    ) {
        let n = self.cfg.n(full);
        let runs = self.cfg.runs;
        let storage = || match delay {
            Some(d) => BenchStorage::with_write_delay(d),
            None => BenchStorage::default(),
        };
        let window = self.cfg.interval;
        let mut intervals = vec![window];
        if with_bound && !window.is_zero() {
            intervals.push(Duration::ZERO);
        }
        for interval in intervals {
            let suffix = if interval == window {
                String::new()
            } else {
                format!(", {NO_GC}")
            };
            let native = measure(runs, n, || self.native_tx(n, &storage(), ws, interval));
            self.rows.push(Row {
                workload: name,
                engine: "native",
                path: format!("core calls{suffix}"),
                ops: n,
                unit: "tx",
                ns: native,
                bound: None,
                target: None,
                note: String::new(),
            });
            let mut variants = vec![
                (Path::Batch, true),
                (Path::Quad, true),
                (Path::PerStep, true),
            ];
            if with_bound && interval == window {
                variants.extend([
                    (Path::Lists, true),
                    (Path::StartNext, true),
                    (Path::Batch, false),
                    (Path::Quad, false),
                ]);
            }
            if !self.cfg.components {
                variants.clear();
            }
            for (path, fuel) in variants {
                let rt = if fuel {
                    &self.rt.fuel
                } else {
                    &self.rt.no_fuel
                };
                let ns = measure(runs, n, || {
                    self.component_tx(rt, n, &storage(), ws, path, interval)
                });
                let crossings = path.crossings();
                let empty = if fuel { self.empty.0 } else { self.empty.1 };
                let target = match path {
                    Path::Batch if interval == window => targets.0,
                    Path::PerStep if interval == window => targets.1.unwrap_or(0.0),
                    _ => 0.0,
                };
                self.rows.push(Row {
                    workload: name,
                    engine: "component",
                    path: format!(
                        "{}{}{suffix}",
                        path.name(),
                        if fuel { "" } else { ", fuel off" }
                    ),
                    ops: n,
                    unit: "tx",
                    ns,
                    bound: with_bound.then_some(1.25 * (native + crossings * empty)),
                    target: (target > 0.0).then_some(Target::OpsPerSec(target)),
                    note: if with_bound {
                        format!("{crossings:.3} crossing(s)/tx, empty call {empty:.0} ns")
                    } else {
                        String::new()
                    },
                });
            }
        }
    }

    fn empty_call(&mut self) {
        let one = |rt: &Runtime| {
            let storage = BenchStorage::default();
            let c = Component::open(rt, &storage, self.cfg.page_events, self.cfg.interval);
            c.wait_ready();
            let n = 200_000;
            measure(self.cfg.runs, n, || {
                let t = StdInstant::now();
                for _ in 0..n {
                    std::hint::black_box(c.seq.status());
                }
                t.elapsed().as_nanos() as f64
            })
        };
        let fuel = one(&self.rt.fuel);
        let no_fuel = one(&self.rt.no_fuel);
        self.empty = (fuel, no_fuel);
        let bytes = std::fs::read(&self.cfg.component).expect("component");
        for fuel in [true, false] {
            let runs: Vec<[f64; 3]> = (0..self.cfg.runs)
                .map(|_| raw::empty_call_ns(&bytes, fuel, raw_calls()))
                .collect();
            let fuel_text = if fuel { "on" } else { "off" };
            let calls = [
                (
                    "status()",
                    "wasmtime alone: no lock, refuel or driver hand-off",
                ),
                (
                    "flush-start-next (lists)",
                    "W2's transaction in one call, without host or driver",
                ),
                ("flush-start-next-quad", "the same without lists"),
            ];
            for (i, (call, note)) in calls.into_iter().enumerate() {
                self.rows.push(Row {
                    workload: "empty call",
                    engine: "component",
                    path: format!("{call}, bare store, fuel {fuel_text}"),
                    ops: raw_calls(),
                    unit: "call",
                    ns: median(runs.iter().map(|r| r[i]).collect()),
                    bound: None,
                    target: None,
                    note: note.into(),
                });
            }
        }
    }

    fn w3(&mut self) {
        let events = self.cfg.n(1_000_000);
        let storage = BenchStorage::default();
        storage.seed_plog((0..events).map(|i| {
            let ws = i % 10_000;
            let value = i / 10_000 + 1;
            SEQS.iter().map(|&s| SeqValue::new(ws, s, value)).collect()
        }));
        let runs = self.cfg.runs;
        let page = self.cfg.page_events;
        let native = measure(runs, events, || {
            storage.reset_view();
            let t = StdInstant::now();
            let mut e = Native::new(&storage, page, self.cfg.interval);
            while e.start(0).is_none() {}
            let ns = t.elapsed().as_nanos() as f64;
            e.seq.flush().expect("flush");
            e.drain();
            ns
        });
        self.rows.push(Row {
            workload: "W3 actualize",
            engine: "native",
            path: format!("replay, pages of {page} events"),
            ops: events,
            unit: "event",
            ns: native,
            bound: None,
            target: None,
            note: String::new(),
        });
        let runtimes = [(&self.rt.fuel, true), (&self.rt.no_fuel, false)];
        for (rt, fuel) in runtimes.into_iter().filter(|_| self.cfg.components) {
            let ns = measure(runs, events, || {
                storage.reset_view();
                let driver = Driver::spawn(
                    Arc::new(storage.clone()),
                    Arc::new(MonotonicClock::new()),
                    DriverConfig { page_events: page },
                );
                let t = StdInstant::now();
                let seq = driver.open(rt, 0, &params()).expect("open");
                loop {
                    match seq.start(KIND, 0).expect("start") {
                        StartOutcome::Started(_) => break,
                        StartOutcome::NotNow(_) => std::thread::sleep(Duration::from_micros(20)),
                    }
                }
                let ns = t.elapsed().as_nanos() as f64;
                seq.flush().expect("flush");
                driver.idle();
                seq.cleanup();
                ns
            });
            self.rows.push(Row {
                workload: "W3 actualize",
                engine: "component",
                path: format!(
                    "replay, pages of {page} events{}",
                    if fuel { "" } else { ", fuel off" }
                ),
                ops: events,
                unit: "event",
                ns,
                bound: None,
                target: Some(Target::OpsPerSec(3_000_000.0)),
                note: "open -> first start".into(),
            });
        }
    }

    fn w4(&mut self) {
        let n = self.cfg.n(100_000);
        let storage = BenchStorage::default();
        for ws in 0..n {
            for s in 1..=4 {
                storage.seed_view(0, ws, s, 10);
            }
        }
        let runs = self.cfg.runs;
        let page = self.cfg.page_events;
        let native = measure(runs, n, || {
            let mut e = Native::new(&storage, page, self.cfg.interval);
            while e.start(u64::MAX).is_none() {}
            e.seq.flush().expect("flush");
            let t = StdInstant::now();
            for ws in 0..n {
                e.tx(ws);
            }
            let ns = t.elapsed().as_nanos() as f64;
            e.drain();
            ns
        });
        self.rows.push(Row {
            workload: "W4 cold",
            engine: "native",
            path: "core calls".into(),
            ops: n,
            unit: "tx",
            ns: native,
            bound: None,
            target: None,
            note: "every start loads".into(),
        });
        let paths = [Path::Batch, Path::Quad, Path::PerStep];
        for path in paths.into_iter().filter(|_| self.cfg.components) {
            let ns = measure(runs, n, || {
                let c = Component::open(&self.rt.fuel, &storage, page, self.cfg.interval);
                c.wait_ready();
                let t = StdInstant::now();
                path.run(&c, n, |ws| ws);
                let ns = t.elapsed().as_nanos() as f64;
                c.driver.idle();
                ns
            });
            self.rows.push(Row {
                workload: "W4 cold",
                engine: "component",
                path: path.name(),
                ops: n,
                unit: "tx",
                ns,
                bound: None,
                target: Some(Target::OpsPerSec(500_000.0)),
                note: "every start reads numbers (1 import call)".into(),
            });
        }
    }

    fn w6(&mut self) {
        let n = self.cfg.n(10_000) as u32;
        let runs = self.cfg.runs;
        // Native: the core alone, actualized against empty storage.
        let storage = BenchStorage::default();
        let mut mem = Vec::new();
        let native = measure(runs, n as u64, || {
            let before = rss_bytes();
            let t = StdInstant::now();
            let all: Vec<Sequencer> = (0..n)
                .map(|_| {
                    let mut s = Sequencer::new(params()).expect("params");
                    let now = Instant::from_nanos(0);
                    while let Some(w) = s.poll_work(now) {
                        match w {
                            Work::ReadNextOffset { ticket } => {
                                s.complete_next_offset(ticket, 0).expect("offset")
                            }
                            Work::ReadPlog { ticket, from } => {
                                let page = CorePage {
                                    values: &[],
                                    next: from,
                                    end: true,
                                };
                                s.complete_plog_read(ticket, page, now)
                                    .map(|_| ())
                                    .expect("page")
                            }
                            Work::Write(_) => unreachable!("nothing to write"),
                        }
                    }
                    s
                })
                .collect();
            let ns = t.elapsed().as_nanos() as f64;
            mem.push((rss_bytes().saturating_sub(before)) as f64 / n as f64);
            drop(all);
            ns
        });
        self.rows.push(Row {
            workload: "W6 density",
            engine: "native",
            path: "Sequencer::new + actualize".into(),
            ops: n as u64,
            unit: "instance",
            ns: native,
            bound: None,
            target: None,
            note: format!("{:.1} KiB RSS/instance", median(mem) / 1024.0),
        });
        if !self.cfg.components {
            return;
        }
        let pooled = Limits {
            pooled_instances: Some(n + 16),
            ..Limits::default()
        };
        let pooled = Runtime::from_file(&self.cfg.component, pooled).expect("pooled runtime");
        for (rt, path) in [
            (&self.rt.fuel, "on-demand allocation"),
            (&pooled, "pooling allocator"),
        ] {
            let [open, mem, teardown] = Self::w6_open_held(rt, n, runs);
            self.rows.push(Row {
                workload: "W6 density",
                engine: "component",
                path: format!("instantiate + create (Driver::open, reads held), {path}"),
                ops: n as u64,
                unit: "instance",
                ns: median(open.clone()),
                bound: None,
                target: Some(Target::MaxNs(30_000.0)),
                note: format!(
                    "first run {:.1} us; {:.0} KiB RSS/idle instance; cleanup + drop {:.1} us",
                    open[0] / 1e3,
                    median(mem) / 1024.0,
                    median(teardown) / 1e3,
                ),
            });
            let ns = measure(runs, n as u64, || {
                Self::w6_open_until_ready(rt, n, &storage)
            });
            self.rows.push(Row {
                workload: "W6 density",
                engine: "component",
                path: format!("Driver::open until actualized, {path}"),
                ops: n as u64,
                unit: "instance",
                ns,
                bound: None,
                target: None,
                note: "actualization from empty storage runs on the driver thread meanwhile".into(),
            });
        }
    }

    /// W6, instantiation alone: `n` opens while storage holds every read, so no actualization
    /// overlaps them; then the reads are let through and the instances actualize. Per run:
    /// nanoseconds per open, RSS per idle instance once all are actualized (growth since before
    /// the first run, so what freed instances leave resident for reuse counts too), and
    /// nanoseconds per instance to clean up and drop them.
    fn w6_open_held(rt: &Runtime, n: u32, runs: usize) -> [Vec<f64>; 3] {
        let storage = sequencer_host::MemoryStorage::new();
        let [mut open, mut mem, mut teardown] = [(); 3].map(|_| Vec::with_capacity(runs));
        let before = rss_bytes();
        for _ in 0..runs {
            let driver = Driver::spawn(
                Arc::new(storage.clone()),
                Arc::new(MonotonicClock::new()),
                DriverConfig::default(),
            );
            driver.sync();
            storage.read_gate.close();
            let t = StdInstant::now();
            let all: Vec<PartitionSequencer> = (0..n)
                .map(|p| driver.open(rt, p, &params()).expect("open"))
                .collect();
            open.push(t.elapsed().as_nanos() as f64 / n as f64);
            storage.read_gate.open();
            driver.idle();
            mem.push(rss_bytes().saturating_sub(before) as f64 / n as f64);
            let t = StdInstant::now();
            for s in &all {
                s.cleanup();
            }
            drop(all);
            driver.sync();
            teardown.push(t.elapsed().as_nanos() as f64 / n as f64);
        }
        [open, mem, teardown]
    }

    /// W6 as a host opens partitions: `n` opens, each instance actualizing from empty storage
    /// on the driver thread while the next ones open; nanoseconds until all are actualized.
    fn w6_open_until_ready(rt: &Runtime, n: u32, storage: &BenchStorage) -> f64 {
        let driver = Driver::spawn(
            Arc::new(storage.clone()),
            Arc::new(MonotonicClock::new()),
            DriverConfig::default(),
        );
        driver.sync();
        let t = StdInstant::now();
        let all: Vec<PartitionSequencer> = (0..n)
            .map(|p| driver.open(rt, p, &params()).expect("open"))
            .collect();
        driver.idle();
        let ns = t.elapsed().as_nanos() as f64;
        for s in &all {
            s.cleanup();
        }
        drop(all);
        driver.sync();
        ns
    }

    fn print(&self) {
        let header = [
            "workload", "engine", "path", "ops", "ns/op", "ops/s", "x native", "bound ns",
            "target", "", "note",
        ];
        let mut lines: Vec<[String; 11]> = vec![header.map(String::from)];
        for r in &self.rows {
            let native = self
                .rows
                .iter()
                .find(|n| {
                    n.workload == r.workload
                        && n.engine == "native"
                        && n.path.contains(NO_GC) == r.path.contains(NO_GC)
                })
                .map(|n| n.ns);
            lines.push([
                r.workload.into(),
                r.engine.into(),
                r.path.clone(),
                format!("{} {}", si(r.ops as f64), r.unit),
                format!("{:.1}", r.ns),
                si(1e9 / r.ns),
                match native {
                    Some(n) if r.engine != "native" => format!("{:.2}", r.ns / n),
                    _ => String::new(),
                },
                r.bound.map(|b| format!("{b:.0}")).unwrap_or_default(),
                r.target_text(),
                r.met().into(),
                r.note.clone(),
            ]);
        }
        let mut widths = [0usize; 11];
        for l in &lines {
            for (w, c) in widths.iter_mut().zip(l) {
                *w = (*w).max(c.chars().count());
            }
        }
        for l in &lines {
            let cells: Vec<String> = l
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(i, (c, w))| {
                    if (3..=7).contains(&i) {
                        format!("{c:>w$}")
                    } else {
                        format!("{c:<w$}")
                    }
                })
                .collect();
            println!("{}", cells.join(" | ").trim_end());
        }
    }

    fn write_tsv(&self, path: &str) {
        let mut out = String::new();
        for r in &self.rows {
            let (tkind, tval) = match r.target {
                None => ("", 0.0),
                Some(Target::OpsPerSec(v)) => ("min_ops", v),
                Some(Target::MaxNs(v)) => ("max_ns", v),
            };
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\t{:.3}\t{}\t{}\t{}\t{}\n",
                r.workload,
                r.engine,
                r.path,
                r.ops,
                r.unit,
                r.ns,
                r.bound.map(|b| format!("{b:.3}")).unwrap_or_default(),
                tkind,
                tval,
                r.note
            ));
        }
        std::fs::write(path, out).expect("write BENCH_OUT");
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is understood.
    let cfg = Config::from_env();
    let load = |fuel: bool| {
        let limits = Limits {
            fuel_per_call: fuel.then_some(Limits::default().fuel_per_call).flatten(),
            ..Limits::default()
        };
        Runtime::from_file(&cfg.component, limits).unwrap_or_else(|e| {
            panic!("{e}\n(build the component first: bash scripts/build-component.sh)")
        })
    };
    let rt = Runtimes {
        fuel: load(true),
        no_fuel: load(false),
    };
    eprintln!(
        "bench: scale {}, {} runs per figure (median), component {}",
        cfg.scale,
        cfg.runs,
        cfg.component.display()
    );
    let mut b = Bench {
        cfg,
        rt,
        rows: Vec::new(),
        empty: (0.0, 0.0),
    };
    let step = |name: &str| eprintln!("bench: {name}");
    if b.cfg.components && (b.cfg.wants("empty") || b.cfg.wants("W1") || b.cfg.wants("W2")) {
        step("empty call");
        b.empty_call();
    }
    if b.cfg.wants("W1") {
        step("W1");
        b.tx_workload(
            "W1 tx",
            2_000_000,
            workspace_w1,
            None,
            (1_500_000.0, Some(500_000.0)),
            true,
        );
    }
    if b.cfg.wants("W2") {
        step("W2");
        b.tx_workload(
            "W2 tx-hot",
            2_000_000,
            |_| 7,
            None,
            (2_000_000.0, None),
            true,
        );
    }
    if b.cfg.wants("W3") {
        step("W3");
        b.w3();
    }
    if b.cfg.wants("W4") {
        step("W4");
        b.w4();
    }
    if b.cfg.wants("W5") {
        step("W5");
        // At least 90 % of W1's rate on the same path (fuel on).
        let w1 = |path: &str| {
            b.rows
                .iter()
                .find(|r| r.workload == "W1 tx" && r.engine == "component" && r.path == path)
                .map_or(0.0, |r| 0.9 * 1e9 / r.ns)
        };
        let targets = (w1(&Path::Batch.name()), Some(w1(&Path::PerStep.name())));
        b.tx_workload(
            "W5 slow flush",
            2_000_000,
            workspace_w1,
            Some(Duration::from_millis(5)),
            targets,
            false,
        );
    }
    if b.cfg.wants("W6") {
        step("W6");
        b.w6();
    }
    b.print();
    if let Ok(path) = std::env::var("BENCH_OUT") {
        b.write_tsv(&path);
    }
}
