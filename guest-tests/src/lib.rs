//! Shared set-up for tests that run the compiled sequencer component under the wasmtime host.
//!
//! The component must be built first (`scripts/build-component.sh`, which the test command
//! runs); its path is `$SEQUENCER_COMPONENT`, or the `wasm`-profile build under the cargo target
//! dir.

pub mod conformance;
pub mod sim;

use std::sync::{Arc, OnceLock};

use sequencer::Params;
use sequencer_host::{
    Driver, DriverConfig, Limits, ManualClock, MemoryStorage, PartitionId, PartitionSequencer,
    Runtime, StartOutcome, Status,
};

/// Panics unless every number the PLog of `partition` holds is unique per key and its offsets
/// are dense from 1.
pub fn assert_no_number_reused(storage: &MemoryStorage, partition: PartitionId) {
    let mut seen = std::collections::HashMap::new();
    let plog = storage.plog(partition);
    for (offset, event) in &plog {
        for v in event {
            if let Some(first) = seen.insert((v.key.ws, v.key.seq, v.value), *offset) {
                panic!(
                    "number {} of ws {} seq {} is in events {first} and {offset}",
                    v.value, v.key.ws, v.key.seq
                );
            }
        }
    }
    let offsets: Vec<u64> = plog.iter().map(|(o, _)| *o).collect();
    let dense: Vec<u64> = (1..=offsets.len() as u64).collect();
    assert_eq!(offsets, dense, "PLog offsets are dense from 1");
}

pub use sequencer_host::runtime::link::component_path;

/// The component compiled once per test binary, with default limits.
pub fn runtime() -> Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| load(Limits::default())).clone()
}

/// The component compiled with the given limits.
pub fn load(limits: Limits) -> Runtime {
    let path = component_path();
    Runtime::from_file(&path, limits).unwrap_or_else(|e| {
        panic!("{e}\n(build the component first: bash scripts/build-component.sh)")
    })
}

/// In-memory storage, a manual clock and a task driver over them.
pub struct Harness {
    /// The storage every partition shares.
    pub storage: MemoryStorage,
    /// The clock; advance it to let retries happen.
    pub clock: ManualClock,
    /// The task driver.
    pub driver: Driver,
    /// The component.
    pub runtime: Runtime,
}

impl Harness {
    /// A harness over empty storage.
    pub fn new() -> Self {
        Self::with(MemoryStorage::new(), runtime())
    }

    /// A harness over `storage`, running `runtime`.
    pub fn with(storage: MemoryStorage, runtime: Runtime) -> Self {
        let clock = ManualClock::new();
        let driver = Driver::spawn(
            Arc::new(storage.clone()),
            Arc::new(clock.clone()),
            DriverConfig { page_events: 100 },
        );
        Self {
            storage,
            clock,
            driver,
            runtime,
        }
    }

    /// Opens a partition's sequencer without waiting for its actualization.
    pub fn open(&self, partition: PartitionId, params: &Params) -> PartitionSequencer {
        self.driver
            .open(&self.runtime, partition, params)
            .expect("open the sequencer")
    }

    /// Opens a partition's sequencer and waits until it is ready.
    pub fn open_ready(&self, partition: PartitionId, params: &Params) -> PartitionSequencer {
        let seq = self.open(partition, params);
        self.driver.idle();
        assert_eq!(seq.status(), Status::Ready, "actualization finished");
        seq
    }

    /// One whole command: start, a number per sequence, append to the PLog, flush. Returns the
    /// offset and numbers, or `None` if start said "not now".
    pub fn event(
        &self, seq: &PartitionSequencer, kind: u16, ws: u64, seqs: &[u16],
    ) -> Option<(u64, Vec<u64>)> {
        let (outcome, numbers) = seq.start_next(kind, ws, seqs).expect("start");
        let StartOutcome::Started(offset) = outcome else {
            return None;
        };
        let values: Vec<_> = seqs
            .iter()
            .zip(&numbers)
            .map(|(&s, &n)| sequencer::SeqValue::new(ws, s, n))
            .collect();
        seq.append(offset, &values)
            .expect("append at the offset start gave");
        seq.flush().expect("flush");
        Some((offset, numbers))
    }
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}
