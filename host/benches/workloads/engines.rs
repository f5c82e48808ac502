//! The engines a workload runs on: the native core driven in-process (`Native`) and the
//! component through the host (`Component`), with the paths a transaction takes through it
//! (`Path`).

use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant as StdInstant};

use sequencer::{
    Host, Instant, Outcome, PLogOffset, PlogPage as CorePage, Read, SeqId, Sequencer, Shell, Start,
    Status as CoreStatus, Ticket, Work, WriteRequest, WsId,
};
use sequencer_host::{
    Driver, DriverConfig, MonotonicClock, PartitionSequencer, PlogPage as HostPage, Runtime,
    StartOutcome, Status, Storage,
};

use crate::storage::BenchStorage;
use crate::{BATCH, KIND, SEQS, params, seq_quad};

/// How the component engine runs a transaction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Path {
    /// `flush_start_batch`: finish the previous batch and number the next [`BATCH`] events as
    /// one transaction, one call.
    Batch,
    /// `flush_start_next_quad`: finish the previous event and start this one, one call with
    /// no list.
    Quad,
    /// `PartitionSequencer::flush_start_next`: the same through the host's slice API (which
    /// sends up to four sequences as a `seq-quad`, more as lists).
    Slices,
    /// `start_next` (the slice API), then `flush`: two calls.
    StartNext,
    /// `start`, `next` per sequence, `flush`: five steps, two calls (the host hands out the
    /// numbers `start` gave ahead).
    PerStep,
}

impl Path {
    pub fn name(self) -> String {
        match self {
            Path::Batch => format!("batches of {BATCH} (flush-start-batch)"),
            Path::Quad => "1 event/call (flush-start-next-quad)".into(),
            Path::Slices => "1 event/call, slices (flush_start_next)".into(),
            Path::StartNext => "start_next (slices) + flush".into(),
            Path::PerStep => "per step (start, 3 next, flush)".into(),
        }
    }

    /// The path whose calls the native shell makes for this one: the same, but `Slices` makes
    /// `Quad`'s (the shell takes slices either way).
    pub fn native(self) -> Path {
        match self {
            Path::Slices => Path::Quad,
            p => p,
        }
    }

    /// The guest calls the path itself makes per transaction (the task driver's deliveries
    /// come on top: the bench counts them).
    pub fn crossings(self) -> f64 {
        match self {
            Path::Batch => 1.0 / BATCH as f64,
            // Per step: `take-flush-start-ahead`; the three `next`s are handed out ahead and
            // the flush waits for the next start.
            Path::Quad | Path::Slices | Path::PerStep => 1.0,
            Path::StartNext => 2.0,
        }
    }

    /// Runs `n` transactions on workspaces `ws(0..n)` along this path.
    pub fn run(self, c: &Component, n: u64, ws: impl Fn(u64) -> WsId) {
        match self {
            Path::Batch => {
                let mut open = false;
                for_each_batch(n, ws, |chunk| c.tx_batch(chunk, &mut open));
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
            Path::Slices => {
                for i in 0..n {
                    c.tx_slices(ws(i), i == 0);
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

/// The storage's page as the core reads it (borrowed).
fn core_page(page: &HostPage) -> CorePage<'_> {
    CorePage {
        values: &page.values,
        next: page.next,
        end: page.end,
    }
}

/// Calls `each` with workspaces `ws(0..n)` in chunks of [`BATCH`].
fn for_each_batch(n: u64, ws: impl Fn(u64) -> WsId, mut each: impl FnMut(&[WsId])) {
    let mut chunk = Vec::with_capacity(BATCH);
    for first in (0..n).step_by(BATCH) {
        chunk.clear();
        chunk.extend((first..n.min(first + BATCH as u64)).map(&ws));
        each(&chunk);
    }
}

// ---- the native engine --------------------------------------------------------------------

/// The core driven in-process: reads inline, writes on a writer thread (as the component's
/// task driver performs them on its own thread).
pub struct Native {
    pub seq: Sequencer,
    pub storage: BenchStorage,
    pub writes: Option<mpsc::Sender<(StdInstant, WriteRequest)>>,
    pub done: mpsc::Receiver<Ticket>,
    pub writer: Option<JoinHandle<()>>,
    pub writes_in_flight: usize,
    pub origin: StdInstant,
    pub page_events: usize,
}

impl Native {
    /// `interval`: group commit as `Driver::with_min_write_interval` does it.
    pub fn new(storage: &BenchStorage, page_events: usize, interval: Duration) -> Self {
        let (writes, done, writer) = spawn_writer(storage, interval);
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

    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.origin.elapsed().as_nanos() as u64)
    }

    /// Reports finished writes, then performs all work due.
    pub fn pump(&mut self) {
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
                    self.seq
                        .complete_plog_read(ticket, core_page(&page), now)
                        .expect("plog page");
                }
            }
        }
    }

    /// `start`, reading numbers inline; `None` for "not now".
    pub fn start(&mut self, ws: WsId) -> Option<PLogOffset> {
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

    pub fn tx(&mut self, ws: WsId) {
        while self.start(ws).is_none() {}
        for s in SEQS {
            std::hint::black_box(self.seq.next(s).expect("next"));
        }
        self.seq.flush().expect("flush");
        self.pump();
    }

    /// Waits until every write is done.
    pub fn drain(&mut self) {
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

/// The native engines' writer thread: performs each write, reports it no sooner than
/// `interval` after it began (group commit, as `Driver::with_min_write_interval`).
#[allow(clippy::type_complexity)]
fn spawn_writer(
    storage: &BenchStorage, interval: Duration,
) -> (
    mpsc::Sender<(StdInstant, WriteRequest)>,
    mpsc::Receiver<Ticket>,
    JoinHandle<()>,
) {
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
    (writes, done, writer)
}

// ---- the native shell: the component's calls without the boundary ------------------------

/// The shell's host for [`NativeShell`]: reads answered at once, writes to the writer thread,
/// everything else noted for the engine's pump (as the component's host notes it for the
/// task driver).
pub struct ShellHost {
    storage: BenchStorage,
    writes: Option<mpsc::Sender<(StdInstant, WriteRequest)>>,
    reads: Vec<Work>,
    writes_in_flight: usize,
    wake: Option<Instant>,
    origin: StdInstant,
}

impl Host for ShellHost {
    fn now(&mut self) -> Instant {
        Instant::from_nanos(self.origin.elapsed().as_nanos() as u64)
    }
    fn read_numbers(&mut self, ws: WsId, seqs: &[SeqId]) -> Read {
        Read::Numbers(self.storage.numbers(0, ws, seqs))
    }
    fn read_numbers_many(&mut self, ws: &[WsId], seqs: &[SeqId]) -> Read {
        Read::Numbers(
            ws.iter()
                .flat_map(|&w| self.storage.numbers(0, w, seqs))
                .collect(),
        )
    }
    fn begin(&mut self, work: Work) {
        match work {
            Work::Write(w) => {
                self.writes_in_flight += 1;
                let writes = self.writes.as_ref().expect("writer");
                let _ = writes.send((StdInstant::now(), w));
            }
            read => self.reads.push(read),
        }
    }
    fn set_wake(&mut self, at: Option<Instant>) {
        self.wake = at;
    }
    fn status_changed(&mut self, _status: CoreStatus) {}
}

/// The shell driven in-process: each component [`Path`]'s calls, made natively (the core,
/// the shell's composition and the host's reads and writes, no boundary), so that the
/// component's figure on a path can be set against the same calls without crossings.
pub struct NativeShell {
    shell: Shell,
    host: ShellHost,
    done: mpsc::Receiver<Ticket>,
    writer: Option<JoinHandle<()>>,
    page_events: usize,
    numbers: Vec<u64>,
}

impl NativeShell {
    pub fn new(storage: &BenchStorage, page_events: usize, interval: Duration) -> Self {
        let (writes, done, writer) = spawn_writer(storage, interval);
        let mut host = ShellHost {
            storage: storage.clone(),
            writes: Some(writes),
            reads: Vec::new(),
            writes_in_flight: 0,
            wake: None,
            origin: StdInstant::now(),
        };
        let shell = Shell::create(params(), &mut host).expect("params");
        let mut n = Self {
            shell,
            host,
            done,
            writer: Some(writer),
            page_events,
            numbers: Vec::new(),
        };
        while n.shell.status() == CoreStatus::Actualizing {
            n.pump();
        }
        n
    }

    /// Reports finished writes and performs the reads begun, then a wake-up that came due:
    /// what the component's task driver does between calls.
    pub fn pump(&mut self) {
        while let Ok(t) = self.done.try_recv() {
            self.host.writes_in_flight -= 1;
            let h = &mut self.host;
            self.shell.deliver(t, Outcome::Written, h).expect("written");
        }
        while !self.host.reads.is_empty() {
            for work in std::mem::take(&mut self.host.reads) {
                let h = &mut self.host;
                match work {
                    Work::ReadNextOffset { ticket } => {
                        let o = h.storage.stored_offset(0);
                        self.shell.deliver(ticket, Outcome::NextOffset(o), h)
                    }
                    Work::ReadPlog { ticket, from } => {
                        let page = h.storage.page(0, from, self.page_events);
                        self.shell
                            .deliver(ticket, Outcome::PlogPage(core_page(&page)), h)
                    }
                    Work::Write(_) => unreachable!("writes go to the writer"),
                }
                .expect("read");
            }
        }
        if self.host.wake.is_some_and(|at| at <= self.host.now()) {
            self.host.wake = None;
            self.shell.pump(&mut self.host);
        }
    }

    /// Runs `n` transactions on workspaces `ws(0..n)` with `path`'s calls.
    pub fn run(&mut self, path: Path, n: u64, ws: impl Fn(u64) -> WsId) {
        let mut quad = [0; 3];
        match path {
            Path::Batch => {
                let mut open = false;
                for_each_batch(n, ws, |chunk| {
                    let mut rest = chunk;
                    while !rest.is_empty() {
                        self.numbers.clear();
                        let (h, nums) = (&mut self.host, &mut self.numbers);
                        let batch = if open {
                            self.shell.flush_start_batch(KIND, rest, &SEQS, nums, h)
                        } else {
                            self.shell.start_batch(KIND, rest, &SEQS, nums, h)
                        }
                        .expect("batch");
                        open = batch.started > 0;
                        rest = &rest[batch.started as usize..];
                        std::hint::black_box(&self.numbers);
                        self.pump();
                        if batch.started == 0 {
                            std::thread::yield_now();
                        }
                    }
                });
                if open {
                    self.shell.flush(&mut self.host).expect("flush");
                }
            }
            Path::Quad | Path::Slices => {
                for i in 0..n {
                    let h = &mut self.host;
                    let mut started = if i == 0 {
                        self.shell.start_next(KIND, ws(i), &SEQS, &mut quad, h)
                    } else {
                        self.shell
                            .flush_start_next(KIND, ws(i), &SEQS, &mut quad, h)
                    }
                    .expect("start");
                    self.pump();
                    while let Start::NotNow(_) = started {
                        std::thread::yield_now();
                        let h = &mut self.host;
                        started = (self.shell.start_next(KIND, ws(i), &SEQS, &mut quad, h))
                            .expect("start_next");
                        self.pump();
                    }
                    std::hint::black_box(quad);
                }
                self.shell.flush(&mut self.host).expect("flush");
            }
            Path::StartNext => {
                for i in 0..n {
                    loop {
                        let h = &mut self.host;
                        let started = (self.shell.start_next(KIND, ws(i), &SEQS, &mut quad, h))
                            .expect("start_next");
                        std::hint::black_box(quad);
                        if let Start::Started(_) = started {
                            break;
                        }
                        self.pump();
                        std::thread::yield_now();
                    }
                    self.shell.flush(&mut self.host).expect("flush");
                    self.pump();
                }
            }
            Path::PerStep => {
                for i in 0..n {
                    while !matches!(
                        self.shell
                            .start(KIND, ws(i), &mut self.host)
                            .expect("start"),
                        Start::Started(_)
                    ) {
                        self.pump();
                        std::thread::yield_now();
                    }
                    for s in SEQS {
                        std::hint::black_box(self.shell.next(s).expect("next"));
                    }
                    self.shell.flush(&mut self.host).expect("flush");
                    self.pump();
                }
            }
        }
    }

    /// Waits until every write is done.
    pub fn drain(&mut self) {
        loop {
            self.pump();
            if self.host.writes_in_flight == 0 && self.host.wake.is_none() {
                break;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

impl Drop for NativeShell {
    fn drop(&mut self) {
        self.host.writes = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

// ---- the component engine -----------------------------------------------------------------

pub struct Component {
    pub driver: Driver,
    pub seq: PartitionSequencer,
}

impl Component {
    pub fn open(
        runtime: &Runtime, storage: &BenchStorage, page_events: usize, interval: Duration,
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

    pub fn wait_ready(&self) {
        while self.seq.status() == Status::Actualizing {
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    pub fn start(&self, ws: WsId) {
        loop {
            match self.seq.start(KIND, ws).expect("start") {
                StartOutcome::Started(_) => return,
                StartOutcome::NotNow(_) => std::thread::yield_now(),
            }
        }
    }

    /// One call per step: start, next per sequence, flush.
    pub fn tx(&self, ws: WsId) {
        self.start(ws);
        for s in SEQS {
            std::hint::black_box(self.seq.next(s).expect("next"));
        }
        self.seq.flush().expect("flush");
    }

    /// One event per call, no lists: the first event `start_next_quad`, every later one
    /// `flush_start_next_quad` (finishing the previous event in the same call); `finish`
    /// flushes the last.
    pub fn tx_quad(&self, ws: WsId, first: bool) {
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
    pub fn tx_batch(&self, ws: &[WsId], open: &mut bool) {
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

    /// One event per call through the slice API: the first event `start_next`, every later
    /// one `flush_start_next`; `finish` flushes the last.
    pub fn tx_slices(&self, ws: WsId, first: bool) {
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

    /// `start_next` (the slice API), then `flush` (two calls).
    pub fn tx_start_next(&self, ws: WsId) {
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

    pub fn finish(&self) {
        self.seq.flush().expect("flush");
    }
}

impl Drop for Component {
    fn drop(&mut self) {
        self.seq.cleanup();
        self.driver.sync();
    }
}
