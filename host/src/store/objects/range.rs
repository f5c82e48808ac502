//! A run of a partition's consecutive events held in one object, decoded and verified
//! ([`EventRange`]): what a bundle and an event object of either format all are once read, so
//! that reads, the scan and the merger treat them alike.

use sequencer::PLogOffset;

use crate::store::objects::chain::{linked_or_damaged, u32_at, u64_at};

/// Events from `first` on, each with its link hash, kept as the object's bytes and each
/// event's span in them; every link verified when decoded.
#[derive(Clone, Debug)]
pub(super) struct EventRange {
    /// The offset of its first event.
    pub(super) first: PLogOffset,
    /// The hash of the event before `first` (0 before the first event).
    pub(super) prev: u64,
    /// Each event's hash, from `first` on.
    pub(super) hashes: Vec<u64>,
    /// The id of the writer that created it: an event object's (a writer that finds its name
    /// taken tells its own earlier attempt from another writer's); empty for a bundle.
    pub(super) writer: String,
    /// The first of its events that fails its checksum while its links hold (damaged inside):
    /// never merged, and a writer refuses the store.
    pub(super) damaged: Option<PLogOffset>,
    bytes: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl EventRange {
    /// The range made of `bytes`, whose events are at `spans`, with their `hashes`.
    pub(super) fn new(
        first: PLogOffset, prev: u64, hashes: Vec<u64>, writer: &str, bytes: Vec<u8>,
        spans: Vec<(usize, usize)>,
    ) -> Self {
        Self {
            first,
            prev,
            hashes,
            writer: writer.to_string(),
            damaged: None,
            bytes,
            spans,
        }
    }

    /// Decodes the `n` events from `first` of the object `b`, whose hash table (a hash u64
    /// and a length u32 per event) starts at `table` and is followed by the events up to the
    /// object's end, verifying every link from `prev`; `None` if one is broken or the lengths
    /// do not add up to the object. An event damaged inside while its links hold is kept, its
    /// offset in [`damaged`](Self::damaged) (the read that decodes it finds it).
    pub(super) fn decode_table(
        b: Vec<u8>, (first, prev, n): (PLogOffset, u64, usize), table: usize, writer: String,
    ) -> Option<Self> {
        let mut at = table.checked_add(n.checked_mul(12)?)?;
        let (mut hashes, mut spans) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut link = prev;
        let mut damaged = None;
        for i in 0..n {
            let h = u64_at(&b, table + 12 * i)?;
            let len = u32_at(&b, table + 12 * i + 8)? as usize;
            let end = at.checked_add(len)?;
            let o = first.checked_add(i as u64)?;
            if linked_or_damaged(o, link, h, b.get(at..end)?)? {
                damaged = damaged.or(Some(o));
            }
            link = h;
            hashes.push(h);
            spans.push((at, end));
            at = end;
        }
        (at == b.len()).then_some(Self {
            first,
            prev,
            hashes,
            writer,
            damaged,
            bytes: b,
            spans,
        })
    }

    /// How many events it holds (at least one, but none in a takeover mark).
    pub(super) fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether it is a takeover mark: an event object of no events, which holds its name for
    /// the epoch in its writer id (`names`).
    pub(super) fn is_mark(&self) -> bool {
        self.spans.is_empty()
    }

    /// The offset of its last event (the one before `first` for a takeover mark).
    pub(super) fn last(&self) -> PLogOffset {
        self.first + self.len() as u64 - 1
    }

    /// The hash of its last event.
    pub(super) fn last_hash(&self) -> u64 {
        self.hashes.last().copied().unwrap_or(self.prev)
    }

    /// Event `i` (from `first`).
    pub(super) fn event(&self, i: usize) -> &[u8] {
        let (a, b) = self.spans[i];
        &self.bytes[a..b]
    }

    /// Its bytes, as stored.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The hash before event `i` (`prev` for the first).
    pub(super) fn hash_before(&self, i: usize) -> u64 {
        if i == 0 {
            self.prev
        } else {
            self.hashes[i - 1]
        }
    }
}
