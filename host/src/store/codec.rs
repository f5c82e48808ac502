//! How a PLog event is stored, the same in every backend: a checksum, its sequence values, then
//! the command processor's payload.
//!
//! Layout (version 3): `[3, crc u32 LE, count: u32 LE, count × (ws u64 LE, seq u16 LE, value
//! u64 LE), payload...]`, where `crc` is the CRC-32C (Castagnoli, hardware-accelerated by the
//! `crc-fast` crate) of the event's offset (u64 LE) followed by everything after the crc: the
//! count, the values and the payload. An event copied to another offset, or with a flipped bit
//! in its numbers or payload, fails it. Every write encodes version 3; every read verifies it
//! ([`decode_event`] refuses a mismatch, [`StoredEvent::read`] keeps it flagged for `check`).
//!
//! Version 1, `[1, count, values, payload]`, is the same without the checksum: events written
//! before checksums existed, read as before ([`Checksum::Absent`]). A decoder that meets another
//! version or a short buffer says "not an event" rather than guessing.
//!
//! A backend that stores a run of consecutive events as one value (etcd: one key per append)
//! uses a **pack**: `[version = 2, count: u32 LE, count × length u32 LE, the events' encodings
//! one after the other]`. One event stored on its own reads as a pack of one.

use sequencer::{PLogOffset, SeqValue};

/// The version byte of an event without a checksum (written before checksums existed).
const EVENT_V1: u8 = 1;
/// The version byte of an event with its checksum: what every write encodes.
const EVENT_V3: u8 = 3;
/// Bytes per sequence value.
const VALUE_BYTES: usize = 8 + 2 + 8;
/// Bytes before the count of a version-3 event: the version and the crc.
const V3_HEAD: usize = 1 + 4;

/// Whether a stored event's checksum holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Checksum {
    /// It carries a checksum and its offset, numbers and payload match it.
    #[default]
    Verified,
    /// It was written before events carried checksums (version 1): nothing to verify.
    Absent,
    /// It carries a checksum that its offset, numbers or payload do not match: it is damaged,
    /// and never replayed.
    Mismatch,
}

/// Why bytes stored at an offset cannot be used as that event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// The bytes are not an encoded event (an unknown version, or too short).
    #[error("event at offset {0} is not a sound event")]
    Malformed(PLogOffset),
    /// The event carries a checksum that its bytes do not match.
    #[error("event at offset {0} fails its checksum")]
    Checksum(PLogOffset),
}

impl EventError {
    /// The offset of the event.
    pub fn offset(&self) -> PLogOffset {
        match *self {
            Self::Malformed(o) | Self::Checksum(o) => o,
        }
    }
}

/// The CRC-32C of `offset` (8 bytes LE) followed by `rest`.
fn crc(offset: PLogOffset, rest: &[u8]) -> u32 {
    let mut d = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi);
    d.update(&offset.to_le_bytes());
    d.update(rest);
    // CRC-32 results fit 32 bits; the crate returns them widened.
    d.finalize() as u32
}

/// Encodes the event at `offset` (its values and payload) as every backend stores it.
pub fn encode_event(offset: PLogOffset, values: &[SeqValue], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len(values.len(), payload.len()));
    encode_event_into(&mut out, offset, values, payload);
    out
}

/// How many bytes [`encode_event`] makes of `values` values and a payload of `payload` bytes.
pub fn encoded_len(values: usize, payload: usize) -> usize {
    V3_HEAD + 4 + values * VALUE_BYTES + payload
}

/// [`encode_event`] appended to `out` (no allocation when `out` has room).
pub fn encode_event_into(
    out: &mut Vec<u8>, offset: PLogOffset, values: &[SeqValue], payload: &[u8],
) {
    out.reserve(encoded_len(values.len(), payload.len()));
    let start = out.len();
    out.push(EVENT_V3);
    out.extend_from_slice(&[0; 4]);
    push_body(out, values, payload);
    let sum = crc(offset, &out[start + V3_HEAD..]);
    out[start + 1..start + V3_HEAD].copy_from_slice(&sum.to_le_bytes());
}

/// The count, the values and the payload.
fn push_body(out: &mut Vec<u8>, values: &[SeqValue], payload: &[u8]) {
    out.extend_from_slice(
        &u32::try_from(values.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    for v in values {
        out.extend_from_slice(&v.key.ws.to_le_bytes());
        out.extend_from_slice(&v.key.seq.to_le_bytes());
        out.extend_from_slice(&v.value.to_le_bytes());
    }
    out.extend_from_slice(payload);
}

/// An event in the old format (version 1, no checksum), as stores written before checksums
/// hold them. Nothing in this crate writes it any more; it is here for tests and fixtures of
/// such stores.
pub fn encode_event_v1(values: &[SeqValue], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + 4 + values.len() * VALUE_BYTES + payload.len());
    out.push(EVENT_V1);
    push_body(&mut out, values, payload);
    out
}

/// The version byte of a pack of events.
const PACK_VERSION: u8 = 2;

/// Encodes consecutive events (each as [`encode_event`] made it) as one stored value: a single
/// event as itself, several as a pack.
pub fn encode_pack<'a>(events: impl ExactSizeIterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
    let n = events.len();
    if n == 1 {
        return events
            .clone()
            .next()
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
    }
    let body: usize = events.clone().map(<[u8]>::len).sum();
    let mut out = Vec::with_capacity(5 + 4 * n + body);
    out.push(PACK_VERSION);
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
    for e in events.clone() {
        out.extend_from_slice(&u32::try_from(e.len()).unwrap_or(u32::MAX).to_le_bytes());
    }
    for e in events {
        out.extend_from_slice(e);
    }
    out
}

/// The encoded events of a value stored by [`encode_pack`] (one for a plain event), in
/// order; `None` if the bytes are neither a pack nor events. Checksums are not verified here
/// (a pack does not know its events' offsets): decoding each event does that.
pub fn split_pack(bytes: &[u8]) -> Option<Vec<&[u8]>> {
    match bytes.first() {
        Some(&EVENT_V1 | &EVENT_V3) => parse(bytes).map(|_| vec![bytes]),
        Some(&PACK_VERSION) => {
            let n = u32::from_le_bytes(bytes.get(1..5)?.try_into().ok()?) as usize;
            let lengths = bytes.get(5..5 + n.checked_mul(4)?)?;
            let mut at = 5 + lengths.len();
            let mut out = Vec::with_capacity(n);
            for len in lengths.as_chunks::<4>().0 {
                let len = u32::from_le_bytes(*len) as usize;
                let event = bytes.get(at..at.checked_add(len)?)?;
                parse(event)?;
                out.push(event);
                at += len;
            }
            (at == bytes.len() && n > 0).then_some(out)
        }
        _ => None,
    }
}

/// An event's parts: the crc it carries (`None` for version 1), the bytes the crc covers after
/// the offset, the values' bytes and the payload.
struct Parts<'a> {
    crc: Option<u32>,
    covered: &'a [u8],
    values: &'a [u8],
    payload: &'a [u8],
}

fn parse(bytes: &[u8]) -> Option<Parts<'_>> {
    let (crc, covered) = match *bytes.first()? {
        EVENT_V1 => (None, &bytes[1..]),
        EVENT_V3 => (
            Some(u32::from_le_bytes(bytes.get(1..V3_HEAD)?.try_into().ok()?)),
            &bytes[V3_HEAD..],
        ),
        _ => return None,
    };
    let count = u32::from_le_bytes(covered.get(..4)?.try_into().ok()?) as usize;
    let rest = &covered[4..];
    let values = rest.get(..count.checked_mul(VALUE_BYTES)?)?;
    Some(Parts {
        crc,
        covered,
        values,
        payload: &rest[values.len()..],
    })
}

impl Parts<'_> {
    fn checksum(&self, offset: PLogOffset) -> Checksum {
        match self.crc {
            None => Checksum::Absent,
            Some(c) if c == crc(offset, self.covered) => Checksum::Verified,
            Some(_) => Checksum::Mismatch,
        }
    }

    fn values(&self) -> Vec<SeqValue> {
        self.values
            .as_chunks::<VALUE_BYTES>()
            .0
            .iter()
            .map(|c| {
                let ws = u64::from_le_bytes(c[0..8].try_into().unwrap_or_default());
                let seq = u16::from_le_bytes(c[8..10].try_into().unwrap_or_default());
                let value = u64::from_le_bytes(c[10..18].try_into().unwrap_or_default());
                SeqValue::new(ws, seq, value)
            })
            .collect()
    }
}

/// Whether the bytes stored at `offset` are an event and its checksum holds, without decoding
/// its values; `None` if they are not an event.
pub fn event_checksum(offset: PLogOffset, bytes: &[u8]) -> Option<Checksum> {
    parse(bytes).map(|p| p.checksum(offset))
}

/// Decodes the event stored at `offset` by [`encode_event`] (or in the old format), verifying
/// its checksum: its values and payload, or why it cannot be used (never a damaged event's
/// values).
pub fn decode_event(
    offset: PLogOffset, bytes: &[u8],
) -> Result<(Vec<SeqValue>, &[u8]), EventError> {
    let parts = parse(bytes).ok_or(EventError::Malformed(offset))?;
    if parts.checksum(offset) == Checksum::Mismatch {
        return Err(EventError::Checksum(offset));
    }
    Ok((parts.values(), parts.payload))
}

/// One PLog event as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its offset.
    pub offset: PLogOffset,
    /// Its sequence values.
    pub values: Vec<SeqValue>,
    /// Its payload.
    pub payload: Vec<u8>,
    /// Whether its checksum holds; the values and payload of a
    /// [`Mismatch`](Checksum::Mismatch) are what is stored, not to be trusted.
    pub checksum: Checksum,
}

impl StoredEvent {
    /// The event stored at `offset` as `bytes`, for a reader that reports damage rather than
    /// stopping at it (`check`, `inspect`): one that fails its checksum is returned flagged
    /// [`Checksum::Mismatch`]. Refused only if the bytes are not an event.
    pub fn read(offset: PLogOffset, bytes: &[u8]) -> Result<Self, EventError> {
        let parts = parse(bytes).ok_or(EventError::Malformed(offset))?;
        Ok(Self {
            offset,
            values: parts.values(),
            payload: parts.payload.to_vec(),
            checksum: parts.checksum(offset),
        })
    }

    /// The event, unless it fails its checksum.
    pub fn verified(self) -> Result<Self, EventError> {
        match self.checksum {
            Checksum::Mismatch => Err(EventError::Checksum(self.offset)),
            _ => Ok(self),
        }
    }

    /// Whether two reads hold the same event (offset, values and payload), whichever format
    /// each was stored in.
    pub fn same_event(&self, other: &Self) -> bool {
        self.offset == other.offset && self.values == other.values && self.payload == other.payload
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Vec<SeqValue> {
        vec![SeqValue::new(7, 1, 41), SeqValue::new(7, 2, 1_000_003)]
    }

    #[test]
    fn an_event_decodes_to_its_values_and_payload_with_its_checksum_verified() {
        let bytes = encode_event(12, &values(), b"payload");
        assert_eq!(bytes.len(), encoded_len(2, 7));
        assert_eq!(bytes[0], 3);
        let (v, p) = decode_event(12, &bytes).expect("decodes");
        assert_eq!((v, p), (values(), &b"payload"[..]));
        let read = StoredEvent::read(12, &bytes).expect("reads");
        assert_eq!(read.checksum, Checksum::Verified);
        assert_eq!(event_checksum(12, &bytes), Some(Checksum::Verified));
    }

    #[test]
    fn the_checksum_is_crc32c_of_the_offset_then_the_rest() {
        let bytes = encode_event(5, &[], b"123456789");
        let mut covered = 5u64.to_le_bytes().to_vec();
        covered.extend_from_slice(&bytes[5..]);
        let expected = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &covered) as u32;
        assert_eq!(bytes[1..5], expected.to_le_bytes());
        // The crate's CRC-32C is the standard one (its check value).
        assert_eq!(
            crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, b"123456789"),
            0xe306_9283
        );
    }

    #[test]
    fn a_flipped_bit_anywhere_in_an_event_fails_its_checksum_or_its_shape() {
        let bytes = encode_event(9, &values(), b"some payload");
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                match decode_event(9, &bad) {
                    Err(EventError::Checksum(9) | EventError::Malformed(9)) => {}
                    other => panic!("byte {i} bit {bit}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn a_flipped_bit_in_a_payload_or_a_number_is_a_checksum_mismatch() {
        let bytes = encode_event(9, &values(), b"some payload");
        let n = bytes.len();
        // The last payload byte, then the first value's number (after ws and seq).
        for at in [n - 1, 5 + 4 + 8 + 2] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert_eq!(decode_event(9, &bad), Err(EventError::Checksum(9)));
            let read = StoredEvent::read(9, &bad).expect("still an event");
            assert_eq!(read.checksum, Checksum::Mismatch);
            assert_eq!(read.clone().verified(), Err(EventError::Checksum(9)));
        }
    }

    #[test]
    fn an_event_read_at_another_offset_fails_its_checksum() {
        let bytes = encode_event(9, &values(), b"p");
        assert_eq!(decode_event(10, &bytes), Err(EventError::Checksum(10)));
        assert_eq!(event_checksum(10, &bytes), Some(Checksum::Mismatch));
    }

    #[test]
    fn an_old_event_without_a_checksum_reads_as_before() {
        let old = encode_event_v1(&values(), b"old");
        assert_eq!(old[0], 1);
        assert_eq!(old.len(), 1 + 4 + 2 * VALUE_BYTES + 3);
        let (v, p) = decode_event(4, &old).expect("decodes");
        assert_eq!((v, p), (values(), &b"old"[..]));
        let read = StoredEvent::read(4, &old).expect("reads");
        assert_eq!(read.checksum, Checksum::Absent);
        let new = StoredEvent::read(4, &encode_event(4, &values(), b"old")).expect("reads");
        assert!(read.same_event(&new) && read != new);
    }

    #[test]
    fn bytes_that_are_not_an_event_are_refused() {
        assert_eq!(decode_event(1, &[]), Err(EventError::Malformed(1)));
        assert_eq!(
            decode_event(1, &[9, 0, 0, 0, 0]),
            Err(EventError::Malformed(1))
        );
        assert_eq!(
            decode_event(1, &[1, 2, 0, 0, 0, 1]),
            Err(EventError::Malformed(1))
        );
        assert_eq!(decode_event(1, &[3, 0, 0]), Err(EventError::Malformed(1)));
        assert!(StoredEvent::read(1, &[2]).is_err());
    }

    #[test]
    fn a_pack_splits_into_its_events_old_and_new() {
        let a = encode_event(3, &values(), b"a");
        let b = encode_event_v1(&values(), b"b");
        let pack = encode_pack([a.as_slice(), b.as_slice()].into_iter());
        let split = split_pack(&pack).expect("a pack");
        assert_eq!(split, vec![a.as_slice(), b.as_slice()]);
        assert_eq!(split_pack(&a), Some(vec![a.as_slice()]));
        assert_eq!(split_pack(&b), Some(vec![b.as_slice()]));
        assert_eq!(decode_event(3, split[0]).map(|e| e.1), Ok(&b"a"[..]));
        assert_eq!(decode_event(4, split[1]).map(|e| e.1), Ok(&b"b"[..]));
        assert!(split_pack(&pack[..pack.len() - 1]).is_none());
    }
}
