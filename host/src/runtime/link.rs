//! One way to link the guest: the component compiled with the engine configuration, limits,
//! pooling and pre-instantiation of [`Limits`], its imports (`storage`, `clock`, `observer`)
//! implemented once over the shell's own host view ([`sequencer::Host`]) of whatever the
//! store holds, and the WIT <-> core conversions of params.
//!
//! Every embedding of the component uses it: the production host ([`crate::Runtime`]), the
//! simulator, the conformance suite's runner and the benchmark. What differs between them is
//! only the store's data: the host's storage and clock, the simulator's recorded world, a
//! scenario's world. The same view drives the native shell directly (the simulator's and the
//! conformance suite's native engines), so both sides of a comparison see the same imports.

use std::path::{Path, PathBuf};

use sequencer::{
    ContractLimits, Host, Instant, Params, PlogWords, Read, SeqValue, Status, Ticket, Work,
    WriteWords,
};
use wasmtime::component::{Component, HasData, InstancePre, Linker, ResourceAny};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter, Store,
};

use crate::runtime::bindings::sequencer::plugin::types::{self as wit, KindSequences};
use crate::runtime::bindings::{
    GuestError, GuestParams, SequencerPlugin, clock, observer, storage,
};
use crate::runtime::compile_cache::{CacheOutcome, ComponentCache};
use crate::runtime::error::HostError;
use crate::runtime::exports::{ExportIndices, Exports};

/// Limits applied to every instance.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The most linear memory an instance may grow to.
    pub max_memory_bytes: usize,
    /// Fuel given to each guest call; a call that burns it all traps. `None` turns fuel
    /// metering off (faster, but a runaway guest call is then not stopped).
    pub fuel_per_call: Option<u64>,
    /// `Some(n)`: take instances from wasmtime's pooling allocator, with slots for `n` live
    /// instances reserved up front (creating instance `n + 1` while `n` live is refused with an
    /// error naming this limit).
    /// `None` (the default): allocate each instance on demand. On Linux with more than one
    /// core, such an engine starts a thread (`sequencer-memory`) once it has made a few
    /// instances, which keeps up to 16 new linear memories ready for the next ones (each with
    /// the pages an instance writes resident: five for the sequencer, plus their page tables);
    /// it ends when the engine is dropped.
    ///
    /// A slot freed by a dropped instance is reused by a later one, which starts from pristine
    /// memory all the same. To spare that one the page faults, a freed slot keeps one page of
    /// each of its tables resident, zeroed in place, and the lowest 64 KiB of its linear
    /// memory (the component's stack, data and first heap pages), reset in place. So resident
    /// memory stays about 72 KiB per slot ever used, live or not, for as long as the engine
    /// lives.
    pub pooled_instances: Option<u32>,
}

/// How much of a freed pooled slot's linear memory stays resident for the next instance (see
/// [`Limits::pooled_instances`]): its lowest 16 pages, which hold every page a sequencer that
/// ran a transaction wrote (the top of its 32 KiB stack, its data, the start of its heap).
pub(crate) const POOL_KEEP_RESIDENT_MEMORY: usize = 64 << 10;

/// How much of each of a freed pooled slot's tables stays resident: one page (the component's
/// tables hold 80 and 10 entries).
pub(crate) const POOL_KEEP_RESIDENT_TABLES: usize = 4 << 10;

/// The most table elements an instance may grow its tables to.
const MAX_TABLE_ELEMENTS: usize = 10_000;

/// The most instances a store may hold (a component is a few core instances).
const MAX_INSTANCES: usize = 16;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_memory_bytes: 256 << 20,
            fuel_per_call: Some(1_000_000_000),
            pooled_instances: None,
        }
    }
}

/// Where the compiled component is by default: `$SEQUENCER_COMPONENT`, or the `wasm`-profile
/// build in the cargo target dir's `bundled-component` folder (`$CARGO_TARGET_DIR`, else the
/// workspace's `target`), which `scripts/build-component.sh` and the host's build script build.
pub fn component_path() -> PathBuf {
    if let Some(p) = std::env::var_os("SEQUENCER_COMPONENT") {
        return PathBuf::from(p);
    }
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("bundled-component/wasm32-wasip2/wasm/sequencer.wasm")
}

/// Reads the component file at `path` and hands its bytes to `load`; an error of either names
/// the file.
pub(crate) fn load_file<T>(
    path: &Path, load: impl FnOnce(&[u8]) -> Result<T, HostError>,
) -> Result<T, HostError> {
    let bytes = std::fs::read(path).map_err(|e| {
        HostError::Component(format!("cannot read component {}: {e}", path.display()))
    })?;
    load(&bytes).map_err(|e| HostError::Component(format!("{}: {e}", path.display())))
}

/// A store's data: the host view the imports reach, and the memory accounting of its limits.
pub struct StoreData<H> {
    /// What the imports reach.
    pub host: H,
    max_memory: usize,
    peak_memory: usize,
}

impl<H> StoreData<H> {
    /// The most linear memory the instance has asked for, in bytes.
    pub fn peak_memory(&self) -> usize {
        self.peak_memory
    }
}

impl<H: Send> ResourceLimiter for StoreData<H> {
    fn memory_growing(
        &mut self, _current: usize, desired: usize, _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.peak_memory = self.peak_memory.max(desired);
        Ok(desired <= self.max_memory)
    }

    fn table_growing(
        &mut self, _current: usize, desired: usize, _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }
}

/// The imports, in WIT types, over the host view in core types.
impl<H: Host> storage::Host for StoreData<H> {
    fn read_numbers(&mut self, ws: u64, seqs: Vec<u16>) -> Result<Vec<u64>, String> {
        answer(self.host.read_numbers(ws, &seqs))
    }

    fn read_numbers_many(&mut self, ws: Vec<u64>, seqs: Vec<u16>) -> Result<Vec<u64>, String> {
        answer(self.host.read_numbers_many(&ws, &seqs))
    }

    fn begin_read_next_offset(&mut self, op: u64) {
        self.host.begin(Work::ReadNextOffset { ticket: Ticket(op) });
    }

    /// Words that are not a write's values trap the guest call that sent them (only a broken
    /// guest sends them): the caller gets a `Trapped` error and a fresh instance.
    fn begin_write(
        &mut self, op: u64, words: Vec<u64>, next_plog_offset: u64,
    ) -> wasmtime::Result<()> {
        // Checked in the call (a broken guest's words trap it), decoded where the host likes.
        let words = WriteWords::check(words)
            .map_err(|e| wasmtime::format_err!("storage.begin-write: {e}"))?;
        self.host
            .begin_write_words(Ticket(op), words, next_plog_offset);
        Ok(())
    }

    fn begin_read_plog(&mut self, op: u64, first: u64) {
        self.host.begin(Work::ReadPlog {
            ticket: Ticket(op),
            from: first,
        });
    }
}

/// A numbers read as the import returns it. A component's reads are answered in the call: a
/// view that would answer later fails the read instead.
fn answer(read: Read) -> Result<Vec<u64>, String> {
    match read {
        Read::Numbers(numbers) => Ok(numbers),
        Read::Failed(message) => Err(message),
        Read::Later => Err("the numbers could not be read at once".into()),
    }
}

impl<H: Host> clock::Host for StoreData<H> {
    fn now(&mut self) -> u64 {
        self.host.now().as_nanos()
    }

    fn set_wake(&mut self, at: Option<u64>) {
        self.host.set_wake(at.map(Instant::from_nanos));
    }
}

impl<H: Host> observer::Host for StoreData<H> {
    fn status_changed(&mut self, status: wit::Status) {
        self.host.status_changed(core_status(status));
    }
}

impl<H> wit::Host for StoreData<H> {}

/// The core's status for the WIT's.
pub fn core_status(s: wit::Status) -> Status {
    match s {
        wit::Status::Actualizing => Status::Actualizing,
        wit::Status::Ready => Status::Ready,
        wit::Status::InTransaction => Status::InTransaction,
        wit::Status::CleanedUp => Status::CleanedUp,
    }
}

/// The case name of a WIT error (as the WIT spells it), for messages and comparisons
/// ([`GuestError::case`]).
pub fn error_case(e: &GuestError) -> &'static str {
    e.case()
}

/// `HasData` for [`StoreData`]: the imports borrow the whole store data.
struct Imports<H>(core::marker::PhantomData<H>);

impl<H: 'static> HasData for Imports<H> {
    type Data<'a> = &'a mut StoreData<H>;
}

/// The component compiled and linked once, instantiated many times over host views of type
/// `H`.
pub struct Linked<H: 'static> {
    engine: Engine,
    pre: InstancePre<StoreData<H>>,
    exports: ExportIndices,
    imports: Vec<String>,
    limits: Limits,
}

/// One instance holding one sequencer resource.
pub struct Instance<H: 'static> {
    /// The store: its data is the host view.
    pub store: Store<StoreData<H>>,
    /// The instance's exports.
    pub plugin: Exports,
    /// The sequencer resource.
    pub handle: ResourceAny,
}

/// Set to `1`, every engine this crate makes writes a perf map (`/tmp/perf-PID.map`), so that
/// `perf record` / `perf report` name the guest's functions.
pub const PERF_MAP_ENV: &str = "SEQUENCER_PERF_MAP";

impl<H: Host + Send + 'static> Linked<H> {
    /// Compiles the component at `path`.
    pub fn from_file(path: &Path, limits: Limits) -> Result<Self, HostError> {
        load_file(path, |bytes| Self::from_bytes(bytes, limits))
    }

    /// Compiles and links a component from its bytes.
    pub fn from_bytes(bytes: &[u8], limits: Limits) -> Result<Self, HostError> {
        Self::with_config(bytes, limits, |_| {})
    }

    /// [`from_bytes`](Self::from_bytes), with `tune` given the engine configuration last (for
    /// example to turn a profiler on).
    pub fn with_config(
        bytes: &[u8], limits: Limits, tune: impl FnOnce(&mut Config),
    ) -> Result<Self, HostError> {
        Self::build(bytes, limits, None, tune).map(|(linked, _)| linked)
    }

    /// [`with_config`](Self::with_config), taking the compiled component from `cache` when it
    /// holds one for these bytes and this engine (and filing it there otherwise); the second
    /// value says which it was (`None` without a cache).
    pub fn build(
        bytes: &[u8], limits: Limits, cache: Option<&ComponentCache>,
        tune: impl FnOnce(&mut Config),
    ) -> Result<(Self, Option<CacheOutcome>), HostError> {
        let mut config = Config::new();
        config.consume_fuel(limits.fuel_per_call.is_some());
        // No component-model-async: stores skip the concurrent-call machinery (already the
        // default without that wasmtime feature; said here so it stays so).
        config.concurrency_support(false);
        // Pooled, linear memory starts as a copy-on-write mapping of the component's data,
        // mapped once per slot and reset in place: no data segment is copied per instance.
        // On demand, each instance would map the image afresh (an `mmap` per instance, a
        // file-backed fault and a copy-on-write fault on the data page a sequencer writes, and
        // one more mapping to unmap): its data segments are copied instead (6 KiB, two pages,
        // written once), which makes an on-demand instance a sixth cheaper to create (W6).
        // Compiled code is the same either way.
        config.memory_init_cow(limits.pooled_instances.is_some());
        // On demand, the pages an instance writes while it is made are allocated in one system
        // call each run of them, not faulted in one by one (`runtime::memory`; Linux only).
        #[cfg(target_os = "linux")]
        if limits.pooled_instances.is_none() {
            config.with_host_memory(std::sync::Arc::new(
                crate::runtime::memory::PrefaultingMemoryCreator::default(),
            ));
        }
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
            // Likewise the lowest bytes of a freed slot's linear memory, reset in place (to zero
            // or the data image): the component's small stack, its data and the start of its
            // heap, the pages every sequencer writes (build.rs at the repository's root lays
            // them out so). Not wasmtime's `pagemap_scan`: since wasmtime 50 it counts pages
            // an instance never touched as written (on Linux 6.18), so it resets the same
            // lowest bytes, plus one `ioctl`.
            pool.linear_memory_keep_resident(POOL_KEEP_RESIDENT_MEMORY);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        // `SEQUENCER_PERF_MAP=1`: write /tmp/perf-PID.map so that `perf report` names the
        // guest's compiled functions (for profiling; off by default).
        if std::env::var_os(PERF_MAP_ENV).is_some_and(|v| v == "1") {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        tune(&mut config);
        let engine = Engine::new(&config).map_err(component_error)?;
        let (component, outcome) = match cache {
            Some(cache) => {
                let (c, outcome) = cache
                    .load_or_compile(&engine, bytes)
                    .map_err(component_error)?;
                (c, Some(outcome))
            }
            None => (
                Component::new(&engine, bytes).map_err(component_error)?,
                None,
            ),
        };
        let mut linker = Linker::<StoreData<H>>::new(&engine);
        SequencerPlugin::add_to_linker::<_, Imports<H>>(&mut linker, |d| d)
            .map_err(component_error)?;
        // std on wasm32-wasip2 imports parts of WASI the sequencer never uses; any call into
        // them (only a guest panic would make one) traps, and the trap is contained.
        linker
            .define_unknown_imports_as_traps(&component)
            .map_err(component_error)?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(component_error)?;
        let exports = ExportIndices::new(&component).map_err(component_error)?;
        let mut imports: Vec<String> = component
            .component_type()
            .imports(&engine)
            .map(|(name, _)| name.to_string())
            .collect();
        imports.sort();
        Ok((
            Self {
                engine,
                pre,
                exports,
                imports,
                limits,
            },
            outcome,
        ))
    }

    /// A fresh instance over `host`, without a sequencer yet (for the free functions of the
    /// `events` interface, or to create one later).
    pub fn instantiate(&self, host: H) -> wasmtime::Result<(Store<StoreData<H>>, Exports)> {
        let mut store = self.store(host)?;
        let instance = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| self.explain_full_pool(e))?;
        let plugin = self.exports.load(&mut store, &instance)?;
        Ok((store, plugin))
    }

    /// `e`, with what to do about it when it says the pool has no free slot.
    fn explain_full_pool(&self, e: wasmtime::Error) -> wasmtime::Error {
        match self.limits.pooled_instances {
            Some(n)
                if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                    .is_some() =>
            {
                e.context(format!(
                    "all {n} instance slots of this runtime's pool are in use: raise \
                     `Limits::pooled_instances`, or set it to `None` to make instances on demand"
                ))
            }
            _ => e,
        }
    }

    /// A fresh store over `host`, under the limits.
    fn store(&self, host: H) -> wasmtime::Result<Store<StoreData<H>>> {
        let mut store = Store::new(
            &self.engine,
            StoreData {
                host,
                max_memory: self.limits.max_memory_bytes,
                peak_memory: 0,
            },
        );
        store.limiter(|d| d as &mut dyn ResourceLimiter);
        if let Some(fuel) = self.limits.fuel_per_call {
            store.set_fuel(fuel)?;
        }
        Ok(store)
    }

    /// A fresh instance over `host` with a sequencer created from `params` (`create`, which
    /// begins its first storage work through `host`); the inner error is `create`'s refusal.
    pub fn create(
        &self, host: H, params: &GuestParams,
    ) -> wasmtime::Result<Result<Instance<H>, GuestError>> {
        let (mut store, plugin) = self.instantiate(host)?;
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

impl<H: 'static> Linked<H> {
    /// The engine instances run on.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The names of the interfaces the component imports, sorted.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// The limits instances run under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}

impl<H: 'static> Instance<H> {
    /// Gives the next guest call `fuel` (when fuel is metered: the limits' per-call fuel, or
    /// an injected smaller amount).
    pub fn refuel(&mut self, fuel: u64) -> wasmtime::Result<()> {
        self.store.set_fuel(fuel)
    }
}

fn component_error(e: wasmtime::Error) -> HostError {
    HostError::Component(format!("{e:#}"))
}

/// A PLog page in the WIT's shape: its values (each with its event's offset), the offset after
/// it, and whether the PLog ends there.
pub fn wit_page(values: &[(u64, SeqValue)], next: u64, end: bool) -> wit::PlogPage {
    wit::PlogPage {
        values: values
            .iter()
            .map(|&(offset, v)| wit::PlogValue {
                offset,
                ws: v.key.ws,
                seq: v.key.seq,
                value: v.value,
            })
            .collect(),
        next,
        end,
    }
}

/// A PLog page's values in the flat layout of `deliver-plog-words` (four words per value:
/// offset, workspace, sequence, number), which the host lowers into the guest with one copy.
pub fn plog_words(values: &[(u64, SeqValue)]) -> Vec<u64> {
    let mut words = Vec::new();
    PlogWords::encode_into(values, &mut words);
    words
}

/// Converts core params into the WIT record (the core's rules: kinds and sequences sorted,
/// counts and durations saturated).
pub fn guest_params(params: &Params) -> GuestParams {
    let limits = params.contract_limits();
    GuestParams {
        kinds: (params.contract_kinds().into_iter())
            .map(|(kind, sequences)| KindSequences { kind, sequences })
            .collect(),
        max_unflushed_values: limits.max_unflushed_values,
        lru_cache_size: limits.lru_cache_size,
        batcher_delay_ns: limits.batcher_delay_ns,
        retry_delay_ns: limits.retry_delay_ns,
        max_retry_delay_ns: limits.max_retry_delay_ns,
        retry_jitter_percent: limits.retry_jitter_percent,
    }
}

/// Core params from the WIT record, by the core's rules, as the component builds them (a kind
/// may repeat: its sequences are merged; a kind without sequences is kept, and refused).
pub fn params_from_guest(p: &GuestParams) -> Params {
    let limits = ContractLimits {
        max_unflushed_values: p.max_unflushed_values,
        lru_cache_size: p.lru_cache_size,
        batcher_delay_ns: p.batcher_delay_ns,
        retry_delay_ns: p.retry_delay_ns,
        max_retry_delay_ns: p.max_retry_delay_ns,
        retry_jitter_percent: p.retry_jitter_percent,
    };
    Params::from_contract(limits, p.kinds.iter().map(|k| (k.kind, &k.sequences[..])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::bindings::storage::Host as _;
    use sequencer::WriteRequest;

    /// A host that keeps the work begun.
    #[derive(Default)]
    struct Begun(Vec<Work>);

    impl Host for Begun {
        fn now(&mut self) -> Instant {
            Instant::from_nanos(0)
        }
        fn read_numbers(&mut self, _: u64, _: &[u16]) -> Read {
            Read::Numbers(Vec::new())
        }
        fn read_numbers_many(&mut self, _: &[u64], _: &[u16]) -> Read {
            Read::Numbers(Vec::new())
        }
        fn begin(&mut self, work: Work) {
            self.0.push(work);
        }
        fn set_wake(&mut self, _: Option<Instant>) {}
        fn status_changed(&mut self, _: Status) {}
    }

    fn data() -> StoreData<Begun> {
        StoreData {
            host: Begun::default(),
            max_memory: 0,
            peak_memory: 0,
        }
    }

    /// A table as a host whose WIT disagrees about `next` would declare it (only its check
    /// is used).
    #[allow(dead_code)]
    mod wrong {
        use crate::runtime::bindings::Refusal;
        use crate::runtime::exports::export_table;

        export_table! {
            /// The `instance` interface's `next`, taking a u32.
            WrongNext, WrongNextIndices, interface "instance" {
                fn call_next = "next"(seq: u32) -> Result<u64, Refusal>;
            }
        }
    }
    use wasmtime::AsContextMut as _;
    use wrong::WrongNextIndices;

    /// The exports' types are checked on a component's first instance only, and a function
    /// whose type differs from the host's table is refused by name (not called unchecked).
    #[test]
    fn exports_are_type_checked_once_and_a_mismatch_is_named() {
        let path = component_path();
        let linked = Linked::<Begun>::from_file(&path, Limits::default())
            .unwrap_or_else(|e| panic!("{e}; build it first: bash scripts/build-component.sh"));
        assert!(!linked.exports.checked());
        let (mut store, plugin) = linked.instantiate(Begun::default()).expect("an instance");
        assert!(linked.exports.checked());
        let status = plugin.sequencer_plugin_instance().call_status(&mut store);
        status.expect("a call through the checked table");

        let wrong = WrongNextIndices::new(linked.pre.component()).expect("`next` is exported");
        let mut store = linked.store(Begun::default()).expect("a store");
        let instance = linked.pre.instantiate(&mut store).expect("an instance");
        let e = wrong
            .check(&mut store.as_context_mut(), &instance)
            .expect_err("`next` takes a u16, not a u32");
        assert!(
            format!("{e:#}").contains("`instance` export `next` does not have the type"),
            "{e:#}"
        );
    }

    #[test]
    fn a_flat_write_begins_the_write_of_the_values_it_lays_out() {
        let mut d = data();
        d.begin_write(5, vec![7, 1, 42, 8, 2, 43], 99)
            .expect("a sound write");
        assert_eq!(
            d.host.0,
            vec![Work::Write(WriteRequest {
                ticket: Ticket(5),
                values: vec![SeqValue::new(7, 1, 42), SeqValue::new(8, 2, 43)],
                next_plog_offset: 99,
            })]
        );
    }

    #[test]
    fn malformed_write_words_trap_the_call_and_begin_nothing() {
        let mut d = data();
        for words in [vec![7, 1], vec![7, 1 << 16, 42]] {
            let e = d.begin_write(5, words, 99).expect_err("a trap");
            assert!(
                e.to_string()
                    .contains("storage.begin-write: malformed write"),
                "{e}"
            );
        }
        assert!(d.host.0.is_empty());
    }
}
