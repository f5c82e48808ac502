//! The benchmark workloads W1..W6 on two engines: the native core and the component under
//! wasmtime (the wasm-bindgen build runs in Node: `js/bench/workloads.mjs`).
//! `bash scripts/bench.sh` runs both and prints one table; this alone:
//! `cargo bench -p plog-sequencer-host --bench workloads`.
//!
//! Environment:
//! - `BENCH_SCALE` (default 1): multiplies every workload's size (0.1 for a smoke run).
//! - `BENCH_RUNS` (default 3): runs per figure; the median is reported.
//! - `BENCH_ONLY`: comma-separated workloads to run (`empty,W1,W2,W3,W4,W5,W6`).
//! - `BENCH_OUT`: also write the rows there, tab-separated, for `js/bench/table.mjs`.
//! - `BENCH_ENGINES` (default `native,component`): `native` skips the component rows.
//! - `BENCH_PATHS`: comma-separated parts of path names (`batches`, `core calls`, `quad`, ...):
//!   W1, W2 and W5 run only the paths whose name contains one (to profile a single path); W6
//!   only the allocators named (`on-demand`, `pooling`).
//! - `BENCH_WRITE_INTERVAL_US` (default 100): the group commit window of every engine's driver
//!   (`Driver::with_min_write_interval`); W1 and W2 also run without it.
//! - `BENCH_PAGE_EVENTS` (default: the driver's 4096): events per PLog read in W3.
//! - `BENCH_BARE_QUAD=N` (for profiling, e.g. under callgrind): only N `flush-start-next-quad`
//!   calls on a bare store (fuel on), then exit: on W2's one workspace, or round W1's with
//!   `BENCH_BARE_SPREAD=1`.
//! - `SEQUENCER_COMPONENT`: the component (default:
//!   `sequencer_host::runtime::link::component_path()`).
//!
//! By concern: the storage every engine runs against (`storage.rs`: `BenchStorage`, in memory
//! like `MemoryStorage`, without its per-write log, which would grow by millions of records,
//! and with an optional write latency for W5), the engines (`engines.rs`: the native core with
//! its writes on a writer thread, as the component's task driver performs them, so that a slow
//! write never blocks a transaction on either; the component through the host, on the paths
//! a transaction can take), the bare boundary (`bare.rs`), the workloads (`workloads.rs`) and
//! the table (`report.rs`).

mod bare;
mod engines;
mod report;
mod storage;
mod workloads;

use std::path::PathBuf;
use std::time::Duration;

use sequencer::Params;
use sequencer_host::{DriverConfig, Limits, Runtime};

use engines::Path;
use workloads::{Bench, Runtimes, workspace_w1};

const KIND: u16 = 1;
/// The sequences a transaction takes a number from (the kind has four: 1..=4).
const SEQS: [u16; 3] = [1, 2, 3];
/// Large enough that backpressure never decides a figure (W1 holds at most 6,000 distinct
/// keys unwritten, W3 30,000; W4 adds 3 per transaction while a write is in flight).
const MAX_UNFLUSHED: usize = 1_000_000;

/// Marks the rows run without group commit.
const NO_GC: &str = "no group commit";

/// Events per `flush_start_batch` call.
const BATCH: usize = 64;

/// Calls per bare-boundary figure (`BENCH_RAW_CALLS`, for profiling; 200,000).
fn raw_calls() -> u64 {
    std::env::var("BENCH_RAW_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000)
}

/// [`SEQS`] as the fixed-shape calls name them.
fn seq_quad() -> sequencer_host::runtime::SeqQuad {
    sequencer_host::runtime::SeqQuad {
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

struct Config {
    scale: f64,
    runs: usize,
    only: Option<Vec<String>>,
    /// `BENCH_PATHS`: the transaction paths to run, by part of their name.
    paths: Option<Vec<String>>,
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
        let component = sequencer_host::runtime::link::component_path();
        Self {
            scale: var("BENCH_SCALE")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1.0),
            runs: var("BENCH_RUNS")
                .and_then(|v| v.parse().ok())
                .unwrap_or(3)
                .max(1),
            only: var("BENCH_ONLY").map(|v| v.split(',').map(|s| s.trim().to_owned()).collect()),
            paths: var("BENCH_PATHS").map(|v| v.split(',').map(|s| s.trim().to_owned()).collect()),
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

    /// True unless `BENCH_PATHS` leaves out the path named `name`.
    fn wants_path(&self, name: &str) -> bool {
        self.paths
            .as_ref()
            .is_none_or(|p| p.iter().any(|x| name.contains(x.as_str())))
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is understood.
    let cfg = Config::from_env();
    if let Some(n) = std::env::var("BENCH_BARE_QUAD")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        let bytes = std::fs::read(&cfg.component).expect("component");
        bare::quad_only(&bytes, n);
    }
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
    report::print(&b.rows);
    if let Ok(path) = std::env::var("BENCH_OUT") {
        report::write_tsv(&b.rows, &path);
    }
}
