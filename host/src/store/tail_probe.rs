//! The one read of a store that proves a kept tail current ([`TailProbe`]): where the
//! partition's PLog ends, with its stored offset. A capability beside
//! [`Storage`](crate::Storage): each backend that can answer it cheaply implements it in its own
//! folder (etcd: one read-only transaction; memory), and the own-tail layer uses it without
//! knowing which.

use sequencer::PLogOffset;

use crate::store::storage::PartitionId;
use crate::store::storage::StorageFuture;

/// A partition's stored offset and the end of its PLog, read together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offsets {
    /// The stored offset, as [`Storage::read_next_offset`](crate::Storage::read_next_offset)
    /// answers it (0 if none).
    pub stored: PLogOffset,
    /// The PLog's next offset: its last event's offset + 1, 1 if it holds none.
    pub plog_next: PLogOffset,
}

/// A store that can say, in one read, where a partition's PLog ends and what its stored offset
/// is: what the own-tail layer (`layers::OwnTail`) needs to prove that no other writer appended after what
/// it kept.
pub trait TailProbe: Send + Sync + 'static {
    /// The partition's [`Offsets`], read at one instant (or the stored offset first, then the
    /// PLog's end), seeing every write and append that completed before the read began.
    fn read_offsets(&self, partition: PartitionId) -> StorageFuture<Offsets>;

    /// This host's tenure of the partition: a value that differs whenever what this host may
    /// have kept of the partition's PLog can be stale because it did not own the partition in
    /// between (another host may have appended). On a store of many hosts it is the epoch the
    /// host owns the partition at, 0 while it does not; a store with one writer keeps the
    /// default, 0 for ever. The own-tail layer forgets what it kept when it changes, so a
    /// partition acquired again starts from the store as it is.
    fn tenure(&self, _partition: PartitionId) -> u64 {
        0
    }
}
