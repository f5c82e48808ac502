//! What this store knows of the sequences view's workspace keys: the value and revision each
//! had when this host last wrote or read it, so that a flusher write of known workspaces skips
//! its read.
//!
//! A flusher write merges its numbers into the stored ones and puts them only if no key it
//! touches changed since they were learned (a `mod_revision` compare per key, as before). The
//! compare is what makes the write safe, whether the stored value came from a read just now or
//! from this memory: if another writer changed a key since, or the key is gone, the revision
//! differs, the transaction applies nothing, the write forgets what it knew of its keys and
//! reads them (linearizably) before trying again. Remembering only saves the read, and its
//! round trip, on the workspaces this host wrote or read last, which in a partition this host
//! owns is every workspace after its first write.
//!
//! Bounded: at most [`KNOWN_VIEW_KEYS`] keys; past that, everything is forgotten at once (the
//! next writes read again). Forgotten also on any write whose outcome is unknown.

use std::sync::Mutex;

use hashbrown::HashMap;
use sequencer::WsId;

use crate::store::storage::PartitionId;

/// The most workspace keys remembered (about 100 bytes each with their values: 26 MiB at most).
pub const KNOWN_VIEW_KEYS: usize = 1 << 18;

/// A workspace key's value (the encoded numbers, without rows of the earlier layout) and the
/// revision it was last modified at (0: the key did not exist).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct KnownKey {
    pub(super) revision: i64,
    pub(super) value: Box<[u8]>,
}

/// The view keys this store last wrote or read, per partition and workspace.
#[derive(Default)]
pub(super) struct KnownView(Mutex<HashMap<(PartitionId, WsId), KnownKey>>);

impl KnownView {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(PartitionId, WsId), KnownKey>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What is known of every workspace of `ws` in `partition`, in order; `None` if one of
    /// them is not known (the write then reads them all).
    pub(super) fn all_of(
        &self,
        partition: PartitionId,
        ws: impl Iterator<Item = WsId>,
    ) -> Option<Vec<KnownKey>> {
        let known = self.lock();
        ws.map(|w| known.get(&(partition, w)).cloned()).collect()
    }

    /// Whether each workspace of `ws` in `partition` is known, in order.
    pub(super) fn knows(
        &self,
        partition: PartitionId,
        ws: impl Iterator<Item = WsId>,
    ) -> Vec<bool> {
        let known = self.lock();
        ws.map(|w| known.contains_key(&(partition, w))).collect()
    }

    /// `ws`'s key in `partition` holds `value` since `revision` (a read saw it, or this host's
    /// write put it). What is known of a later revision is kept: a key's revisions only grow,
    /// so a read answered before this host's write landed does not replace what it wrote.
    pub(super) fn learn(&self, partition: PartitionId, ws: WsId, revision: i64, value: &[u8]) {
        let mut known = self.lock();
        match known.get_mut(&(partition, ws)) {
            Some(k) if k.revision > revision => {}
            Some(k) => {
                k.revision = revision;
                k.value = value.into();
            }
            None => {
                if known.len() >= KNOWN_VIEW_KEYS {
                    known.clear();
                }
                known.insert(
                    (partition, ws),
                    KnownKey {
                        revision,
                        value: value.into(),
                    },
                );
            }
        }
    }

    /// Forgets the keys of `ws` in `partition` (a compare failed, or a write's outcome is
    /// unknown).
    pub(super) fn forget(&self, partition: PartitionId, ws: impl Iterator<Item = WsId>) {
        let mut known = self.lock();
        for w in ws {
            known.remove(&(partition, w));
        }
    }

    /// How many keys are remembered.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_known_only_if_every_workspace_is() {
        let k = KnownView::default();
        k.learn(1, 10, 5, b"a");
        k.learn(1, 11, 6, b"b");
        let got = k.all_of(1, [10, 11].into_iter()).expect("both known");
        assert_eq!(got[0].revision, 5);
        assert_eq!(&*got[1].value, b"b");
        assert!(k.all_of(1, [10, 12].into_iter()).is_none());
        assert!(k.all_of(2, [10].into_iter()).is_none(), "another partition");
    }

    #[test]
    fn forgetting_a_key_makes_its_chunk_unknown_and_a_later_revision_replaces_an_earlier() {
        let k = KnownView::default();
        k.learn(1, 10, 5, b"a");
        k.learn(1, 10, 9, b"c");
        k.learn(1, 10, 7, b"b");
        let got = k.all_of(1, [10].into_iter()).unwrap();
        assert_eq!(
            (got[0].revision, &*got[0].value),
            (9, &b"c"[..]),
            "7 came too late"
        );
        k.forget(1, [10].into_iter());
        assert!(k.all_of(1, [10].into_iter()).is_none());
    }

    #[test]
    fn past_the_bound_everything_is_forgotten_at_once() {
        let k = KnownView::default();
        for w in 0..KNOWN_VIEW_KEYS as u64 {
            k.learn(1, w, 1, b"");
        }
        assert_eq!(k.len(), KNOWN_VIEW_KEYS);
        k.learn(1, 0, 2, b"");
        assert_eq!(k.len(), KNOWN_VIEW_KEYS, "a known key is replaced in place");
        k.learn(1, u64::MAX, 1, b"");
        assert_eq!(k.len(), 1);
    }
}
