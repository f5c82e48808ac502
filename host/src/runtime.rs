//! The compiled component, shared by every partition of a process.

use std::path::Path;
use std::sync::Arc;

use crate::bindings::{GuestError, GuestParams};
use crate::clock::Clock;
use crate::error::HostError;
use crate::link::{Limits, Linked};
use crate::state::HostState;
use crate::storage::{PartitionId, Storage};

/// The engine and the pre-linked component: compiled once, instantiated per partition.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeInner>,
}

pub(crate) struct RuntimeInner {
    pub(crate) linked: Linked<HostState>,
}

/// A live instance with its sequencer resource.
pub(crate) type Instance = crate::link::Instance<HostState>;

impl Runtime {
    /// Compiles the component at `path`.
    pub fn from_file(path: &Path, limits: Limits) -> Result<Self, HostError> {
        Ok(Self::new(Linked::from_file(path, limits)?))
    }

    /// Compiles a component from its bytes.
    pub fn from_bytes(bytes: &[u8], limits: Limits) -> Result<Self, HostError> {
        Ok(Self::new(Linked::from_bytes(bytes, limits)?))
    }

    fn new(linked: Linked<HostState>) -> Self {
        Self {
            inner: Arc::new(RuntimeInner { linked }),
        }
    }

    /// The names of the interfaces the component imports, sorted.
    pub fn imports(&self) -> &[String] {
        self.inner.linked.imports()
    }

    /// The limits instances run under.
    pub fn limits(&self) -> &Limits {
        self.inner.linked.limits()
    }
}

impl RuntimeInner {
    /// A new instance for `partition` with a sequencer created from `params`.
    pub(crate) fn instantiate(
        &self,
        partition: PartitionId,
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        params: &GuestParams,
    ) -> Result<Result<Instance, GuestError>, wasmtime::Error> {
        self.linked
            .create(HostState::new(partition, storage, clock), params)
    }
}

#[cfg(test)]
mod tests {
    use sequencer::Params;
    use wasmtime::PoolingAllocationConfig;

    use super::*;
    use crate::bindings::StartOutcome;
    use crate::link::{POOL_KEEP_RESIDENT_MEMORY, POOL_KEEP_RESIDENT_TABLES, component_path};
    use crate::{Driver, DriverConfig, ManualClock, MemoryStorage};

    /// The compiled component (`scripts/build-component.sh` builds it).
    fn component() -> Vec<u8> {
        let path = component_path();
        std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "no component at {} ({e}); build it first: bash scripts/build-component.sh",
                path.display()
            )
        })
    }

    /// A pool of one slot: a second live instance is refused; each sequencer opened after the
    /// previous one was dropped reuses the slot and carries on from storage; a freed slot keeps
    /// no more resident than `Limits::pooled_instances` says.
    #[test]
    fn pooled_slot_is_reused_within_its_limits() {
        let limits = Limits {
            pooled_instances: Some(1),
            ..Limits::default()
        };
        let rt = Runtime::from_bytes(&component(), limits).expect("pooled runtime");
        let storage = MemoryStorage::new();
        let driver = Driver::spawn(
            Arc::new(storage.clone()),
            Arc::new(ManualClock::new()),
            DriverConfig::default(),
        );
        let params = Params::new().with_seq(1, 1, 1);
        let mut numbers = Vec::new();
        for _ in 0..3 {
            let seq = driver.open(&rt, 0, &params).expect("open");
            driver.idle();
            assert!(driver.open(&rt, 1, &params).is_err(), "the pool holds one");
            let outcome = seq.start(1, 7).expect("start");
            assert!(matches!(outcome, StartOutcome::Started(_)), "{outcome:?}");
            numbers.push(seq.next(1).expect("next"));
            seq.flush().expect("flush");
            driver.idle();
            seq.cleanup();
            drop(seq);
            driver.sync();
        }
        assert_eq!(numbers, [numbers[0], numbers[0] + 1, numbers[0] + 2]);
        let metrics = rt
            .inner
            .linked
            .engine()
            .pooling_allocator_metrics()
            .expect("pooling");
        assert_eq!(metrics.component_instances(), 0);
        assert!(metrics.unused_memory_bytes_resident() <= POOL_KEEP_RESIDENT_MEMORY);
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            assert!(metrics.unused_memory_bytes_resident() > 0);
        }
        assert!(metrics.unused_table_bytes_resident() <= 2 * POOL_KEEP_RESIDENT_TABLES);
        eprintln!(
            "freed slot: {} bytes of memory, {} of tables resident",
            metrics.unused_memory_bytes_resident(),
            metrics.unused_table_bytes_resident()
        );
    }
}
