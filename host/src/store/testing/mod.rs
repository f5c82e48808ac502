//! The backend contract suite: every promise of [`Storage`](crate::Storage) and
//! [`StoreReader`](crate::StoreReader) that can be
//! observed from outside a store, checked on stores you make, each check on a fresh store.
//!
//! Every backend of this crate runs it (`host/tests/contract.rs`), and so can a `Storage` of
//! your own: implement [`StoreMaker`] (how to make a fresh, empty store; for a durable store,
//! how to close one and open it again; and, if it has one, how to read it through a
//! [`StoreReader`](crate::StoreReader)), then call [`check_contract`] (a [`Report`], or the first
//! [`ContractFailure`]: the promise broken and what was seen) or, in a test,
//! [`assert_contract`], which panics with that message.
//!
//! ```
//! use sequencer_host::store::testing::{StoreMaker, assert_contract};
//! use sequencer_host::{MemoryStorage, StorageError, StoreReader};
//!
//! struct Memory;
//!
//! impl StoreMaker for Memory {
//!     type Store = MemoryStorage;
//!
//!     fn name(&self) -> String {
//!         "memory".into()
//!     }
//!
//!     fn fresh(&mut self) -> Result<MemoryStorage, StorageError> {
//!         Ok(MemoryStorage::new())
//!     }
//!
//!     fn reader<'s>(
//!         &'s self,
//!         store: &'s MemoryStorage,
//!     ) -> Option<Result<Box<dyn StoreReader + 's>, StorageError>> {
//!         Some(Ok(Box::new(store)))
//!     }
//! }
//!
//! let report = assert_contract(&mut Memory);
//! assert!(report.skipped.iter().any(|(promise, _)| promise.contains("reopen")));
//! println!("{report}");
//! ```
//!
//! What it cannot see it does not claim: that values are durable before the offset, or that
//! an acknowledged append survives a crash, show only when a process dies at the wrong moment
//! (the kill tests do that for this crate's backends); the suite checks what a caller reads
//! back, before and after a clean close and reopen.
//!
//! Compiled with the cargo feature `testing` (off by default).

mod checks;
mod expect;
mod maker;

pub use maker::StoreMaker;

use core::fmt;

/// What a run of the suite found on a backend that kept every promise it checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The backend, as [`StoreMaker::name`] gave it.
    pub store: String,
    /// The promises checked and kept, in the order checked.
    pub kept: Vec<&'static str>,
    /// The promises not checked, each with why (no reader, not durable, no byte limit).
    pub skipped: Vec<(&'static str, String)>,
}

impl fmt::Display for Report {
    /// One line with the count of promises kept, then one line per promise not checked.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: kept all {} promises of the storage contract checked",
            self.store,
            self.kept.len()
        )?;
        for (promise, why) in &self.skipped {
            write!(f, "\n  not checked: {promise}; {why}")?;
        }
        Ok(())
    }
}

/// The first promise a backend broke, and what was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContractFailure {
    /// The backend, as [`StoreMaker::name`] gave it.
    pub store: String,
    /// The promise broken (one of [`PROMISES`]).
    pub promise: &'static str,
    /// What the suite did and saw, against what the promise says.
    pub seen: String,
}

impl fmt::Display for ContractFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} breaks the storage contract: {}: {}",
            self.store, self.promise, self.seen
        )
    }
}

impl std::error::Error for ContractFailure {}

/// Every promise the suite checks, in the order it checks them.
pub const PROMISES: &[&str] = checks::PROMISES;

/// Runs every check of the suite, each on a fresh store of `maker`, in the order of
/// [`PROMISES`]: the report of the promises kept and of those not checked (and why), or the
/// first promise broken. A store's own error (a failed read, say) where the contract expects
/// success is a failure of that promise too.
pub fn check_contract<M: StoreMaker>(maker: &mut M) -> Result<Report, ContractFailure> {
    let mut report = Report {
        store: maker.name(),
        kept: Vec::new(),
        skipped: Vec::new(),
    };
    for check in checks::all::<M>() {
        let failure = |seen: String| ContractFailure {
            store: report.store.clone(),
            promise: check.promise,
            seen,
        };
        let store = maker
            .fresh()
            .map_err(|e| failure(format!("could not make a fresh store: {e}")))?;
        match (check.run)(maker, store) {
            Ok(checks::Ran::Kept) => report.kept.push(check.promise),
            Ok(checks::Ran::Skipped(why)) => report.skipped.push((check.promise, why.into())),
            Err(seen) => return Err(failure(seen.0)),
        }
    }
    Ok(report)
}

/// [`check_contract`] for a test: the report, or a panic whose message is the failure's.
#[track_caller]
pub fn assert_contract<M: StoreMaker>(maker: &mut M) -> Report {
    match check_contract(maker) {
        Ok(report) => report,
        Err(failure) => panic!("{failure}"),
    }
}
