//! A sequencer for event-sourced command processing: dense, monotonic numbers per workspace
//! (PLog offsets, record ids, ...), recovered from the partition log after a failure.
//!
//! The heart of the crate is [`Sequencer`], a deterministic state machine with no I/O and no
//! clock. A command processor calls [`Sequencer::start`], [`Sequencer::next`] and
//! [`Sequencer::flush`] (or [`Sequencer::actualize`] when its event failed); a driver runs the
//! flusher and the actualizer by taking [`Work`] from [`Sequencer::poll_work`], performing it
//! against storage and reporting the outcome. Glue for a WASI component (feature `component`,
//! compiled for a WASI target) and for wasm-bindgen (feature `js`, compiled for
//! `wasm32-unknown-unknown`) adapts this one core; the features are additive, and a native build
//! with neither pulls in neither.
//!
//! ```
//! use sequencer::{Instant, Params, PlogPage, Sequencer, Start, Work};
//!
//! let params = Params::new().with_seq(1, 1, 100);
//! let mut s = Sequencer::new(params).unwrap();
//! let now = Instant::from_nanos(0);
//! // Actualize from an empty storage: no stored offset, an empty PLog.
//! let Some(Work::ReadNextOffset { ticket }) = s.poll_work(now) else { unreachable!() };
//! s.complete_next_offset(ticket, 0).unwrap();
//! let Some(Work::ReadPlog { ticket, from }) = s.poll_work(now) else { unreachable!() };
//! s.complete_plog_read(ticket, PlogPage { values: &[], next: from, end: true }, now).unwrap();
//! // Workspace 7 is not in memory: start asks for its numbers (0: never stored).
//! let Ok(Start::Load(read)) = s.start(1, 7) else { unreachable!() };
//! assert_eq!(s.complete_numbers(read.ticket, &[0]), Ok(Start::Started(1)));
//! assert_eq!(s.next(1), Ok(100));
//! s.flush().unwrap();
//! let Some(Work::Write(w)) = s.poll_work(now) else { unreachable!() };
//! assert_eq!((w.values.len(), w.next_plog_offset), (1, 1));
//! s.complete_write(w.ticket).unwrap();
//! ```

// The glue modules expand to generated code that needs `unsafe`; the core itself has none.
#![cfg_attr(not(any(feature = "component", feature = "js")), forbid(unsafe_code))]
#![warn(missing_docs)]

pub mod ahead;
mod cache;
// The glues are additive: each is compiled where it can run (the component for a WASI target,
// the wasm-bindgen build for a browser or Node target), both natively (to type-check them with
// every feature on), never both into one wasm module.
#[cfg(all(
    feature = "component",
    not(all(target_arch = "wasm32", target_os = "unknown", feature = "js"))
))]
mod component;
mod error;
pub mod facade;
#[cfg(all(feature = "js", not(target_os = "wasi")))]
mod js;
mod kinds;
mod params;
mod retry;
mod sequencer;
pub mod shell;
pub mod testkit;
mod timer;
mod types;
mod unflushed;
mod vocab;
mod work;
mod ws_numbers;

pub use ahead::{AHEAD_SEQS, Ahead, Report, Taken};
pub use error::Error;
pub use params::{
    ContractLimits, DEFAULT_BATCHER_DELAY_ON_OVERFLOW, DEFAULT_LRU_CACHE_SIZE,
    DEFAULT_MAX_RETRY_DELAY, DEFAULT_MAX_UNFLUSHED_VALUES, DEFAULT_RETRY_DELAY,
    DEFAULT_RETRY_JITTER_PERCENT, Params, ParamsError,
};
pub use sequencer::{HeldNumbers, Sequencer, Status};
pub use shell::{Batch, BatchStop, EventStart, Host, Read, Shell};
pub use types::{Instant, Number, NumberKey, PLogOffset, SeqId, SeqValue, WsId, WsKind};
pub use vocab::ErrorKind;
pub use work::{
    CheckedWords, MalformedWrite, NotNowReason, Outcome, PLOG_WORDS_PER_VALUE, PlogPage, PlogWords,
    ReadNumbers, ReadNumbersMany, ReplayProgress, Start, Ticket, WRITE_WORDS_PER_VALUE, Work,
    WriteRequest, WriteWords,
};
