//! The LRU cache of last numbers, bounded by how many numbers it holds.
//!
//! An index of workspace → node over a vector of nodes linked in order of use, so that a
//! transaction can keep where its workspace's numbers sit ([`CacheSlot`]) from `start` to
//! `flush` and raise them there without hashing the workspace again.
//!
//! The node of a workspace with staged events remembers where its staged values are, so staging
//! another event of it needs no lookup; should the workspace be evicted meanwhile, that place
//! is kept by workspace among the *orphans* until the transaction is flushed or dropped.

use hashbrown::{DefaultHashBuilder, HashMap};

use crate::types::{Number, SeqId, WsId};
use crate::ws_numbers::WsNumbers;

/// No node (the end of the list of use).
const NONE: u32 = u32::MAX;

/// Where a workspace's numbers sat when [`NumberCache::get_at`] found them. It stays usable while
/// the workspace stays cached; [`NumberCache::raise_at`] checks that before using it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CacheSlot(u32);

/// One cached workspace, linked to the next more (`newer`) and less (`older`) recently used.
struct Node {
    ws: WsId,
    numbers: WsNumbers,
    live: bool,
    /// Where the workspace's staged values are, plus one; 0 if it has none.
    staged: u32,
    newer: u32,
    older: u32,
}

/// Last numbers by workspace, least recently used workspace evicted first, holding at most
/// `capacity` numbers (or a single workspace's, should one alone exceed it).
pub(crate) struct NumberCache {
    index: HashMap<WsId, u32, DefaultHashBuilder>,
    nodes: Vec<Node>,
    /// Nodes of evicted workspaces, for reuse.
    free: Vec<u32>,
    /// Most recently used.
    newest: u32,
    /// Least recently used: evicted first.
    oldest: u32,
    /// Where the staged values of workspaces evicted while staged are.
    orphans: HashMap<WsId, u32, DefaultHashBuilder>,
    numbers: usize,
    capacity: usize,
}

impl NumberCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            index: HashMap::with_hasher(DefaultHashBuilder::default()),
            nodes: Vec::new(),
            free: Vec::new(),
            newest: NONE,
            oldest: NONE,
            orphans: HashMap::with_hasher(DefaultHashBuilder::default()),
            numbers: 0,
            capacity,
        }
    }

    /// The numbers of `ws` and where they sit, marking `ws` most recently used. `hint`, a slot
    /// `ws` sat in, spares the lookup while it still holds `ws`.
    #[inline]
    pub(crate) fn get_at(
        &mut self, hint: Option<CacheSlot>, ws: WsId,
    ) -> Option<(CacheSlot, &WsNumbers)> {
        let i = self.find(hint, ws)?;
        self.touch(i);
        Some((CacheSlot(i), &self.nodes[i as usize].numbers))
    }

    /// The numbers at `slot`, where [`get_at`](Self::get_at) just found a workspace's, leaving
    /// the order of use alone.
    #[inline]
    pub(crate) fn numbers_at(&self, slot: CacheSlot) -> Option<&WsNumbers> {
        self.nodes.get(slot.0 as usize).map(|n| &n.numbers)
    }

    /// The numbers of `ws`, leaving the order of use alone.
    #[cfg(test)]
    pub(crate) fn peek(&self, ws: WsId) -> Option<&WsNumbers> {
        self.peek_slot(ws).map(|(_, numbers)| numbers)
    }

    /// [`peek`](Self::peek), with where the numbers sit.
    #[inline]
    pub(crate) fn peek_slot(&self, ws: WsId) -> Option<(CacheSlot, &WsNumbers)> {
        self.index
            .get(&ws)
            .map(|&i| (CacheSlot(i), &self.nodes[i as usize].numbers))
    }

    /// The node of `ws`: at `slot` while that still holds `ws` (no lookup), else looked up.
    #[inline]
    fn find(&self, slot: Option<CacheSlot>, ws: WsId) -> Option<u32> {
        match slot {
            Some(CacheSlot(i)) if self.holds(i, ws) => Some(i),
            _ => self.index.get(&ws).copied(),
        }
    }

    /// True if node `i` holds `ws` now.
    #[inline]
    fn holds(&self, i: u32, ws: WsId) -> bool {
        self.nodes
            .get(i as usize)
            .is_some_and(|n| n.live && n.ws == ws)
    }

    /// Raises the numbers of `ws` to at least `values`, marking it most recently used, then
    /// evicts other workspaces while over capacity. Returns where the numbers sit.
    pub(crate) fn raise(
        &mut self, ws: WsId, values: impl Iterator<Item = (SeqId, Number)>,
    ) -> CacheSlot {
        self.raise_at(None, ws, values)
    }

    /// [`raise`](Self::raise); `slot`, where `ws` sat when found by [`get_at`](Self::get_at),
    /// spares the lookup while it still holds `ws` (as it does unless `ws` was evicted since).
    #[inline]
    pub(crate) fn raise_at(
        &mut self, slot: Option<CacheSlot>, ws: WsId, values: impl Iterator<Item = (SeqId, Number)>,
    ) -> CacheSlot {
        let i = match self.find(slot, ws) {
            Some(i) => i,
            None => self.insert(ws),
        };
        self.raise_node(i, values);
        CacheSlot(i)
    }

    /// Where the staged values of `ws`, whose node is at `slot`, are, if it has any.
    #[inline]
    pub(crate) fn staged_at(&mut self, slot: CacheSlot, ws: WsId) -> Option<u32> {
        let i = slot.0;
        if !self.holds(i, ws) {
            return None;
        }
        match self.nodes[i as usize].staged {
            0 if self.orphans.is_empty() => None,
            // Cached again since its eviction: its node may lack staged numbers the orphan
            // holds, so the orphan stays (lookups fall back to it) until the flush.
            0 => {
                let staged = *self.orphans.get(&ws)?;
                self.nodes[i as usize].staged = staged + 1;
                Some(staged)
            }
            marked => Some(marked - 1),
        }
    }

    /// Notes on the node of `ws` at `slot` that its staged values are at `staged`.
    pub(crate) fn mark_staged(&mut self, slot: CacheSlot, ws: WsId, staged: u32) {
        if self.holds(slot.0, ws) {
            self.nodes[slot.0 as usize].staged = staged + 1;
        }
    }

    /// Where the staged values of `ws` are if it was evicted while staged (a workspace
    /// cached has its staged numbers in the cache).
    #[inline]
    pub(crate) fn orphan(&self, ws: WsId) -> Option<u32> {
        if self.orphans.is_empty() {
            return None;
        }
        self.orphan_of(ws)
    }

    /// [`orphan`](Self::orphan) with orphans held (out of line: rarely any are).
    #[cold]
    #[inline(never)]
    fn orphan_of(&self, ws: WsId) -> Option<u32> {
        self.orphans.get(&ws).copied()
    }

    /// The staged values of `ws`, staged from its node at `slot`, are flushed: forgets where
    /// they were (looking `ws` up if it was evicted and cached again since).
    pub(crate) fn unmark_staged(&mut self, slot: CacheSlot, ws: WsId) {
        if let Some(i) = self.find(Some(slot), ws) {
            self.nodes[i as usize].staged = 0;
        }
    }

    /// Forgets the orphans (after every staged workspace was unmarked).
    pub(crate) fn clear_orphans(&mut self) {
        self.orphans.clear();
    }

    /// Forgets everything.
    pub(crate) fn clear(&mut self) {
        self.index.clear();
        self.orphans.clear();
        self.nodes.clear();
        self.free.clear();
        self.newest = NONE;
        self.oldest = NONE;
        self.numbers = 0;
    }

    /// How many numbers are held.
    pub(crate) fn numbers(&self) -> usize {
        self.numbers
    }

    fn raise_node(&mut self, i: u32, values: impl Iterator<Item = (SeqId, Number)>) {
        self.touch(i);
        self.numbers += self.nodes[i as usize].numbers.raise_all(values);
        while self.numbers > self.capacity && self.index.len() > 1 {
            self.evict_oldest();
        }
    }

    /// A node for `ws` (not cached), most recently used, with no numbers.
    fn insert(&mut self, ws: WsId) -> u32 {
        let node = Node {
            ws,
            numbers: WsNumbers::default(),
            live: true,
            staged: 0,
            newer: NONE,
            older: NONE,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                // More nodes than `u32::MAX` would need more numbers than memory holds.
                (self.nodes.len() - 1) as u32
            }
        };
        self.link_newest(i);
        self.index.insert(ws, i);
        i
    }

    /// Marks node `i` most recently used.
    #[inline]
    fn touch(&mut self, i: u32) {
        if self.newest != i {
            self.unlink(i);
            self.link_newest(i);
        }
    }

    fn link_newest(&mut self, i: u32) {
        let old_newest = self.newest;
        {
            let n = &mut self.nodes[i as usize];
            n.newer = NONE;
            n.older = old_newest;
        }
        if old_newest == NONE {
            self.oldest = i;
        } else {
            self.nodes[old_newest as usize].newer = i;
        }
        self.newest = i;
    }

    fn unlink(&mut self, i: u32) {
        let (newer, older) = {
            let n = &self.nodes[i as usize];
            (n.newer, n.older)
        };
        if newer == NONE {
            self.newest = older;
        } else {
            self.nodes[newer as usize].older = older;
        }
        if older == NONE {
            self.oldest = newer;
        } else {
            self.nodes[older as usize].newer = newer;
        }
    }

    /// Evicts the least recently used workspace (keeping where its staged values are).
    fn evict_oldest(&mut self) {
        let i = self.oldest;
        if i == NONE {
            return;
        }
        self.unlink(i);
        let node = &mut self.nodes[i as usize];
        node.live = false;
        let evicted = core::mem::take(&mut node.numbers);
        self.numbers -= evicted.len();
        self.index.remove(&node.ws);
        if node.staged > 0 {
            self.orphans.insert(node.ws, node.staged - 1);
            node.staged = 0;
        }
        self.free.push(i);
    }
}

#[cfg(test)]
mod tests {
    use super::NumberCache;

    fn seqs(n: u16) -> impl Iterator<Item = (u16, u64)> {
        (1..=n).map(|s| (s, u64::from(s)))
    }

    #[test]
    fn least_recently_used_workspace_is_evicted_first() {
        let mut c = NumberCache::new(6);
        c.raise(1, seqs(2));
        c.raise(2, seqs(2));
        c.raise(3, seqs(2));
        assert!(
            c.get_at(None, 1).is_some(),
            "1 becomes the most recently used"
        );
        c.raise(4, seqs(2));
        assert!(c.peek(2).is_none(), "2 was the least recently used");
        assert!(c.peek(1).is_some() && c.peek(3).is_some() && c.peek(4).is_some());
        assert_eq!(c.numbers(), 6);
    }

    #[test]
    fn a_slot_is_used_only_while_its_workspace_is_still_there() {
        let mut c = NumberCache::new(4);
        c.raise(1, seqs(2));
        let (slot, _) = c.get_at(None, 1).expect("cached");
        c.raise_at(Some(slot), 1, [(1, 10)].into_iter());
        assert_eq!(c.peek(1).and_then(|n| n.get(1)), Some(10));
        // Evict 1, then let workspace 5 take its node.
        c.raise(2, seqs(2));
        c.raise(3, seqs(2));
        c.raise(5, seqs(2));
        assert!(c.peek(1).is_none());
        c.raise_at(Some(slot), 1, [(1, 11)].into_iter());
        assert_eq!(c.peek(1).and_then(|n| n.get(1)), Some(11));
        assert_eq!(c.peek(1).and_then(|n| n.get(2)), None, "a fresh entry");
        assert_eq!(
            c.peek(5).map(|n| n.iter().collect::<Vec<_>>()),
            Some(vec![(1, 1), (2, 2)]),
            "the node's new workspace is left alone"
        );
        let held: usize = [1, 2, 3, 5]
            .iter()
            .filter_map(|&w| c.peek(w))
            .map(|n| n.len())
            .sum();
        assert_eq!(held, c.numbers());
    }

    #[test]
    fn a_workspace_evicted_while_staged_keeps_its_staged_place_until_the_flush() {
        let mut c = NumberCache::new(2);
        let slot = c.raise(1, seqs(2));
        assert_eq!(c.staged_at(slot, 1), None);
        c.mark_staged(slot, 1, 7);
        assert_eq!(c.staged_at(slot, 1), Some(7));
        c.raise(2, seqs(2));
        assert!(c.peek(1).is_none(), "evicted");
        assert_eq!(c.orphan(1), Some(7));
        let again = c.raise(1, seqs(1));
        assert_eq!(c.staged_at(again, 1), Some(7), "found among the orphans");
        assert_eq!(
            c.orphan(1),
            Some(7),
            "kept until the flush: the new node may lack staged numbers"
        );
        c.unmark_staged(slot, 1);
        c.clear_orphans();
        assert_eq!(c.staged_at(again, 1), None);
        assert_eq!(c.orphan(1), None);
    }

    #[test]
    fn one_workspace_alone_may_exceed_the_capacity() {
        let mut c = NumberCache::new(2);
        c.raise(1, seqs(5));
        assert_eq!(c.numbers(), 5);
        c.raise(2, seqs(1));
        assert!(c.peek(1).is_none());
        assert_eq!(c.numbers(), 1);
    }

    #[test]
    fn clear_forgets_everything_and_the_cache_is_usable_after() {
        let mut c = NumberCache::new(10);
        c.raise(1, seqs(3));
        let (slot, _) = c.get_at(None, 1).expect("cached");
        c.clear();
        assert_eq!(c.numbers(), 0);
        c.raise_at(Some(slot), 1, seqs(1));
        assert_eq!(c.numbers(), 1);
        assert_eq!(c.peek(1).and_then(|n| n.get(1)), Some(1));
    }
}
