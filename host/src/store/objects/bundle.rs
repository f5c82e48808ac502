//! The bundle format: a run of a partition's events in one object, with every event's hash,
//! so that a bundle is verified on its own and linked to the bundle before it.
//!
//! `["SQB1", first u64, count u32, the hash before first u64, count × (hash u64, length u32),
//! the events]` (little-endian). A bundle's link (the hash before it and the hash of its last
//! event) can be read from its header and hash table alone ([`link_ranges`]). Decoded, a bundle
//! is an [`EventRange`] like an event object.

use std::ops::Range;

use sequencer::PLogOffset;

use crate::store::objects::chain::{u32_at, u64_at};
use crate::store::objects::range::EventRange;

const BUNDLE_MAGIC: &[u8; 4] = b"SQB1";

/// The object of the bundle from `first` whose predecessor's hash is `prev`, holding `events`
/// (each with its hash) in order.
pub(super) fn encode(first: PLogOffset, prev: u64, events: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let body: usize = events.iter().map(|e| e.1.len()).sum();
    let mut out = Vec::with_capacity(24 + 12 * events.len() + body);
    out.extend_from_slice(BUNDLE_MAGIC);
    out.extend_from_slice(&first.to_le_bytes());
    out.extend_from_slice(&(events.len() as u32).to_le_bytes());
    out.extend_from_slice(&prev.to_le_bytes());
    for (h, e) in events {
        out.extend_from_slice(&h.to_le_bytes());
        out.extend_from_slice(&(e.len() as u32).to_le_bytes());
    }
    for (_, e) in events {
        out.extend_from_slice(e);
    }
    out
}

/// Decodes a bundle and verifies every link inside it; `None` if it is not a sound one. An
/// event damaged inside while its links hold ([`linked_or_damaged`](super::chain::linked_or_damaged))
/// is kept as it is: the read that decodes it finds it fails its checksum.
pub(super) fn decode(b: Vec<u8>) -> Option<EventRange> {
    if b.get(..4)? != BUNDLE_MAGIC {
        return None;
    }
    let head = (u64_at(&b, 4)?, u64_at(&b, 16)?, u32_at(&b, 12)? as usize);
    EventRange::decode_table(b, head, 24, String::new())
}

/// The byte ranges of a bundle of `n` events that hold its link: its header (the magic, the
/// first offset, the count and the hash before it) and its last event's hash.
pub(super) fn link_ranges(n: u64) -> [Range<u64>; 2] {
    let at = 24 + 12 * (n - 1);
    [0..24, at..at + 8]
}

/// The link read from [`link_ranges`] (`head`, then `tail`) of the bundle of `n` events from
/// `first`: the hash before its first event and the hash of its last; `None` if the header is
/// not that bundle's.
pub(super) fn link(head: &[u8], tail: &[u8], first: PLogOffset, n: u64) -> Option<(u64, u64)> {
    let sound = head.get(..4) == Some(BUNDLE_MAGIC.as_slice())
        && u64_at(head, 4) == Some(first)
        && u32_at(head, 12).map(u64::from) == Some(n);
    match (sound, u64_at(head, 16), u64_at(tail, 0)) {
        (true, Some(prev), Some(last_hash)) => Some((prev, last_hash)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::codec::{EventError, decode_event, encode_event};
    use crate::store::objects::chain::event_hash;

    #[test]
    fn a_bundle_decodes_to_what_was_encoded_and_a_flipped_byte_is_refused_or_damaged() {
        let events: Vec<Vec<u8>> = (0..3)
            .map(|i| encode_event(10 + i, &[sequencer::SeqValue::new(1, 1, i)], b"x"))
            .collect();
        let mut hashes = Vec::new();
        let mut prev = 7;
        for (i, e) in events.iter().enumerate() {
            prev = event_hash(10 + i as u64, prev, e);
            hashes.push(prev);
        }
        let pairs: Vec<(u64, Vec<u8>)> = hashes.into_iter().zip(events.clone()).collect();
        let bytes = encode(10, 7, &pairs);
        let back = decode(bytes.clone()).expect("sound");
        assert_eq!(
            (0..3).map(|i| back.event(i).to_vec()).collect::<Vec<_>>(),
            events
        );
        assert_eq!(back.last(), 12);
        // Inside the last event's payload: the bundle's links hold, the event fails its
        // checksum when it is decoded.
        let mut bad = bytes.clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        let damaged = decode(bad).expect("linked");
        assert_eq!(
            decode_event(12, damaged.event(2)),
            Err(EventError::Checksum(12))
        );
        assert!(decode_event(11, damaged.event(1)).is_ok());
        // In the hash table: corrupt.
        let mut bad = bytes;
        bad[24] ^= 1;
        assert!(decode(bad).is_none());
    }

    #[test]
    fn a_bundles_link_reads_from_its_header_and_hash_table() {
        let events: Vec<(u64, Vec<u8>)> = (0..4u64)
            .map(|i| {
                (
                    100 + i,
                    encode_event(5 + i, &[sequencer::SeqValue::new(1, 1, i)], b"y"),
                )
            })
            .collect();
        let bytes = encode(5, 42, &events);
        let [head, tail] = link_ranges(4);
        let slice = |r: Range<u64>| &bytes[r.start as usize..r.end as usize];
        assert_eq!(
            link(slice(head.clone()), slice(tail.clone()), 5, 4),
            Some((42, 103))
        );
        assert_eq!(link(slice(head), slice(tail), 6, 4), None);
    }
}
