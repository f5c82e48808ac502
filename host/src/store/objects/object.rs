//! The event objects: what an append creates under `events/<partition>/<first offset>`, in
//! either format a store may hold.
//!
//! - **Format 2** (written by this version): the events of one append part, `first..=last`:
//!   `["SQE2", first u64, count u32, the hash before first u64, writer-id length u8, writer id,
//!   count × (hash u64, length u32), the events]`.
//!   A format 2 object of no events is a **takeover mark**: a successor creates it at the
//!   PLog's next offset when it acquires the partition, its epoch in the writer id, so that a
//!   stale owner's next create collides with it (see `names` for the name after it).
//! - **Format 1** (stores written before it): one event, `["SQE1", offset u64, the previous
//!   event's hash u64, hash u64, writer-id length u8, writer id, the event]`.
//!
//! In both, each event is stored as every backend encodes it ([`crate::store::codec`]: version
//! 3, with its CRC-32C), so it carries its own checksum beside its link hash.
//!
//! Both are read as one [`EventRange`] (a format 1 object is a range of one event), so a
//! store of either format, or of both, reads, scans and merges alike. Every event carries its
//! link hash ([`event_hash`]); decoding verifies each one ([`linked_or_damaged`]), so a flipped
//! byte is found where it is: in an event whose checksum fails too, the event is damaged (kept,
//! flagged, for `check` to name and a replay to refuse); anywhere else, the object is corrupt.
//! The writer id is in the bytes, so a writer that finds its name taken tells its own
//! earlier attempt (the same bytes) from another writer's object.

use sequencer::PLogOffset;

use crate::store::objects::chain::{event_hash, linked_or_damaged, u32_at, u64_at};
use crate::store::objects::range::EventRange;

const ONE_EVENT_MAGIC: &[u8; 4] = b"SQE1";
const RANGE_MAGIC: &[u8; 4] = b"SQE2";

/// The format of the event objects a handle writes (every handle reads both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ObjectFormat {
    /// Format 1: one object per event, as older stores hold them. Written only to make such a
    /// store (tests, [`WRITE_FORMAT_ENV`]).
    OneEvent = 1,
    /// Format 2: one object per append part, holding its events.
    Ranges = 2,
}

impl ObjectFormat {
    /// The format a `FORMAT` record's `format=N` names, `None` for an unknown one.
    pub fn from_number(n: u32) -> Option<Self> {
        match n {
            1 => Some(Self::OneEvent),
            2 => Some(Self::Ranges),
            _ => None,
        }
    }

    /// Its number in a `FORMAT` record.
    pub fn number(self) -> u32 {
        self as u32
    }

    /// The format a new store is written in: [`Ranges`](Self::Ranges), unless
    /// [`WRITE_FORMAT_ENV`] is `1` (a test making a store as older releases did).
    pub fn for_writing() -> Self {
        match std::env::var(WRITE_FORMAT_ENV).ok().as_deref() {
            Some("1") => Self::OneEvent,
            _ => Self::Ranges,
        }
    }
}

/// Names the format new objects are written in (`1`: one object per event, as older stores
/// hold them; anything else: the current format). For tests that make a store of the old format
/// and then continue it; a store of format 1 opened without it is upgraded to format 2.
pub const WRITE_FORMAT_ENV: &str = "SEQUENCER_OBJECTS_WRITE_FORMAT";

/// Decodes an event object of either format and verifies every hash and event in it; `None`
/// if it is not a sound one. An event damaged inside while its links hold is kept, its offset
/// in [`EventRange::damaged`].
pub(super) fn decode(b: Vec<u8>) -> Option<EventRange> {
    match b.get(..4)? {
        m if m == RANGE_MAGIC => decode_range(b),
        m if m == ONE_EVENT_MAGIC => decode_one(b),
        _ => None,
    }
}

fn decode_range(b: Vec<u8>) -> Option<EventRange> {
    let head = (u64_at(&b, 4)?, u64_at(&b, 16)?, u32_at(&b, 12)? as usize);
    let wlen = usize::from(*b.get(24)?);
    let writer = String::from_utf8_lossy(b.get(25..25 + wlen)?).into_owned();
    EventRange::decode_table(b, head, 25 + wlen, writer).filter(|r| r.first > 0)
}

fn decode_one(b: Vec<u8>) -> Option<EventRange> {
    let (offset, prev, hash) = (u64_at(&b, 4)?, u64_at(&b, 12)?, u64_at(&b, 20)?);
    let wlen = usize::from(*b.get(28)?);
    let writer = String::from_utf8_lossy(b.get(29..29 + wlen)?).into_owned();
    let damaged = linked_or_damaged(offset, prev, hash, b.get(29 + wlen..)?)?;
    let span = (29 + wlen, b.len());
    let mut one = EventRange::new(offset, prev, vec![hash], &writer, b, vec![span]);
    one.damaged = damaged.then_some(offset);
    (offset > 0).then_some(one)
}

/// The writer id as stored (at most 255 bytes).
fn writer_bytes(writer: &str) -> &[u8] {
    &writer.as_bytes()[..writer.len().min(255)]
}

/// The format 2 object of `events` (encoded as every backend encodes an event) from `first` on,
/// written by `writer` after the event whose hash is `prev`.
pub(super) fn encode_range(
    first: PLogOffset, prev: u64, writer: &str, events: &[&[u8]],
) -> EventRange {
    let w = writer_bytes(writer);
    let body: usize = events.iter().map(|e| e.len()).sum();
    let mut out = Vec::with_capacity(25 + w.len() + 12 * events.len() + body);
    out.extend_from_slice(RANGE_MAGIC);
    out.extend_from_slice(&first.to_le_bytes());
    out.extend_from_slice(&(events.len() as u32).to_le_bytes());
    out.extend_from_slice(&prev.to_le_bytes());
    out.push(w.len() as u8);
    out.extend_from_slice(w);
    let mut link = prev;
    let mut hashes = Vec::with_capacity(events.len());
    for (o, e) in (first..).zip(events) {
        link = event_hash(o, link, e);
        hashes.push(link);
        out.extend_from_slice(&link.to_le_bytes());
        out.extend_from_slice(&(e.len() as u32).to_le_bytes());
    }
    let mut spans = Vec::with_capacity(events.len());
    for e in events {
        spans.push((out.len(), out.len() + e.len()));
        out.extend_from_slice(e);
    }
    EventRange::new(first, prev, hashes, writer, out, spans)
}

/// The takeover mark at `offset` (no events; the hash before it `prev`) of `writer`, whose id
/// records the successor's epoch.
pub(super) fn encode_mark(offset: PLogOffset, prev: u64, writer: &str) -> EventRange {
    encode_range(offset, prev, writer, &[])
}

/// The format 1 object of the event at `offset` written by `writer` after the event whose hash
/// is `prev`.
pub(super) fn encode_one(offset: PLogOffset, prev: u64, writer: &str, event: &[u8]) -> EventRange {
    let hash = event_hash(offset, prev, event);
    let w = writer_bytes(writer);
    let mut out = Vec::with_capacity(4 + 24 + 1 + w.len() + event.len());
    out.extend_from_slice(ONE_EVENT_MAGIC);
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&prev.to_le_bytes());
    out.extend_from_slice(&hash.to_le_bytes());
    out.push(w.len() as u8);
    out.extend_from_slice(w);
    let span = (out.len(), out.len() + event.len());
    out.extend_from_slice(event);
    EventRange::new(offset, prev, vec![hash], writer, out, vec![span])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::codec::{EventError, decode_event, encode_event};

    /// `n` events encoded for offsets `first..`.
    fn events(first: PLogOffset, n: u64) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| encode_event(first + i, &[sequencer::SeqValue::new(1, 1, i)], b"p"))
            .collect()
    }

    #[test]
    fn an_object_of_several_events_decodes_to_what_was_encoded_and_a_flipped_byte_is_refused_or_damaged()
     {
        let evs = events(10, 3);
        let refs: Vec<&[u8]> = evs.iter().map(Vec::as_slice).collect();
        let made = encode_range(10, 7, "w-1", &refs);
        let bytes = made.bytes().to_vec();
        let o = decode(bytes.clone()).expect("sound");
        assert_eq!(o.hashes, made.hashes);
        assert_eq!(
            (0..3).map(|i| made.event(i).to_vec()).collect::<Vec<_>>(),
            evs
        );
        assert_eq!((o.first, o.prev, o.last(), o.damaged), (10, 7, 12, None));
        assert_eq!(o.writer, "w-1");
        assert_eq!((0..3).map(|i| o.event(i).to_vec()).collect::<Vec<_>>(), evs);
        assert_eq!(o.hash_before(1), o.hashes[0]);
        // In the count, the hash before it or the hash table: corrupt.
        for at in [13, 17, 30] {
            let mut bad = bytes.clone();
            bad[at] ^= 1;
            assert!(decode(bad).is_none(), "byte {at}");
        }
        // In its first offset: it no longer holds the offsets its name says, which the read
        // of a name refuses (`Shared::get_object`).
        let mut bad = bytes.clone();
        bad[5] ^= 1;
        assert!(decode(bad).is_none_or(|o| o.first != 10));
        // Inside the last event's payload: the links hold, that event fails its checksum.
        let mut bad = bytes;
        let n = bad.len();
        bad[n - 1] ^= 1;
        let o = decode(bad).expect("linked");
        assert_eq!(o.damaged, Some(12));
        assert_eq!(decode_event(12, o.event(2)), Err(EventError::Checksum(12)));
        assert!(decode_event(11, o.event(1)).is_ok());
    }

    #[test]
    fn a_one_event_object_of_format_1_reads_as_a_range_of_one() {
        let e = &events(3, 1)[0];
        let made = encode_one(3, 9, "w", e);
        let bytes = made.bytes().to_vec();
        let o = decode(bytes.clone()).expect("sound");
        assert_eq!(
            (o.first, o.prev, o.last(), o.last_hash(), o.damaged),
            (3, 9, 3, made.last_hash(), None)
        );
        assert_eq!((o.event(0), made.event(0)), (e.as_slice(), e.as_slice()));
        // The same event in format 2 links identically.
        let two = encode_range(3, 9, "w", &[e.as_slice()]);
        assert_eq!(made.last_hash(), two.last_hash());
        // In the event's payload: damaged, its links kept.
        let mut bad = bytes.clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        let o = decode(bad).expect("linked");
        assert_eq!((o.damaged, o.last_hash()), (Some(3), made.last_hash()));
        // In the header (the previous hash): corrupt.
        let mut bad = bytes;
        bad[12] ^= 1;
        assert!(decode(bad).is_none());
    }
}
