//! The compiled component, shared by every partition of a process.

use std::path::Path;
use std::sync::Arc;

use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreLimits,
    StoreLimitsBuilder,
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
    pub pooled_instances: Option<u32>,
}

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
        if let Some(n) = limits.pooled_instances {
            let mut pool = PoolingAllocationConfig::new();
            // A sequencer component holds a few core instances, one memory and a few tables.
            pool.total_component_instances(n)
                .total_core_instances(n.saturating_mul(4))
                .total_memories(n)
                .total_tables(n.saturating_mul(2))
                .max_memory_size(limits.max_memory_bytes);
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
