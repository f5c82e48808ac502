//! The compiled component, shared by every partition of a process.

use std::path::Path;
use std::sync::Arc;

use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store,
    StoreLimits, StoreLimitsBuilder,
};

use crate::bindings::{GuestParams, SequencerPlugin, SequencerPluginPre};
use crate::clock::Clock;
use crate::error::HostError;
use crate::state::HostState;
use crate::storage::{PartitionId, Storage};

/// Limits applied to every instance.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The most linear memory an instance may grow to.
    pub max_memory_bytes: usize,
    /// Fuel given to each guest call; a call that burns it all traps. `None` turns fuel
    /// metering off (faster, but a runaway guest call is then not stopped).
    pub fuel_per_call: Option<u64>,
    /// `Some(n)`: take instances from wasmtime's pooling allocator, with slots for `n` live
    /// instances reserved up front (faster instantiation; creating instance `n + 1` fails).
    /// `None` (the default): allocate each instance on demand.
    ///
    /// A slot freed by a dropped instance is reused by a later one, which starts from pristine
    /// memory all the same. To spare that one the page faults, a freed slot keeps one page of
    /// each of its tables resident, zeroed in place, and, where Linux offers the `PAGEMAP_SCAN`
    /// ioctl (6.7 and later), up to 64 KiB of the linear memory pages its instance wrote, reset
    /// in place. So resident memory stays up to about 72 KiB per slot ever used, live or not,
    /// for as long as the `Runtime` lives.
    pub pooled_instances: Option<u32>,
}

/// How much of a freed pooled slot's linear memory stays resident for the next instance (see
/// [`Limits::pooled_instances`]): 16 pages, where a sequencer that ran a transaction wrote 3.
const POOL_KEEP_RESIDENT_MEMORY: usize = 64 << 10;

/// How much of each of a freed pooled slot's tables stays resident: one page (the component's
/// tables hold 80 and 10 entries).
const POOL_KEEP_RESIDENT_TABLES: usize = 4 << 10;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_memory_bytes: 256 << 20,
            fuel_per_call: Some(1_000_000_000),
            pooled_instances: None,
        }
    }
}

/// The engine and the pre-linked component: compiled once, instantiated per partition.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeInner>,
}

pub(crate) struct RuntimeInner {
    pub(crate) engine: Engine,
    imports: Vec<String>,
    pub(crate) pre: SequencerPluginPre<HostState>,
    pub(crate) limits: Limits,
}

/// A live instance with its sequencer resource.
pub(crate) struct Instance {
    pub(crate) store: Store<HostState>,
    pub(crate) plugin: SequencerPlugin,
    pub(crate) handle: ResourceAny,
}

impl Runtime {
    /// Compiles the component at `path`.
    pub fn from_file(path: &Path, limits: Limits) -> Result<Self, HostError> {
        let bytes = std::fs::read(path).map_err(|e| {
            HostError::Component(format!("cannot read component {}: {e}", path.display()))
        })?;
        Self::from_bytes(&bytes, limits)
            .map_err(|e| HostError::Component(format!("{}: {e}", path.display())))
    }

    /// Compiles a component from its bytes.
    pub fn from_bytes(bytes: &[u8], limits: Limits) -> Result<Self, HostError> {
        let mut config = Config::new();
        config.consume_fuel(limits.fuel_per_call.is_some());
        // No component-model-async: stores skip the concurrent-call machinery (already the
        // default without that wasmtime feature; said here so it stays so).
        config.concurrency_support(false);
        // Linear memory starts as a copy-on-write mapping of the component's data (the default;
        // said here so it stays so): no data segment is copied per instance.
        config.memory_init_cow(true);
        if let Some(n) = limits.pooled_instances {
            let mut pool = PoolingAllocationConfig::new();
            // A sequencer component holds a few core instances, one memory and a few tables.
            pool.total_component_instances(n)
                .total_core_instances(n.saturating_mul(4))
                .total_memories(n)
                .total_tables(n.saturating_mul(2))
                .max_memory_size(limits.max_memory_bytes)
                // A freed slot's tables are zeroed in place rather than given back with
                // `madvise` (a TLB flush on every core the process runs on) and faulted in again.
                .table_keep_resident(POOL_KEEP_RESIDENT_TABLES);
            // Likewise the pages of linear memory an instance wrote, found with PAGEMAP_SCAN
            // and reset in place (to zero or the data image). Without the ioctl, wasmtime would
            // reset the *lowest* bytes instead, which a sequencer never touches (its stack ends
            // and its data begins at 1 MiB): then `madvise` as before is better.
            if PoolingAllocationConfig::is_pagemap_scan_available() {
                pool.pagemap_scan(Enabled::Auto)
                    .linear_memory_keep_resident(POOL_KEEP_RESIDENT_MEMORY);
            }
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&config).map_err(component_error)?;
        let component = Component::new(&engine, bytes).map_err(component_error)?;
        let mut linker = Linker::<HostState>::new(&engine);
        SequencerPlugin::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |s| s)
            .map_err(component_error)?;
        // std on wasm32-wasip2 imports parts of WASI the sequencer never uses; any call into
        // them (only a guest panic would make one) traps, and the trap is contained.
        linker
            .define_unknown_imports_as_traps(&component)
            .map_err(component_error)?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(component_error)?;
        let pre = SequencerPluginPre::new(pre).map_err(component_error)?;
        let mut imports: Vec<String> = component
            .component_type()
            .imports(&engine)
            .map(|(name, _)| name.to_string())
            .collect();
        imports.sort();
        Ok(Self {
            inner: Arc::new(RuntimeInner {
                imports,
                engine,
                pre,
                limits,
            }),
        })
    }

    /// The names of the interfaces the component imports, sorted.
    pub fn imports(&self) -> &[String] {
        &self.inner.imports
    }

    /// The limits instances run under.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
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
    ) -> Result<Result<Instance, crate::bindings::GuestError>, wasmtime::Error> {
        let limits: StoreLimits = StoreLimitsBuilder::new()
            .memory_size(self.limits.max_memory_bytes)
            .instances(16)
            .build();
        let mut store = Store::new(
            &self.engine,
            HostState::new(partition, storage, clock, limits),
        );
        store.limiter(|s| &mut s.limits);
        if let Some(fuel) = self.limits.fuel_per_call {
            store.set_fuel(fuel)?;
        }
        let plugin = self.pre.instantiate(&mut store)?;
        let created = plugin
            .sequencer_plugin_sequencer_api()
            .sequencer()
            .call_create(&mut store, params)?;
        Ok(created.map(|handle| Instance {
            store,
            plugin,
            handle,
        }))
    }
}

fn component_error(e: wasmtime::Error) -> HostError {
    HostError::Component(format!("{e:#}"))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use sequencer::Params;

    use super::*;
    use crate::bindings::StartOutcome;
    use crate::{Driver, DriverConfig, ManualClock, MemoryStorage};

    /// The compiled component: `$SEQUENCER_COMPONENT`, or the `wasm`-profile build under the
    /// cargo target dir (`scripts/build-component.sh` builds it).
    fn component() -> Vec<u8> {
        let path = std::env::var_os("SEQUENCER_COMPONENT")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::var_os("CARGO_TARGET_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
                    .join("wasm32-wasip2/wasm/sequencer.wasm")
            });
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
            .engine
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
