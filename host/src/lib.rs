//! The wasmtime host of the sequencer component. Its rooms, each above the ones it uses:
//!
//! - [`runtime`]: the component compiled once per process and pre-linked ([`Runtime`],
//!   [`RuntimeBuilder`], [`Limits`], [`ComponentCache`]), the one way to link it
//!   ([`runtime::link`]), and the contract's types a caller touches ([`StartOutcome`],
//!   [`NotNowReason`], [`Status`]).
//! - [`driver`]: the task loop ([`Driver`]) that opens one instance per partition
//!   ([`PartitionSequencer`]), performs the storage work the guests begin, delivers outcomes,
//!   and wakes guests at the times they ask for.
//! - `membership` (feature `etcd`): many hosts on one etcd cluster, each serving the
//!   partitions it owns through a lease (`Membership`).
//! - [`store`], stacked as the design reads: the storage contract ([`Storage`],
//!   [`StoreReader`], the capabilities a backend may add, the numbering [`Layout`] a store
//!   records) at the bottom; one folder per backend over it ([`MemoryStorage`], `store::redb`,
//!   `store::etcd`, `store::objects`); the layers over any backend ([`store::layers`]); and
//!   the factory, [`store::open`], which turns a store URL into an open store, its layout
//!   recorded or compared and its archive layered under it.
//! - Under them all: the clocks ([`clock`]: [`Clock`], [`MonotonicClock`], [`ManualClock`]) and
//!   the seeded random numbers ([`rng`]).
//!
//! Cargo features (all can be on at once):
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `cli` | yes | the `sequencer-host` command (`run`, `inspect`, `check`, `archive`); implies `redb`, `objects`, `bundled-component` |
//! | `redb` | yes (through `cli`) | `store::redb`: the embedded, durable store (`redb:DIR`) |
//! | `objects` (old name `objstore`) | yes (through `cli`) | `store::objects`: the PLog on object storage (`objects:DIR`), the view in redb; the archive layer |
//! | `bundled-component` | yes (through `cli`) | [`Runtime::bundled`]: the component compiled into the crate at build time (needs the `wasm32-wasip2` rustup target then; without it the build goes on with no component and says so) |
//! | `etcd` | no | `store::etcd`: the store on an etcd cluster (`etcd://...`); its gRPC client's build runs `protoc` |
//! | `s3` | no | the object store's PLog on S3 (`objects:s3://BUCKET/PREFIX`); implies `objects` |
//! | `testing` | no | `store::testing`: the contract suite every backend runs, for a `Storage` of one's own |
//!
//! With `default-features = false` the library has the runtime, the driver and
//! [`MemoryStorage`] only.

#![warn(missing_docs)]

/// The README's Rust code blocks, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub mod clock;
pub mod driver;
#[cfg(feature = "etcd")]
pub mod membership;
pub mod metrics;
pub mod rng;
pub mod runtime;
pub mod store;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use driver::{Driver, DriverConfig, PartitionSequencer};
pub use runtime::{
    ComponentCache, HostError, Limits, NotNowReason, Runtime, RuntimeBuilder, StartOutcome, Status,
};
pub use store::memory::MemoryStorage;
pub use store::{
    AppendError, EventBatch, Layout, PartitionId, PlogPage, Storage, StorageError, StorageFuture,
    StoreReader,
};
