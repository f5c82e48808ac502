//! Values waiting to reach storage: those of staged events (not yet in the PLog, so not yet
//! writable), those not yet handed out, and the batch being written.

use core::hash::BuildHasher;

use hashbrown::hash_table::Entry;
use hashbrown::{DefaultHashBuilder, HashTable};

use crate::cache::CacheSlot;
use crate::types::{Number, PLogOffset, SeqId, SeqValue, WsId};
use crate::work::Ticket;
use crate::ws_numbers::WsNumbers;

/// The numbers of `ws` (hash `hash`) in `by_ws`, recorded empty if absent: one probe either
/// way (inlined: a flush would otherwise spend a call on it).
#[inline(always)]
fn entry<'a>(
    by_ws: &'a mut HashTable<(WsId, WsNumbers)>, hasher: &DefaultHashBuilder, hash: u64, ws: WsId,
) -> &'a mut WsNumbers {
    match by_ws.entry(hash, |e| e.0 == ws, |e| hasher.hash_one(e.0)) {
        Entry::Occupied(o) => &mut o.into_mut().1,
        Entry::Vacant(v) => &mut v.insert((ws, WsNumbers::default())).into_mut().1,
    }
}

/// A key new among the waiting values `nums` of workspace `ws` (hash `hash`), recorded at `at`: raised to the number the write in flight (`flying`,
/// its numbers of `ws` looked up once into `memo`) carries for it, if any; true if it carries
/// one (the key is then both waiting and in flight). Out of line: a transaction's keys are new
/// once per write (a replay's more often, but its work per key is larger).
#[inline(never)]
fn raise_to_flying<'a>(
    nums: &mut WsNumbers, flying: Option<&'a ValueSet>, memo: &mut Option<Option<&'a WsNumbers>>,
    (hash, ws): (u64, WsId), at: usize, seq: SeqId,
) -> bool {
    let of_ws = *memo.get_or_insert_with(|| flying.and_then(|f| f.find(hash, ws)));
    // The write in flight recorded the keys in the same order, most likely at the same place.
    match of_ws.and_then(|f| f.get_at(at, seq)) {
        Some(written) => {
            let mut c = at;
            nums.raise_next(&mut c, seq, written);
            true
        }
        None => false,
    }
}

/// Values by workspace with a running count of values. The sets of one [`Unflushed`] hash with
/// its one hasher, so a workspace's hash, computed once, finds it in any of them.
struct ValueSet {
    by_ws: HashTable<(WsId, WsNumbers)>,
    count: usize,
}

impl ValueSet {
    fn new() -> Self {
        Self {
            by_ws: HashTable::new(),
            count: 0,
        }
    }

    /// The numbers of `ws`, whose hash is `hash`.
    #[inline]
    fn find(&self, hash: u64, ws: WsId) -> Option<&WsNumbers> {
        self.by_ws.find(hash, |e| e.0 == ws).map(|e| &e.1)
    }

    /// Raises several values of one workspace with one lookup.
    #[inline]
    fn raise_ws(
        &mut self, hasher: &DefaultHashBuilder, ws: WsId,
        values: impl Iterator<Item = (SeqId, Number)>,
    ) {
        let nums = entry(&mut self.by_ws, hasher, hasher.hash_one(ws), ws);
        self.count += nums.raise_all(values);
    }

    /// Forgets every value, keeping the table's memory for reuse.
    fn clear(&mut self) {
        self.by_ws.clear();
        self.count = 0;
    }

    fn to_values(&self) -> Vec<SeqValue> {
        let mut out = Vec::with_capacity(self.count);
        for (ws, nums) in &self.by_ws {
            out.extend(nums.iter().map(|(seq, v)| SeqValue::new(*ws, seq, v)));
        }
        out
    }
}

/// The values of staged events: one entry per workspace, found through the workspace's cache
/// node (`NumberCache::staged_at`), so staging needs no lookup of its own. The cache holds
/// these numbers too; they are looked up here only for a workspace evicted while staged.
#[derive(Default)]
struct Staged {
    entries: Vec<(WsId, CacheSlot, WsNumbers)>,
    /// Distinct keys staged.
    count: usize,
}

impl Staged {
    fn raise(&mut self, at: usize, values: impl Iterator<Item = (SeqId, Number)>) {
        if let Some((_, _, nums)) = self.entries.get_mut(at) {
            self.count += nums.raise_all(values);
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.count = 0;
    }
}

/// A batch handed to the driver and not yet reported.
struct InFlight {
    ticket: Ticket,
    values: ValueSet,
    offset: PLogOffset,
}

/// One workspace's unwritten numbers ([`Unflushed::of_ws`]).
pub(crate) struct UnwrittenWs<'a> {
    waiting: Option<&'a WsNumbers>,
    in_flight: Option<&'a WsNumbers>,
}

impl UnwrittenWs<'_> {
    /// The newest unwritten number of sequence `seq` of the workspace, if one is held: the one
    /// waiting, else the one being written.
    #[inline]
    pub(crate) fn get(&self, seq: SeqId) -> Option<Number> {
        self.waiting
            .and_then(|n| n.get(seq))
            .or_else(|| self.in_flight.and_then(|n| n.get(seq)))
    }
}

/// The flusher's memory: values and the next PLog offset waiting to be written, and at most one
/// batch being written. Values leave memory only when their write is reported done. Values of
/// staged events wait apart until their transaction is flushed, so no write carries them early.
pub(crate) struct Unflushed {
    /// The hasher of every set below (they trade places: waiting becomes in flight, in flight
    /// becomes spare, spare becomes waiting), so one hash of a workspace serves them all.
    hasher: DefaultHashBuilder,
    staged: Staged,
    /// The offset of the last staged event, if any event is staged.
    staged_offset: Option<PLogOffset>,
    waiting: ValueSet,
    waiting_offset: Option<PLogOffset>,
    in_flight: Option<InFlight>,
    /// Keys both waiting and in flight: they count once in [`Unflushed::count`].
    overlap: usize,
    /// An empty set with the memory of the last batch written, to wait in next (so a write
    /// cycle allocates no map).
    spare: ValueSet,
}

impl Default for Unflushed {
    fn default() -> Self {
        let hasher = DefaultHashBuilder::default();
        Self {
            staged: Staged::default(),
            staged_offset: None,
            waiting: ValueSet::new(),
            waiting_offset: None,
            in_flight: None,
            overlap: 0,
            spare: ValueSet::new(),
            hasher,
        }
    }
}

impl Unflushed {
    /// The unwritten numbers of `ws`, looked up once (in both sets, hashed once) for all its
    /// keys: read each with [`UnwrittenWs::get`].
    #[inline]
    pub(crate) fn of_ws(&self, ws: WsId) -> UnwrittenWs<'_> {
        let hash = self.hasher.hash_one(ws);
        UnwrittenWs {
            waiting: self.waiting.find(hash, ws),
            in_flight: self
                .in_flight
                .as_ref()
                .and_then(|f| f.values.find(hash, ws)),
        }
    }

    /// Raises the waiting values of the keys of `ws` in `values` (one lookup for them all).
    ///
    /// A key that starts waiting again while the write in flight carries it starts from that
    /// write's number: what waits is never below what is being written (so a replay's maximum
    /// per key holds across the PLog pages a write fell between), and the key counts once.
    ///
    /// `ws` is hashed once, for both maps (they share a hasher).
    #[inline]
    pub(crate) fn raise_ws(&mut self, ws: WsId, values: impl Iterator<Item = (SeqId, Number)>) {
        let hash = self.hasher.hash_one(ws);
        let nums = entry(&mut self.waiting.by_ws, &self.hasher, hash, ws);
        // The write in flight's numbers of `ws`, looked up only once a key is new.
        let mut in_flight: Option<Option<&WsNumbers>> = None;
        let mut cursor = 0;
        for (seq, value) in values {
            if nums.raise_next(&mut cursor, seq, value) {
                self.waiting.count += 1;
                // `seq` was just recorded at `cursor - 1`.
                let flying = self.in_flight.as_ref().map(|f| &f.values);
                self.overlap += usize::from(raise_to_flying(
                    nums,
                    flying,
                    &mut in_flight,
                    (hash, ws),
                    cursor - 1,
                    seq,
                ));
            }
        }
    }

    /// Keeps the values of a staged event of `ws` (whose cache node is at `slot`, not yet
    /// staged) at `offset` apart until [`Unflushed::commit_staged`], which raises the offset to
    /// write as `raise_offset` would. Returns where they are kept, for the node to remember.
    pub(crate) fn stage_new(
        &mut self, ws: WsId, slot: CacheSlot, values: impl Iterator<Item = (SeqId, Number)>,
        offset: PLogOffset,
    ) -> u32 {
        let at = self.staged.entries.len();
        self.staged.entries.push((ws, slot, WsNumbers::default()));
        self.staged.raise(at, values);
        self.raise_staged_offset(offset);
        // Fewer entries than keys held, which `max_unflushed_values` bounds far below 2^32.
        at as u32
    }

    /// True if the staged values of `ws` are kept at `staged`.
    #[inline]
    pub(crate) fn is_staged_at(&self, staged: u32, ws: WsId) -> bool {
        self.staged
            .entries
            .get(staged as usize)
            .is_some_and(|(w, _, _)| *w == ws)
    }

    /// [`stage_new`](Self::stage_new) for a workspace already staged, its values kept at
    /// `staged` (see [`is_staged_at`](Self::is_staged_at)).
    pub(crate) fn stage_at(
        &mut self, staged: u32, values: impl Iterator<Item = (SeqId, Number)>, offset: PLogOffset,
    ) {
        self.staged.raise(staged as usize, values);
        self.raise_staged_offset(offset);
    }

    fn raise_staged_offset(&mut self, offset: PLogOffset) {
        self.staged_offset = Some(self.staged_offset.map_or(offset, |o| o.max(offset)));
    }

    /// True if events are staged.
    #[inline]
    pub(crate) fn has_staged(&self) -> bool {
        self.staged_offset.is_some()
    }

    /// Values of staged events.
    #[inline]
    pub(crate) fn staged_count(&self) -> usize {
        self.staged.count
    }

    /// The staged value of `seq` kept at `staged` (see [`stage_new`](Self::stage_new)).
    #[inline]
    pub(crate) fn staged_get(&self, staged: u32, seq: SeqId) -> Option<Number> {
        self.staged
            .entries
            .get(staged as usize)
            .and_then(|(_, _, nums)| nums.get(seq))
    }

    /// The staged events are in the PLog: their values and offset wait to be written. Calls
    /// `forget` with each workspace staged and the cache slot it was staged from.
    pub(crate) fn commit_staged(&mut self, mut forget: impl FnMut(WsId, CacheSlot)) {
        let Some(offset) = self.staged_offset.take() else {
            return;
        };
        let entries = core::mem::take(&mut self.staged.entries);
        for (ws, slot, nums) in &entries {
            self.raise_ws(*ws, nums.iter());
            forget(*ws, *slot);
        }
        self.staged.entries = entries;
        self.staged.clear();
        self.raise_offset(offset);
    }

    /// Raises the offset the next write will store.
    #[inline]
    pub(crate) fn raise_offset(&mut self, offset: PLogOffset) {
        self.waiting_offset = Some(self.waiting_offset.map_or(offset, |o| o.max(offset)));
    }

    /// Keys held in memory, waiting or being written (a key both waiting and being written
    /// counts once).
    #[inline]
    pub(crate) fn count(&self) -> usize {
        self.waiting.count + self.in_flight.as_ref().map_or(0, |f| f.values.count) - self.overlap
    }

    /// True if a write would store something new.
    pub(crate) fn has_waiting(&self) -> bool {
        self.waiting.count > 0 || self.waiting_offset.is_some()
    }

    /// True if a batch is being written.
    pub(crate) fn in_flight(&self) -> Option<Ticket> {
        self.in_flight.as_ref().map(|f| f.ticket)
    }

    /// The offset the batch being written stores, if one is.
    pub(crate) fn in_flight_offset(&self) -> Option<PLogOffset> {
        self.in_flight.as_ref().map(|f| f.offset)
    }

    /// Moves everything waiting into a batch under `ticket`, returning its values and offset.
    /// `fallback_offset` is written when nothing raised the offset since the last write.
    pub(crate) fn begin_write(
        &mut self, ticket: Ticket, fallback_offset: PLogOffset,
    ) -> (Vec<SeqValue>, PLogOffset) {
        debug_assert!(self.in_flight.is_none());
        let empty = ValueSet::new();
        let spare = core::mem::replace(&mut self.spare, empty);
        let values = core::mem::replace(&mut self.waiting, spare);
        let offset = self.waiting_offset.take().unwrap_or(fallback_offset);
        let list = values.to_values();
        self.overlap = 0;
        self.in_flight = Some(InFlight {
            ticket,
            values,
            offset,
        });
        (list, offset)
    }

    /// The batch under `ticket` reached storage: forget it.
    pub(crate) fn write_done(&mut self) -> Option<PLogOffset> {
        let mut f = self.in_flight.take()?;
        self.overlap = 0;
        f.values.clear();
        self.spare = f.values;
        Some(f.offset)
    }

    /// The batch in flight waits again: its values and offset, merged with newer ones by
    /// maximum (it failed, or it landed where a later write could otherwise lower it).
    /// Returns its offset.
    pub(crate) fn requeue_in_flight(&mut self) -> Option<PLogOffset> {
        let f = self.in_flight.take()?;
        self.overlap = 0;
        for (ws, nums) in f.values.by_ws {
            self.waiting.raise_ws(&self.hasher, ws, nums.iter());
        }
        self.raise_offset(f.offset);
        Some(f.offset)
    }

    /// Forgets what waits and what is staged (the batch being written, if any, stays until it
    /// is reported).
    pub(crate) fn clear_waiting(&mut self) {
        self.staged.clear();
        self.staged_offset = None;
        self.waiting = ValueSet::new();
        self.waiting_offset = None;
        self.overlap = 0;
    }

    /// Forgets everything, the batch being written included.
    pub(crate) fn clear_all(&mut self) {
        self.clear_waiting();
        self.in_flight = None;
        self.spare = ValueSet::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(u: &Unflushed, ws: WsId, seq: SeqId) -> Option<Number> {
        u.of_ws(ws).waiting.and_then(|n| n.get(seq))
    }

    #[test]
    fn a_key_new_since_the_write_began_waits_from_the_number_in_flight_and_counts_once() {
        let mut u = Unflushed::default();
        u.raise_ws(7, [(1, 5), (2, 9)].into_iter());
        let (values, _) = u.begin_write(Ticket(0), 0);
        assert_eq!(values.len(), 2);
        u.raise_ws(7, [(1, 6)].into_iter());
        assert_eq!(waiting(&u, 7, 1), Some(6));
        // Key 2 is new among the waiting values and the write in flight carries 9 for it, so
        // it waits at 9, not 4, and counts once.
        u.raise_ws(7, [(2, 4)].into_iter());
        assert_eq!(waiting(&u, 7, 2), Some(9));
        assert_eq!(u.count(), 2);
        // Another workspace is not raised by 7's write.
        u.raise_ws(8, [(2, 4)].into_iter());
        assert_eq!(waiting(&u, 8, 2), Some(4));
        assert_eq!(u.count(), 3);
    }
}
