//! The hash chain that links a partition's events (the objects that carry them are in
//! [`object`](super::object), the bundles in [`bundle`](super::bundle)).
//!
//! Each event's hash covers its offset, the previous event's hash and its bytes (64 bits,
//! [`event_hash`]): a chain that reads, the merger and the start-up scan verify, so a flipped
//! byte, a missing event or an event written after the wrong one is found where it is.
//!
//! An event whose bytes no longer match its hash *and* fail the event's own checksum
//! ([`crate::store::codec`]) is damaged inside, while its links (the hashes kept beside it)
//! still hold: it is read as a damaged event ([`linked_or_damaged`]) so that `check` can name
//! it and go on; a replay refuses it when it decodes it. Any other mismatch is corruption.

use sequencer::PLogOffset;

use crate::store::codec::{Checksum, event_checksum};

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
    let (blocks, rest) = event.as_chunks::<32>();
    for b in blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = step(*lane, word(&b[8 * i..8 * i + 8]));
        }
    }
    let (words, rest) = rest.as_chunks::<8>();
    for (i, w) in words.iter().enumerate() {
        lanes[i] = step(lanes[i], u64::from_le_bytes(*w));
    }
    let mut tail = [0u8; 8];
    tail[..rest.len()].copy_from_slice(rest);
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

/// Whether `event` at `offset`, kept with the hash `hash` after `prev`, matches it (`Some(false)`),
/// is damaged inside while its links hold (`Some(true)`: the hash and the event's own checksum
/// both fail), or is corrupt (`None`). Every object that carries events (event objects of
/// either format, bundles) verifies each of them with this, so the event's checksum is the
/// codec's alone.
pub(super) fn linked_or_damaged(
    offset: PLogOffset, prev: u64, hash: u64, event: &[u8],
) -> Option<bool> {
    let checksum = event_checksum(offset, event);
    if event_hash(offset, prev, event) == hash {
        return checksum.map(|_| false);
    }
    (checksum == Some(Checksum::Mismatch)).then_some(true)
}

/// The little-endian `u64` at `at`, `None` past the end.
pub(super) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The little-endian `u32` at `at`, `None` past the end.
pub(super) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::codec::{encode_event, encode_event_v1};

    #[test]
    fn a_change_in_any_word_or_in_the_links_changes_the_hash() {
        let event: Vec<u8> = (0..77u8).collect();
        let h = event_hash(3, 9, &event);
        assert_ne!(h, event_hash(4, 9, &event));
        assert_ne!(h, event_hash(3, 8, &event));
        for at in 0..event.len() {
            let mut e = event.clone();
            e[at] ^= 1;
            assert_ne!(h, event_hash(3, 9, &e), "byte {at}");
        }
    }

    #[test]
    fn an_event_failing_its_hash_is_damaged_if_it_fails_its_checksum_and_corrupt_otherwise() {
        let e = encode_event(3, &[sequencer::SeqValue::new(1, 1, 5)], b"p");
        let hash = event_hash(3, 9, &e);
        assert_eq!(linked_or_damaged(3, 9, hash, &e), Some(false));
        // In the event's payload: damaged (its checksum fails), its links kept.
        let mut bad = e.clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        assert_eq!(linked_or_damaged(3, 9, hash, &bad), Some(true));
        // A link that does not hold (the previous hash differs): corrupt.
        assert_eq!(linked_or_damaged(3, 8, hash, &e), None);
        // An old event (no checksum) that no longer matches its hash: corrupt.
        let old = encode_event_v1(&[sequencer::SeqValue::new(1, 1, 5)], b"p");
        let hash = event_hash(3, 9, &old);
        let mut bad = old;
        let n = bad.len();
        bad[n - 1] ^= 1;
        assert_eq!(linked_or_damaged(3, 9, hash, &bad), None);
    }
}
