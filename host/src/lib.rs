//! The wasmtime host of the sequencer component.
//!
//! - [`Runtime`] compiles the component once per process and pre-links it.
//! - [`Driver`] is the task loop: it opens one instance per partition ([`PartitionSequencer`]),
//!   performs the storage work the guests begin, delivers outcomes, and wakes guests at the
//!   times they ask for (retries with backoff, replay hold-back).
//! - [`Storage`] is what the host needs from storage; [`MemoryStorage`] keeps it in memory,
//!   [`RedbStorage`] durably in an embedded redb database inside a [`DataDir`], [`EtcdStorage`]
//!   on an etcd cluster shared by many hosts (fenced appends).
//! - [`Clock`]: [`MonotonicClock`] in production, [`ManualClock`] in tests.

#![warn(missing_docs)]

#[allow(missing_docs)] // generated from the WIT, whose doc comments it carries
pub mod bindings;
mod clock;
mod data_dir;
mod driver;
mod error;
mod etcd_storage;
mod gate;
mod memory;
mod partition;
mod plog_check;
mod redb_storage;
mod runtime;
mod state;
mod storage;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use data_dir::{
    DB_FILE, DataDir, DataDirError, DirState, FORMAT_FILE, FORMAT_VERSION, OpenMode,
};
pub use driver::{Driver, DriverConfig};
pub use error::{HostError, describe};
pub use etcd_storage::{EtcdConfig, EtcdStats, EtcdStorage, PAGE_EVENTS, VALUES_PER_TXN};
pub use gate::Gate;
pub use memory::{Faults, MemoryStorage, WriteRecord};
pub use partition::{PartitionSequencer, guest_params};
pub use plog_check::{CheckReport, PlogChecker, Violation};
pub use redb_storage::{
    DB_FORMAT_VERSION, RedbStorage, StoreCounts, StoreStats, StoredEvent, decode_event,
    encode_event,
};
pub use runtime::{Limits, Runtime};
pub use state::Op;
pub use storage::{AppendError, PartitionId, PlogPage, Storage, StorageError};
