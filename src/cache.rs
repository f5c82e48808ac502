//! The LRU cache of last numbers, bounded by how many numbers it holds.

use hashbrown::DefaultHashBuilder;
use lru::LruCache;

use crate::types::{Number, SeqId, WsId};
use crate::ws_numbers::WsNumbers;

/// Last numbers by workspace, least recently used workspace evicted first, holding at most
/// `capacity` numbers (or a single workspace's, should one alone exceed it).
pub(crate) struct NumberCache {
    lru: LruCache<WsId, WsNumbers, DefaultHashBuilder>,
    numbers: usize,
    capacity: usize,
}

impl NumberCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            lru: LruCache::unbounded_with_hasher(DefaultHashBuilder::default()),
            numbers: 0,
            capacity,
        }
    }

    /// The numbers of `ws`, marking it most recently used.
    #[inline]
    pub(crate) fn get(&mut self, ws: WsId) -> Option<&WsNumbers> {
        self.lru.get(&ws)
    }

    /// The numbers of `ws`, leaving the order of use alone.
    #[inline]
    pub(crate) fn peek(&self, ws: WsId) -> Option<&WsNumbers> {
        self.lru.peek(&ws)
    }

    /// Raises the numbers of `ws` to at least `values`, marking it most recently used, then
    /// evicts other workspaces while over capacity.
    pub(crate) fn raise(&mut self, ws: WsId, values: impl Iterator<Item = (SeqId, Number)>) {
        let entry = self.lru.get_or_insert_mut(ws, WsNumbers::default);
        for (seq, value) in values {
            if entry.raise(seq, value) {
                self.numbers += 1;
            }
        }
        while self.numbers > self.capacity && self.lru.len() > 1 {
            if let Some((_, evicted)) = self.lru.pop_lru() {
                self.numbers -= evicted.len();
            }
        }
    }

    /// Forgets everything.
    pub(crate) fn clear(&mut self) {
        self.lru.clear();
        self.numbers = 0;
    }

    /// How many numbers are held.
    pub(crate) fn numbers(&self) -> usize {
        self.numbers
    }
}
