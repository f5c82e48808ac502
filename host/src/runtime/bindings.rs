//! Host bindings generated from `wit/sequencer.wit`.

wasmtime::component::bindgen!({
    path: "wit",
    world: "sequencer-plugin",
    // Malformed write words trap the guest call that sent them (see `link.rs`).
    imports: { "sequencer:plugin/storage.begin-write": trappable },
});

pub use self::exports::sequencer::plugin::events::{EventOffsets, EventStart, SequenceStatus};
pub use self::exports::sequencer::plugin::sequencer_api::GuestSequencer;
pub use self::sequencer::plugin::types::Refusal;
pub use self::sequencer::plugin::types::{
    BatchNumbers, Error as GuestError, HeldNumbers, NotNowReason, Outcome, Params as GuestParams,
    PlogPage, PlogValue, QuadNumbers, SeqQuad, StartOutcome, Status,
};
pub use self::sequencer::plugin::{clock, observer, storage};
impl SeqQuad {
    /// `seqs` as a `seq-quad`, if there are at most four.
    pub fn of(seqs: &[u16]) -> Option<SeqQuad> {
        let mut s = [0; 4];
        s.get_mut(..seqs.len())?.copy_from_slice(seqs);
        Some(SeqQuad {
            // At most 4: the slice above would not have fitted otherwise.
            count: seqs.len() as u8,
            s0: s[0],
            s1: s[1],
            s2: s[2],
            s3: s[3],
        })
    }

    /// The sequences whose numbers were handed out ahead, to report with `take`.
    pub fn of_taken(taken: ::sequencer::Taken) -> SeqQuad {
        let [s0, s1, s2, s3] = taken.seqs;
        SeqQuad {
            count: taken.len,
            s0,
            s1,
            s2,
            s3,
        }
    }

    /// The sequences to ask ahead about at a start (at most four: `Ahead`'s question).
    pub fn of_question(seqs: &[u16]) -> SeqQuad {
        SeqQuad::of(&seqs[..seqs.len().min(::sequencer::AHEAD_SEQS)]).unwrap_or(SeqQuad {
            count: 0,
            s0: 0,
            s1: 0,
            s2: 0,
            s3: 0,
        })
    }
}

impl QuadNumbers {
    /// The outcome and the numbers of the `count` sequences the `seq-quad` named, as
    /// `start-next` gives them: none unless it started.
    pub fn numbers(&self, count: u8) -> (StartOutcome, Vec<u64>) {
        let numbers = match self.outcome {
            StartOutcome::Started(_) => {
                let all = [self.n0, self.n1, self.n2, self.n3];
                all[..usize::from(count.min(4))].to_vec()
            }
            StartOutcome::NotNow(_) => Vec::new(),
        };
        (self.outcome, numbers)
    }
}
