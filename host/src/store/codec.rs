//! How a PLog event is stored, the same in every backend: its sequence values, then the
//! command processor's payload.
//!
//! Layout: `[version = 1, count: u32 LE, count × (ws u64 LE, seq u16 LE, value u64 LE),
//! payload...]`. A decoder that meets another version or a short buffer says "not an event"
//! rather than guessing.
//!
//! A backend that stores a run of consecutive events as one value (etcd: one key per append)
//! uses a **pack**: `[version = 2, count: u32 LE, count × length u32 LE, the events' encodings
//! one after the other]`. One event stored on its own (version 1) reads as a pack of one.

use sequencer::{PLogOffset, SeqValue};

/// The version byte every encoded event starts with.
const EVENT_VERSION: u8 = 1;
/// Bytes per sequence value.
const VALUE_BYTES: usize = 8 + 2 + 8;

/// Encodes an event's values and payload as every backend stores it.
pub fn encode_event(values: &[SeqValue], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len(values.len(), payload.len()));
    encode_event_into(&mut out, values, payload);
    out
}

/// How many bytes [`encode_event`] makes of `values` values and a payload of `payload` bytes.
pub fn encoded_len(values: usize, payload: usize) -> usize {
    5 + values * VALUE_BYTES + payload
}

/// [`encode_event`] appended to `out` (no allocation when `out` has room).
pub fn encode_event_into(out: &mut Vec<u8>, values: &[SeqValue], payload: &[u8]) {
    out.reserve(encoded_len(values.len(), payload.len()));
    out.push(EVENT_VERSION);
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
/// order; `None` if the bytes are neither a pack nor an event.
pub fn split_pack(bytes: &[u8]) -> Option<Vec<&[u8]>> {
    match bytes.first() {
        Some(&EVENT_VERSION) => decode_event(bytes).map(|_| vec![bytes]),
        Some(&PACK_VERSION) => {
            let n = u32::from_le_bytes(bytes.get(1..5)?.try_into().ok()?) as usize;
            let lengths = bytes.get(5..5 + n.checked_mul(4)?)?;
            let mut at = 5 + lengths.len();
            let mut out = Vec::with_capacity(n);
            for len in lengths.chunks_exact(4) {
                let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
                let event = bytes.get(at..at.checked_add(len)?)?;
                decode_event(event)?;
                out.push(event);
                at += len;
            }
            (at == bytes.len() && n > 0).then_some(out)
        }
        _ => None,
    }
}

/// Decodes an event stored by [`encode_event`]; `None` if the bytes are not one.
pub fn decode_event(bytes: &[u8]) -> Option<(Vec<SeqValue>, &[u8])> {
    let (&version, rest) = bytes.split_first()?;
    if version != EVENT_VERSION {
        return None;
    }
    let count = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let rest = &rest[4..];
    let body = rest.get(..count.checked_mul(VALUE_BYTES)?)?;
    let values = body
        .chunks_exact(VALUE_BYTES)
        .map(|c| {
            let ws = u64::from_le_bytes(c[0..8].try_into().unwrap_or_default());
            let seq = u16::from_le_bytes(c[8..10].try_into().unwrap_or_default());
            let value = u64::from_le_bytes(c[10..18].try_into().unwrap_or_default());
            SeqValue::new(ws, seq, value)
        })
        .collect();
    Some((values, &rest[body.len()..]))
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
}
