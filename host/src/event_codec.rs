//! How a PLog event is stored, the same in every backend: its sequence values, then the
//! command processor's payload.
//!
//! Layout: `[version = 1, count: u32 LE, count × (ws u64 LE, seq u16 LE, value u64 LE),
//! payload...]`. A decoder that meets another version or a short buffer says "not an event"
//! rather than guessing.

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
