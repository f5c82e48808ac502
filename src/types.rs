//! The numbers a sequencer deals in, and the instant type its driver passes in.

use core::time::Duration;

/// Identifies a sequence within a workspace kind (for example "record id").
pub type SeqId = u16;
/// Identifies a kind of workspace; each kind has its own set of sequences.
pub type WsKind = u16;
/// Identifies a workspace.
pub type WsId = u64;
/// A number handed out by a sequence. `0` never is: every sequence starts at 1 or above.
pub type Number = u64;
/// An offset in the partition log (PLog). Offsets are dense and start at 1.
pub type PLogOffset = u64;

/// The key a number belongs to: one sequence of one workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NumberKey {
    /// The workspace.
    pub ws: WsId,
    /// The sequence within that workspace.
    pub seq: SeqId,
}

/// The last number issued for a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SeqValue {
    /// The key the number belongs to.
    pub key: NumberKey,
    /// The last number issued for `key`.
    pub value: Number,
}

impl SeqValue {
    /// A value for sequence `seq` of workspace `ws`.
    pub const fn new(ws: WsId, seq: SeqId, value: Number) -> Self {
        Self {
            key: NumberKey { ws, seq },
            value,
        }
    }
}

/// A point on the driver's monotonic clock, in nanoseconds from an origin the driver chooses.
///
/// The core never reads a clock: every decision that depends on time takes an `Instant`
/// from its caller, so the same inputs always give the same outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

impl Instant {
    /// The instant `nanos` nanoseconds after the clock's origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Self(nanos)
    }

    /// Nanoseconds since the clock's origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The instant `d` after `self`, saturating at the end of time instead of overflowing.
    pub fn saturating_add(self, d: Duration) -> Self {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Self(self.0.saturating_add(nanos))
    }
}
