//! Host bindings generated from `wit/sequencer.wit`.

wasmtime::component::bindgen!({
    path: "wit",
    world: "sequencer-plugin",
    // Malformed write words trap the guest call that sent them (see `link.rs`).
    imports: { "sequencer:plugin/storage.begin-write": trappable },
});

pub use self::exports::sequencer::plugin::events::{EventOffsets, EventStart, SequenceStatus};
pub use self::exports::sequencer::plugin::sequencer_api::GuestSequencer;
pub use self::sequencer::plugin::types::{
    BatchNumbers, Error as GuestError, HeldNumbers, NotNowReason, Outcome, Params as GuestParams,
    PlogPage, PlogValue, QuadNumbers, SeqQuad, StartOutcome, Status,
};
pub use self::sequencer::plugin::{clock, observer, storage};
