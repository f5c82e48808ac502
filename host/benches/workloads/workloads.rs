//! The workloads W1..W6 and the empty call, each on the engines, into rows of the table.

use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use sequencer::{Instant, PlogPage as CorePage, SeqValue, Sequencer, Work, WsId};
use sequencer_host::{
    Driver, DriverConfig, Limits, MonotonicClock, PartitionSequencer, Runtime, StartOutcome,
};

use crate::engines::{Component, Native, NativeShell, Path};
use crate::report::{Row, Target, measure, median, rss_bytes};
use crate::storage::BenchStorage;
use crate::{Config, KIND, NO_GC, SEQS, bare, params, raw_calls};

pub struct Runtimes {
    pub fuel: Runtime,
    pub no_fuel: Runtime,
}

pub struct Bench {
    pub cfg: Config,
    pub rt: Runtimes,
    pub rows: Vec<Row>,
    /// Empty-call cost (ns) through `PartitionSequencer::status`, fuel on / off.
    pub empty: (f64, f64),
}

pub fn workspace_w1(i: u64) -> WsId {
    i % 1000
}

impl Bench {
    pub fn native_tx(
        &self, n: u64, storage: &BenchStorage, ws: fn(u64) -> WsId, interval: Duration,
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

    /// `path`'s calls on the native shell (see [`NativeShell`]).
    pub fn native_shell_tx(
        &self, n: u64, storage: &BenchStorage, ws: fn(u64) -> WsId, path: Path, interval: Duration,
    ) -> f64 {
        let mut e = NativeShell::new(storage, self.cfg.page_events, interval);
        e.run(Path::PerStep, 1000.min(n), ws);
        let t = StdInstant::now();
        e.run(path, n, ws);
        let ns = t.elapsed().as_nanos() as f64;
        e.drain();
        ns
    }

    /// Nanoseconds for `n` transactions along `path`, and the guest calls they made (the
    /// path's own and the task driver's deliveries, until every write is done).
    pub fn component_tx(
        &self, rt: &Runtime, n: u64, storage: &BenchStorage, ws: fn(u64) -> WsId, path: Path,
        interval: Duration,
    ) -> (f64, u64) {
        let c = Component::open(rt, storage, self.cfg.page_events, interval);
        c.wait_ready();
        for i in 0..1000.min(n) {
            c.tx(ws(i));
        }
        c.driver.idle();
        let calls = c.seq.guest_calls();
        let t = StdInstant::now();
        path.run(&c, n, ws);
        let ns = t.elapsed().as_nanos() as f64;
        c.driver.idle();
        (ns, c.seq.guest_calls() - calls)
    }

    /// W1, W2, W5: transactions over workspaces `ws(i)`. W1 and W2 (`with_bound`) also run
    /// without fuel, the two-call batched path, and without group commit.
    pub fn tx_workload(
        &mut self, name: &'static str, full: u64, ws: fn(u64) -> WsId, delay: Option<Duration>,
        targets: (f64, Option<f64>), with_bound: bool,
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
            let native_path = format!("core calls{suffix}");
            // The bound needs the native figure; a run leaving it out reports no bound.
            let native = self.cfg.wants_path(&native_path).then(|| {
                let ns = measure(runs, n, || self.native_tx(n, &storage(), ws, interval));
                self.rows.push(Row {
                    workload: name,
                    engine: "native",
                    path: native_path,
                    ops: n,
                    unit: "tx",
                    ns,
                    bound: None,
                    target: None,
                    note: String::new(),
                });
                ns
            });
            let mut variants = vec![
                (Path::Batch, true),
                (Path::Quad, true),
                (Path::PerStep, true),
            ];
            if with_bound && interval == window {
                variants.extend([
                    (Path::Slices, true),
                    (Path::StartNext, true),
                    (Path::Batch, false),
                    (Path::Quad, false),
                ]);
            }
            if !self.cfg.components {
                variants.clear();
            }
            let fuel_name = |fuel: bool| if fuel { "" } else { ", fuel off" };
            variants.retain(|&(path, fuel)| {
                self.cfg
                    .wants_path(&format!("{}{}{suffix}", path.name(), fuel_name(fuel)))
            });
            // Each component path's calls made natively too (the shell over the same storage
            // and writer thread): the note sets the path against them plus its crossings, a
            // stricter bound than the core calls' when the shell's calls are faster. `Slices`
            // makes `Quad`'s calls natively (the shell takes slices either way).
            let mut same_calls: Vec<(Path, f64)> = Vec::new();
            if with_bound {
                for &(path, _) in &variants {
                    let native_path = path.native();
                    if same_calls.iter().any(|&(p, _)| p == native_path) {
                        continue;
                    }
                    let ns = measure(runs, n, || {
                        self.native_shell_tx(n, &storage(), ws, native_path, interval)
                    });
                    self.rows.push(Row {
                        workload: name,
                        engine: "native",
                        path: format!("shell calls: {}{suffix}", native_path.name()),
                        ops: n,
                        unit: "tx",
                        ns,
                        bound: None,
                        target: None,
                        note: "the component path's calls without the boundary".into(),
                    });
                    same_calls.push((native_path, ns));
                }
            }
            for (path, fuel) in variants {
                let rt = if fuel {
                    &self.rt.fuel
                } else {
                    &self.rt.no_fuel
                };
                // The crossings it makes: the path's calls and the driver's deliveries (a
                // write's outcome is a guest call; one per 5-16 events without group commit).
                let mut calls = Vec::new();
                let ns = measure(runs, n, || {
                    let (ns, c) = self.component_tx(rt, n, &storage(), ws, path, interval);
                    calls.push(c as f64 / n as f64);
                    ns
                });
                let crossings = median(calls);
                let calls_note = format!(
                    "{crossings:.3} crossing(s)/tx ({:.3} the path's, the rest deliveries)",
                    path.crossings()
                );
                let same = same_calls
                    .iter()
                    .find(|&&(p, _)| p == path.native())
                    .map(|&(_, ns)| ns);
                let empty = if fuel { self.empty.0 } else { self.empty.1 };
                let target = match path {
                    Path::Batch if interval == window => targets.0,
                    Path::PerStep if interval == window => targets.1.unwrap_or(0.0),
                    _ => 0.0,
                };
                self.rows.push(Row {
                    workload: name,
                    engine: "component",
                    path: format!("{}{}{suffix}", path.name(), fuel_name(fuel)),
                    ops: n,
                    unit: "tx",
                    ns,
                    bound: native
                        .filter(|_| with_bound)
                        .map(|native| 1.25 * (native + crossings * empty)),
                    target: (target > 0.0).then_some(Target::OpsPerSec(target)),
                    note: match (with_bound, same) {
                        (false, _) => String::new(),
                        (true, Some(same)) => format!(
                            "{calls_note}, empty call {empty:.0} ns; \
                             on the same calls' native time {:.0} ns ({:.2}x)",
                            1.25 * (same + crossings * empty),
                            ns / (1.25 * (same + crossings * empty))
                        ),
                        (true, None) => format!("{calls_note}, empty call {empty:.0} ns"),
                    },
                });
            }
        }
    }

    pub fn empty_call(&mut self) {
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
        let [status_ops, quad_ops, step_ops] = bare::wasm_ops(&bytes);
        for fuel in [true, false] {
            let runs: Vec<[f64; 6]> = (0..self.cfg.runs)
                .map(|_| bare::empty_call_ns(&bytes, fuel, raw_calls()))
                .collect();
            let fuel_text = if fuel { "on" } else { "off" };
            let calls = [
                (
                    "status()",
                    "wasmtime alone (instance interface): no lock, refuel or driver hand-off",
                ),
                (
                    "flush-start-next (lists)",
                    "W2's transaction in one call, without host or driver",
                ),
                ("flush-start-next-quad", "the same without lists"),
                (
                    "per step (start, 3 next, flush), per tx",
                    "W2's transaction in five calls, two status reports",
                ),
                (
                    "per step (start-status, 3 next, flush-status), per tx",
                    "the same, the status in the results: no import call",
                ),
                (
                    "status() through the resource handle",
                    "the sequencer resource's method: a handle lent per call",
                ),
            ];
            for (i, (call, note)) in calls.into_iter().enumerate() {
                self.rows.push(Row {
                    workload: "empty call",
                    engine: "component",
                    path: format!("{call}, bare store, fuel {fuel_text}"),
                    ops: if (3..5).contains(&i) {
                        raw_calls() / 5
                    } else {
                        raw_calls()
                    },
                    unit: if (3..5).contains(&i) { "tx" } else { "call" },
                    ns: median(runs.iter().map(|r| r[i]).collect()),
                    bound: None,
                    target: None,
                    note: match (fuel, i) {
                        (true, 0) => format!("{note}; {status_ops} wasm operators"),
                        (true, 2) => format!("{note}; {quad_ops} wasm operators"),
                        (true, 3) => format!("{note}; {step_ops} wasm operators"),
                        _ => note.into(),
                    },
                });
            }
        }
    }

    pub fn w3(&mut self) {
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
                note: if fuel {
                    let bytes = std::fs::read(&self.cfg.component).expect("component");
                    let ops = bare::replay_ops(&bytes, page);
                    format!("open -> first start; {ops:.0} wasm operators per event (a page)")
                } else {
                    "open -> first start".into()
                },
            });
        }
    }

    pub fn w4(&mut self) {
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

    pub fn w6(&mut self) {
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
        ]
        .into_iter()
        .filter(|(_, path)| self.cfg.wants_path(path))
        {
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
    pub fn w6_open_held(rt: &Runtime, n: u32, runs: usize) -> [Vec<f64>; 3] {
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
    pub fn w6_open_until_ready(rt: &Runtime, n: u32, storage: &BenchStorage) -> f64 {
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
}
