//! The compiled component, shared by every partition of a process.

/// The types generated from the WIT contract. Hidden: callers use the names re-exported here
/// ([`StartOutcome`], [`Status`], ...); tests of the component boundary reach everything.
#[doc(hidden)]
#[allow(missing_docs)] // generated from the WIT, whose doc comments it carries
pub mod bindings;
pub(crate) mod compile_cache;
pub(crate) mod error;
mod explained;
pub mod exports;
mod guest_error;
pub(crate) mod host_state;
pub mod link;
#[cfg(target_os = "linux")]
mod memory;

pub use bindings::{
    BatchNumbers, EventOffsets, EventStart, GuestError, GuestParams, HeldNumbers, NotNowReason,
    Outcome, PlogValue, QuadNumbers, Refusal, SeqQuad, SequenceStatus, StartOutcome, Status,
};
pub use compile_cache::{CacheOutcome, ComponentCache};
pub use error::{HostError, describe};
pub use explained::Explained;
pub use link::Limits;

use std::path::Path;
use std::sync::Arc;

use crate::clock::Clock;
use crate::runtime::host_state::HostState;
use crate::runtime::link::Linked;
use crate::store::storage::{PartitionId, Storage};

/// The engine and the pre-linked component: compiled once, instantiated per partition.
///
/// ```no_run
/// use sequencer_host::{ComponentCache, Limits, Runtime};
/// # fn main() -> Result<(), sequencer_host::HostError> {
/// // The component in a file, compiled once and then read from the cache by later processes:
/// let runtime = Runtime::builder()
///     .limits(Limits::default())
///     .cache(ComponentCache::new("/tmp/sequencer-components"))
///     .load_file("sequencer.wasm".as_ref())?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeInner>,
}

pub(crate) struct RuntimeInner {
    pub(crate) linked: Linked<HostState>,
    cache_outcome: Option<CacheOutcome>,
}

/// A live instance with its sequencer resource.
pub(crate) type Instance = crate::runtime::link::Instance<HostState>;

/// The component this crate was built with (feature `bundled-component`; `None` when the build
/// had no `wasm32-wasip2` target to compile it for): the `sequencer.wasm` of the same version
/// of the core, built with the `wasm` profile.
pub fn bundled_component() -> Option<&'static [u8]> {
    #[cfg(bundled_component)]
    {
        Some(include_bytes!(concat!(env!("OUT_DIR"), "/sequencer.wasm")))
    }
    #[cfg(not(bundled_component))]
    {
        None
    }
}

/// Why there is no bundled component, in one line a user can act on.
const NO_BUNDLED: &str = if cfg!(feature = "bundled-component") {
    "this build of plog-sequencer-host has no bundled component: the wasm32-wasip2 target was \
     not installed when it was built (rustup target add wasm32-wasip2, then build it again), \
     or name a component file"
} else {
    "this build of plog-sequencer-host has no bundled component (its `bundled-component` \
     feature is off); name a component file"
};

/// How a [`Runtime`] is made: the limits its instances run under, a cache of compiled
/// components (none by default), then the component: a file, bytes, or the bundled one.
#[derive(Clone, Debug, Default)]
pub struct RuntimeBuilder {
    limits: Limits,
    cache: Option<ComponentCache>,
}

impl RuntimeBuilder {
    /// The limits every instance runs under ([`Limits::default`] if not set).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Takes the compiled component from `cache` when it holds it, and files it there
    /// otherwise, so later processes start without compiling.
    pub fn cache(mut self, cache: ComponentCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// [`cache`](Self::cache) in [`ComponentCache::default_dir`], when there is one.
    pub fn default_cache(mut self) -> Self {
        self.cache = ComponentCache::default_dir().map(ComponentCache::new);
        self
    }

    /// Compiles (or reads from the cache) the component at `path`.
    pub fn load_file(self, path: &Path) -> Result<Runtime, HostError> {
        crate::runtime::link::load_file(path, |bytes| self.load_bytes(bytes))
    }

    /// Compiles (or reads from the cache) the component `bytes`.
    pub fn load_bytes(self, bytes: &[u8]) -> Result<Runtime, HostError> {
        let (linked, cache_outcome) =
            Linked::build(bytes, self.limits, self.cache.as_ref(), |_| {})?;
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                linked,
                cache_outcome,
            }),
        })
    }

    /// Compiles (or reads from the cache) the component bundled into this crate
    /// ([`bundled_component`]); a [`HostError::Component`] saying why when there is none.
    pub fn load_bundled(self) -> Result<Runtime, HostError> {
        let bytes = bundled_component().ok_or_else(|| HostError::Component(NO_BUNDLED.into()))?;
        self.load_bytes(bytes)
    }
}

impl Runtime {
    /// A [`RuntimeBuilder`]: default limits, no cache.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// Compiles the component at `path`.
    pub fn from_file(path: &Path, limits: Limits) -> Result<Self, HostError> {
        Self::builder().limits(limits).load_file(path)
    }

    /// Compiles a component from its bytes.
    pub fn from_bytes(bytes: &[u8], limits: Limits) -> Result<Self, HostError> {
        Self::builder().limits(limits).load_bytes(bytes)
    }

    /// Compiles the component bundled into this crate, or says why there is none.
    pub fn bundled(limits: Limits) -> Result<Self, HostError> {
        Self::builder().limits(limits).load_bundled()
    }

    /// Whether the compiled component came from the cache (`None` when made without one).
    pub fn cache_outcome(&self) -> Option<&CacheOutcome> {
        self.inner.cache_outcome.as_ref()
    }

    /// The names of the interfaces the component imports, sorted.
    pub fn imports(&self) -> &[String] {
        self.inner.linked.imports()
    }

    /// The limits instances run under.
    pub fn limits(&self) -> &Limits {
        self.inner.linked.limits()
    }

    /// The engine the component was compiled for (its settings key the compiled-component
    /// cache: [`ComponentCache::entry_path`]).
    pub fn engine(&self) -> &wasmtime::Engine {
        self.inner.linked.engine()
    }
}

impl RuntimeInner {
    /// A new instance for `partition` with a sequencer created from `params`.
    pub(crate) fn instantiate(
        &self, partition: PartitionId, storage: Arc<dyn Storage>, clock: Arc<dyn Clock>,
        params: &GuestParams,
    ) -> Result<Result<Instance, GuestError>, wasmtime::Error> {
        self.linked
            .create(HostState::new(partition, storage, clock), params)
    }
}
