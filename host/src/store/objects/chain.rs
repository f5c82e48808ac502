//! The hash chain that links a partition's events, and the one-event object that carries an
//! event with its links.
//!
//! Each event's hash covers its offset, the previous event's hash and its bytes (64 bits,
//! [`event_hash`]): a chain that reads, the merger and the start-up scan verify, so a flipped
//! byte, a missing event or an event written after the wrong one is found where it is.
//!
//! A one-event object: `["SQE1", offset u64, the previous event's hash u64, hash u64,
//! writer-id length u8, writer id, the event as every backend encodes it]` (little-endian).
//!
//! An event whose bytes no longer match its hash *and* fail the event's own checksum
//! ([`crate::store::codec`]) is damaged inside, while its links (the hashes kept beside it)
//! still hold: it is read as a damaged event ([`linked_or_damaged`]) so that `check` can name
//! it and go on; a replay refuses it when it decodes it. Any other mismatch is corruption.

use sequencer::PLogOffset;

use crate::store::codec::{Checksum, event_checksum};

const EVENT_MAGIC: &[u8; 4] = b"SQE1";

/// The link hash of the event at `offset` whose predecessor's hash is `prev` (0 before the
/// first event): the event's bytes mixed 8 bytes at a time into four lanes (each step a
/// bijection of its lane's state, so a change in any one word always changes the hash; four
/// lanes let the processor work on them at once), folded together with the offset, `prev` and
/// the length, then finalized as MurmurHash3's `fmix64`.
pub fn event_hash(offset: PLogOffset, prev: u64, event: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let step = |h: u64, w: u64| (h ^ w).wrapping_mul(K).rotate_left(31);
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
    let mut lanes = [
        0x2545_F491_4F6C_DD1D,
        0x9FB2_1C65_1E98_DF25,
        0xD6E8_FEB8_6659_FD93,
        0xA076_1D64_78BD_642F,
    ];
    let mut blocks = event.chunks_exact(32);
    for b in &mut blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = step(*lane, word(&b[8 * i..8 * i + 8]));
        }
    }
    let mut words = blocks.remainder().chunks_exact(8);
    for (i, w) in (&mut words).enumerate() {
        lanes[i] = step(lanes[i], word(w));
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    let mut h = step(step(step(lanes[0], offset), prev), event.len() as u64);
    h = step(h, u64::from_le_bytes(tail));
    for lane in &lanes[1..] {
        h = step(h, *lane);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A one-event object, decoded and verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct OneEvent {
    /// Its offset.
    pub(super) offset: PLogOffset,
    /// The previous event's hash (0 before the first event).
    pub(super) prev: u64,
    /// Its own hash.
    pub(super) hash: u64,
    /// The id of the writer that created it.
    pub(super) writer: String,
    /// The event, as every backend encodes it.
    pub(super) event: Vec<u8>,
    /// Its bytes fail their checksum (and so their hash): damaged, never to be replayed or
    /// merged.
    pub(super) damaged: bool,
}

/// Whether `event` at `offset`, kept with the hash `hash` after `prev`, matches it (`Some(false)`),
/// is damaged inside while its links hold (`Some(true)`: the hash and the event's own checksum
/// both fail), or is corrupt (`None`).
pub(super) fn linked_or_damaged(
    offset: PLogOffset,
    prev: u64,
    hash: u64,
    event: &[u8],
) -> Option<bool> {
    let checksum = event_checksum(offset, event);
    if event_hash(offset, prev, event) == hash {
        return checksum.map(|_| false);
    }
    (checksum == Some(Checksum::Mismatch)).then_some(true)
}

/// The one-event object of the event at `offset` written by `writer` after the event whose hash
/// is `prev`, and the event's hash.
pub(super) fn encode_one(
    offset: PLogOffset,
    prev: u64,
    writer: &str,
    event: &[u8],
) -> (Vec<u8>, u64) {
    let hash = event_hash(offset, prev, event);
    let w = &writer.as_bytes()[..writer.len().min(255)];
    let mut out = Vec::with_capacity(4 + 24 + 1 + w.len() + event.len());
    out.extend_from_slice(EVENT_MAGIC);
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&prev.to_le_bytes());
    out.extend_from_slice(&hash.to_le_bytes());
    out.push(w.len() as u8);
    out.extend_from_slice(w);
    out.extend_from_slice(event);
    (out, hash)
}

/// The little-endian `u64` at `at`, `None` past the end.
pub(super) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The little-endian `u32` at `at`, `None` past the end.
pub(super) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Decodes a one-event object; `None` if it is not one or its hash does not match its bytes
/// (unless the event is damaged inside, [`linked_or_damaged`]).
pub(super) fn decode_one(b: &[u8]) -> Option<OneEvent> {
    if b.get(..4)? != EVENT_MAGIC {
        return None;
    }
    let (offset, prev, hash) = (u64_at(b, 4)?, u64_at(b, 12)?, u64_at(b, 20)?);
    let wlen = usize::from(*b.get(28)?);
    let writer = String::from_utf8_lossy(b.get(29..29 + wlen)?).into_owned();
    let event = b.get(29 + wlen..)?.to_vec();
    let damaged = linked_or_damaged(offset, prev, hash, &event)?;
    Some(OneEvent {
        offset,
        prev,
        hash,
        writer,
        event,
        damaged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::codec::encode_event;

    #[test]
    fn an_event_object_with_a_flipped_byte_is_refused_or_read_as_damaged() {
        let e = encode_event(3, &[sequencer::SeqValue::new(1, 1, 5)], b"p");
        let (bytes, hash) = encode_one(3, 9, "w", &e);
        let one = decode_one(&bytes).expect("sound");
        assert_eq!(
            (one.offset, one.prev, one.hash, one.damaged),
            (3, 9, hash, false)
        );
        // In the event's payload: damaged (its checksum fails), its links kept.
        let mut bad = bytes.clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        let one = decode_one(&bad).expect("damaged, linked");
        assert!(one.damaged && one.hash == hash);
        // In the header (the previous hash): corrupt.
        let mut bad = bytes;
        bad[12] ^= 1;
        assert!(decode_one(&bad).is_none());
        // An old event (no checksum) that no longer matches its hash: corrupt.
        let old = crate::store::codec::encode_event_v1(&[sequencer::SeqValue::new(1, 1, 5)], b"p");
        let (mut bytes, _) = encode_one(3, 9, "w", &old);
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        assert!(decode_one(&bytes).is_none());
    }
}
