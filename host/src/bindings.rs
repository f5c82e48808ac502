//! Host bindings generated from `wit/sequencer.wit`.

wasmtime::component::bindgen!({
    path: "wit",
    world: "sequencer-plugin",
});

pub use self::exports::sequencer::plugin::events::{EventOffsets, EventStart, SequenceStatus};
pub use self::exports::sequencer::plugin::sequencer_api::GuestSequencer;
pub use self::sequencer::plugin::types::{
    BatchNumbers, Error as GuestError, HeldNumbers, NotNowReason, Outcome, Params as GuestParams,
    PlogPage, PlogValue, QuadNumbers, SeqQuad, SeqValue as GuestSeqValue, StartOutcome, Status,
};
pub use self::sequencer::plugin::{clock, observer, storage};
