//! What the sequencer hands its driver to do, and what it takes back.

use crate::types::{Number, PLogOffset, SeqId, SeqValue, WsId};

/// Names one piece of outstanding work; the driver reports the outcome under the same ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

/// A storage operation the sequencer needs performed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Work {
    /// Write `values`, then `next_plog_offset`; report with `complete_write` or `fail`.
    Write(WriteRequest),
    /// Read the stored PLog offset, as the last completed [`Work::Write`] stored it (0 when none
    /// is stored); report with `complete_next_offset` or `fail`. Replay starts at it, the event
    /// at it included.
    ReadNextOffset {
        /// Report under this ticket.
        ticket: Ticket,
    },
    /// Read PLog events from offset `from` on, as many as the driver likes; report with
    /// `complete_plog_read` or `fail`.
    ReadPlog {
        /// Report under this ticket.
        ticket: Ticket,
        /// The first offset to read.
        from: PLogOffset,
    },
}

impl Work {
    /// The ticket to report this work's outcome under.
    pub fn ticket(&self) -> Ticket {
        match self {
            Work::Write(w) => w.ticket,
            Work::ReadNextOffset { ticket } | Work::ReadPlog { ticket, .. } => *ticket,
        }
    }
}

/// A batch to persist: the values first, then the next PLog offset.
///
/// Storage must make the values durable before the offset: an offset ahead of its values would
/// let a restart skip events whose numbers storage does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRequest {
    /// Report under this ticket.
    pub ticket: Ticket,
    /// The last number of each key; keys are unique. May be empty.
    pub values: Vec<SeqValue>,
    /// Stored after the values: every event before it has its numbers in the view (after a
    /// flush, the last flushed event's offset, not the one after it; after a replay, the offset
    /// after the last event replayed). A replay after a restart starts at it, that event
    /// included.
    pub next_plog_offset: PLogOffset,
}

/// How many `u64` words a write's values take in the flat layout of the WIT's `begin-write`:
/// the workspace, the sequence (a `u16` widened) and the number.
pub const WRITE_WORDS_PER_VALUE: usize = 3;

/// A write's values in the flat layout the WIT's `begin-write` carries (one copy across the
/// boundary instead of a record per value): [`WRITE_WORDS_PER_VALUE`] words per value,
/// `[ws, seq, value]`, value after value.
pub struct WriteWords;

/// Why flat write words are not a write's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MalformedWrite(pub &'static str);

impl core::fmt::Display for MalformedWrite {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "malformed write: {}", self.0)
    }
}

impl WriteWords {
    /// The flat words of `values`, appended to `out` (cleared first).
    pub fn encode_into(values: &[SeqValue], out: &mut Vec<u64>) {
        out.clear();
        out.reserve(values.len() * WRITE_WORDS_PER_VALUE);
        for v in values {
            out.extend_from_slice(&[v.key.ws, u64::from(v.key.seq), v.value]);
        }
    }

    /// The values `words` lay out; refused whole when their length is not a multiple of
    /// [`WRITE_WORDS_PER_VALUE`] or a sequence does not fit 16 bits.
    pub fn decode(words: &[u64]) -> Result<Vec<SeqValue>, MalformedWrite> {
        Self::check_words(words)?;
        Ok(decode_checked(words))
    }

    /// `words` as a write's values not yet decoded, refused as [`decode`](Self::decode)
    /// refuses: for a host that checks in the guest's call and decodes later, elsewhere.
    pub fn check(words: Vec<u64>) -> Result<CheckedWords, MalformedWrite> {
        Self::check_words(&words)?;
        Ok(CheckedWords(words))
    }

    fn check_words(words: &[u64]) -> Result<(), MalformedWrite> {
        let (values, rest) = words.as_chunks::<WRITE_WORDS_PER_VALUE>();
        if !rest.is_empty() {
            return Err(MalformedWrite(
                "its length is not a whole number of values (3 words each)",
            ));
        }
        if values
            .iter()
            .any(|&[_, seq, _]| seq > u64::from(SeqId::MAX))
        {
            return Err(MalformedWrite("a sequence does not fit 16 bits"));
        }
        Ok(())
    }
}

/// Decodes words already checked (whole values, 16-bit sequences).
fn decode_checked(words: &[u64]) -> Vec<SeqValue> {
    let (values, _) = words.as_chunks::<WRITE_WORDS_PER_VALUE>();
    // Sized up front (measured: growing by doubling took 9 % of a replay's driver thread).
    let mut out = Vec::with_capacity(values.len());
    out.extend(values.iter().map(|&[ws, seq, value]| {
        // Checked: every sequence fits 16 bits.
        SeqValue::new(ws, seq as SeqId, value)
    }));
    out
}

/// A write's flat words, checked to lay out whole values ([`WriteWords::check`]): decoding them
/// cannot fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedWords(Vec<u64>);

impl CheckedWords {
    /// The values the words lay out.
    pub fn decode(&self) -> Vec<SeqValue> {
        decode_checked(&self.0)
    }

    /// The write of these values under `ticket`, storing `next_plog_offset`, as work.
    pub fn write_work(&self, ticket: Ticket, next_plog_offset: PLogOffset) -> Work {
        Work::Write(WriteRequest {
            ticket,
            values: self.decode(),
            next_plog_offset,
        })
    }
}

/// A storage read `start` needs before it can begin a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadNumbers {
    /// Report with `complete_numbers` or `fail` under this ticket.
    pub ticket: Ticket,
    /// The workspace.
    pub ws: WsId,
    /// The sequences to read, in the order the numbers must come back; 0 for a key never stored.
    pub seqs: Vec<SeqId>,
}

/// A storage read a batch needs before its first event: the stored numbers of every sequence
/// of its kind in each of several workspaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadNumbersMany {
    /// The workspaces, in the order their numbers must come back.
    pub ws: Vec<WsId>,
    /// The sequences to read for each workspace, in order; 0 for a key never stored.
    pub seqs: Vec<SeqId>,
}

/// The outcome of storage work, as a driver reports it (the WIT's `outcome`).
#[derive(Clone, Copy, Debug)]
pub enum Outcome<'a> {
    /// A [`Work::Write`] is durable.
    Written,
    /// A [`Work::ReadNextOffset`] read this offset (0 if none is stored).
    NextOffset(PLogOffset),
    /// A [`Work::ReadPlog`] read this page.
    PlogPage(PlogPage<'a>),
    /// A [`Work::ReadPlog`] read this page, in the flat layout (the WIT's
    /// `deliver-plog-words`): replayed exactly as the same page as a [`PlogPage`].
    PlogWords(PlogWords<'a>),
    /// The work failed; the sequencer retries it after a delay if it still needs it.
    Failed,
}

/// The outcome of `start`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    /// The transaction began; the event it numbers goes at this PLog offset.
    Started(PLogOffset),
    /// No transaction began; try again later.
    NotNow(NotNowReason),
    /// No transaction began yet: perform this read and report it with `complete_numbers`,
    /// which then begins the transaction.
    Load(ReadNumbers),
}

/// Why `start` said "not now".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotNowReason {
    /// Actualization is in progress.
    Actualizing,
    /// More values than `max_unflushed_values` wait to be flushed.
    TooManyUnflushed,
}

/// A run of PLog events, as a driver read it for a `ReadPlog` request.
#[derive(Clone, Copy, Debug)]
pub struct PlogPage<'a> {
    /// The values of the events on the page, in offset order; an event's values share its
    /// offset and may repeat a key. Events without values contribute nothing here.
    pub values: &'a [(PLogOffset, SeqValue)],
    /// The offset after the last event the page covers (the requested `from` when the page is
    /// empty). Every event below it has been delivered.
    pub next: PLogOffset,
    /// No event exists at or after `next`: the PLog ends here.
    pub end: bool,
}

/// How many `u64` words a [`PlogWords`] page gives each value: its event's offset, the
/// workspace, the sequence (a `u16` widened) and the number.
pub const PLOG_WORDS_PER_VALUE: usize = 4;

/// A PLog page in the flat layout a host hands over with one copy (the WIT's
/// `deliver-plog-words`): [`PLOG_WORDS_PER_VALUE`] words per value, `[offset, ws, seq, value]`,
/// value after value in the order of a [`PlogPage`]'s `values`. A length that is not a multiple
/// of [`PLOG_WORDS_PER_VALUE`] or a sequence above `u16::MAX` is a malformed page: refused
/// whole, before anything changes.
#[derive(Clone, Copy, Debug)]
pub struct PlogWords<'a> {
    /// The values, flat.
    pub words: &'a [u64],
    /// As [`PlogPage::next`].
    pub next: PLogOffset,
    /// As [`PlogPage::end`].
    pub end: bool,
}

impl PlogWords<'_> {
    /// The flat words of `values` (each with its event's offset), as a host lays a page out for
    /// `deliver-plog-words`: appended to `out`, which is cleared first.
    pub fn encode_into(values: &[(PLogOffset, SeqValue)], out: &mut Vec<u64>) {
        out.clear();
        out.reserve(values.len() * PLOG_WORDS_PER_VALUE);
        for &(offset, v) in values {
            out.extend_from_slice(&[offset, v.key.ws, u64::from(v.key.seq), v.value]);
        }
    }
}

/// The values of a PLog page however laid out: what replay reads, value by value.
pub(crate) trait PageValues {
    /// How many values.
    fn count(&self) -> usize;
    /// The offset of value `i`'s event.
    fn offset(&self, i: usize) -> PLogOffset;
    /// The workspace of value `i`.
    fn ws(&self, i: usize) -> WsId;
    /// The sequence and number of value `i`.
    fn seq_value(&self, i: usize) -> (SeqId, Number);
}

impl PageValues for [(PLogOffset, SeqValue)] {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn offset(&self, i: usize) -> PLogOffset {
        self[i].0
    }
    #[inline]
    fn ws(&self, i: usize) -> WsId {
        self[i].1.key.ws
    }
    #[inline]
    fn seq_value(&self, i: usize) -> (SeqId, Number) {
        (self[i].1.key.seq, self[i].1.value)
    }
}

/// Flat words already checked: every sequence word fits a `u16`.
impl PageValues for [[u64; PLOG_WORDS_PER_VALUE]] {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn offset(&self, i: usize) -> PLogOffset {
        self[i][0]
    }
    #[inline]
    fn ws(&self, i: usize) -> WsId {
        self[i][1]
    }
    #[inline]
    fn seq_value(&self, i: usize) -> (SeqId, Number) {
        // Checked before replay to fit a `u16`: the cast loses nothing.
        (self[i][2] as SeqId, self[i][3])
    }
}

/// How far a PLog page was consumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayProgress {
    /// How many of the page's values were consumed; the rest are asked for again later.
    pub consumed: usize,
    /// Actualization finished with this page.
    pub finished: bool,
}

/// The number a sequence of a loaded workspace continues from.
#[inline]
pub(crate) fn continue_from(stored: Number, initial: Number) -> Number {
    stored.max(initial - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_words_decode_to_the_values_they_were_encoded_from() {
        let values = [
            SeqValue::new(7, 1, 42),
            SeqValue::new(u64::MAX, u16::MAX, u64::MAX),
            SeqValue::new(0, 0, 0),
        ];
        let mut words = vec![99];
        WriteWords::encode_into(&values, &mut words);
        assert_eq!(words.len(), 3 * WRITE_WORDS_PER_VALUE);
        assert_eq!(&words[..3], &[7, 1, 42]);
        assert_eq!(WriteWords::decode(&words), Ok(values.to_vec()));
        assert_eq!(WriteWords::decode(&[]), Ok(Vec::new()));
    }

    #[test]
    fn write_words_of_a_broken_length_or_a_wide_sequence_are_refused_whole() {
        assert!(WriteWords::decode(&[1, 2, 3, 4]).is_err());
        let wide = WriteWords::decode(&[1, 2, 3, 1, 1 << 16, 3]).unwrap_err();
        assert!(wide.to_string().contains("16 bits"), "{wide}");
    }
}
