//! `OwnTail`: an actualization's replay and the numbers read after it are served from what the
//! host appended while it knows where the PLog ended (the append fence refusing its next append
//! if another writer appended meanwhile), and read from the store otherwise; what it keeps is
//! bounded and forgotten on any doubt. The driver's reads are made by hand here, in the order an
//! actualization makes them.

use std::sync::Arc;

use futures::executor::block_on;
use sequencer::{PLogOffset, SeqValue};
use sequencer_host::StorageFuture;
use sequencer_host::store::layers::{OwnTail, TailCounts, TailLimits};
use sequencer_host::store::memory::Faults;
use sequencer_host::{
    AppendError, EventBatch, MemoryStorage, PartitionId, PlogPage, Storage, StorageError,
};

const P: PartitionId = 2;

fn layer(m: &MemoryStorage, limits: TailLimits) -> OwnTail {
    OwnTail::new(Arc::new(m.clone()), Arc::new(m.clone()), limits)
}

/// Events `first..first + n`, event `o` raising (ws 1, seq 1) to `o` and (ws 2, seq 1) to `o`.
fn batch(first: PLogOffset, n: u64) -> EventBatch {
    let mut b = EventBatch::new(first);
    for o in first..first + n {
        b.push(&[SeqValue::new(1, 1, o), SeqValue::new(2, 1, o)], b"p");
    }
    b
}

/// An actualization's reads: the offset, then the PLog to its end in pages of `page` events;
/// returns the stored offset and every page.
fn actualize(s: &dyn Storage, page: usize) -> (PLogOffset, Vec<PlogPage>) {
    let stored = block_on(s.read_next_offset(P)).expect("offset read");
    let mut from = stored.max(1);
    let mut pages = Vec::new();
    loop {
        let p = block_on(s.read_plog(P, from, page)).expect("PLog read");
        from = p.next;
        let end = p.end;
        pages.push(p);
        if end {
            return (stored, pages);
        }
    }
}

/// The same reads straight from the store.
fn from_store(m: &MemoryStorage, page: usize) -> (PLogOffset, Vec<PlogPage>) {
    actualize(m, page)
}

/// Counts since `before`.
fn counts(t: &OwnTail, before: TailCounts) -> TailCounts {
    t.counts().since(&before)
}

/// A layer over an empty store that actualized once (from the store: nothing kept yet).
fn ready(limits: TailLimits) -> (MemoryStorage, OwnTail) {
    let m = MemoryStorage::new();
    let t = layer(&m, limits);
    actualize(&t, 100);
    let c = t.counts();
    assert_eq!((c.proofs_held, c.proofs_failed, c.pages_read), (0, 1, 1));
    (m, t)
}

#[test]
fn a_replay_of_the_hosts_own_appends_is_served_from_memory_as_the_store_would_answer() {
    let (m, t) = ready(TailLimits::default());
    t.append_events(P, &batch(1, 5)).expect("append");
    block_on(t.write(P, vec![SeqValue::new(1, 1, 2)], 2)).expect("flush");
    t.append_events(P, &batch(6, 3)).expect("append");
    let before = t.counts();
    assert_eq!(
        actualize(&t, 3),
        from_store(&m, 3),
        "pages of 3 from offset 2"
    );
    let c = counts(&t, before);
    assert_eq!((c.vouched, c.pages_served, c.events_served), (1, 3, 7));
    assert_eq!(
        (c.proofs_held, c.proofs_failed, c.pages_read),
        (0, 0, 0),
        "nothing read from the store, not even the offsets"
    );
    // Again, with nothing appended since: the same tail.
    let before = t.counts();
    assert_eq!(actualize(&t, 100), from_store(&m, 100));
    assert_eq!(counts(&t, before).pages_served, 1);
}

#[test]
fn a_second_writers_append_after_the_hosts_refuses_the_hosts_next_append_and_the_store_answers_after()
 {
    let (m, t) = ready(TailLimits::default());
    t.append_events(P, &batch(1, 4)).expect("append");
    // Another host appends 5 and 6 to the same PLog, not through this layer.
    m.append_events(P, &batch(5, 2))
        .expect("the other host's append");
    // The actualization is answered from memory: the PLog as this host last saw it, so the
    // sequencer numbers offset 5 next, which the fence refuses: nothing of it lands.
    let before = t.counts();
    let (_, pages) = actualize(&t, 100);
    assert_eq!(pages.last().map(|p| p.next), Some(5), "served from memory");
    assert_eq!(counts(&t, before).vouched, 1);
    assert!(matches!(
        t.append_events(P, &batch(5, 1)),
        Err(AppendError::WrongOffset { expected: 7, .. })
    ));
    // The refusal forgot the tail: the next actualization reads the store.
    let before = t.counts();
    let (_, pages) = actualize(&t, 100);
    assert_eq!(pages, from_store(&m, 100).1, "events 5 and 6 replayed");
    assert_eq!(pages.last().map(|p| p.next), Some(7));
    let c = counts(&t, before);
    assert_eq!(
        (c.vouched, c.proofs_held, c.proofs_failed, c.pages_served),
        (0, 0, 1, 0)
    );
    // That replay was followed: the tail goes on from 7.
    t.append_events(P, &batch(7, 1)).expect("append");
    let before = t.counts();
    assert_eq!(actualize(&t, 100), from_store(&m, 100));
    assert_eq!(counts(&t, before).vouched, 1);
}

#[test]
fn an_append_refused_by_the_fence_forgets_the_tail() {
    let (m, t) = ready(TailLimits::default());
    t.append_events(P, &batch(1, 2)).expect("append");
    m.append_events(P, &batch(3, 1))
        .expect("the other host's append");
    assert!(matches!(
        t.append_events(P, &batch(3, 1)),
        Err(AppendError::WrongOffset { expected: 4, .. })
    ));
    let before = t.counts();
    assert_eq!(actualize(&t, 100), from_store(&m, 100));
    assert_eq!(counts(&t, before).proofs_failed, 1);
}

/// Storage whose appends land but report a failure (the answer was lost).
struct LostAnswers(MemoryStorage);

impl Storage for LostAnswers {
    fn read_numbers(
        &self, p: PartitionId, ws: u64, seqs: &[u16],
    ) -> Result<Vec<u64>, StorageError> {
        self.0.read_numbers(p, ws, seqs)
    }
    fn read_next_offset(&self, p: PartitionId) -> StorageFuture<PLogOffset> {
        self.0.read_next_offset(p)
    }
    fn write(&self, p: PartitionId, values: Vec<SeqValue>, next: PLogOffset) -> StorageFuture<()> {
        self.0.write(p, values, next)
    }
    fn read_plog(&self, p: PartitionId, from: PLogOffset, max: usize) -> StorageFuture<PlogPage> {
        self.0.read_plog(p, from, max)
    }
    fn append_events(&self, p: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.0.append_events(p, batch)?;
        Err(AppendError::Storage(StorageError(
            "the answer was lost".into(),
        )))
    }
}

#[test]
fn an_append_whose_outcome_is_unknown_forgets_the_tail_and_the_numbers() {
    let m = MemoryStorage::new();
    let lossy = OwnTail::new(
        Arc::new(LostAnswers(m.clone())),
        Arc::new(m.clone()),
        TailLimits::default(),
    );
    actualize(&lossy, 100);
    assert_eq!(lossy.read_numbers(P, 1, &[1]), Ok(vec![0]), "read: 0");
    assert!(matches!(
        lossy.append_event(P, 1, &[SeqValue::new(1, 1, 1)], b"x"),
        Err(AppendError::Storage(_))
    ));
    let before = lossy.counts();
    assert_eq!(lossy.read_numbers(P, 1, &[1]), Ok(vec![0]), "the view");
    assert_eq!(counts(&lossy, before).workspaces_served, 0, "not served");
    let (_, pages) = actualize(&lossy, 100);
    assert_eq!(
        pages,
        from_store(&m, 100).1,
        "the event that landed replayed"
    );
    let c = counts(&lossy, before);
    assert_eq!((c.proofs_failed, c.pages_served), (1, 0));

    // An append that failed without landing forgets too.
    let (m, t) = ready(TailLimits::default());
    t.append_events(P, &batch(1, 2)).expect("append");
    m.set_faults(Faults {
        fail_appends: 1,
        ..Faults::default()
    });
    assert!(t.append_events(P, &batch(3, 1)).is_err());
    let before = t.counts();
    actualize(&t, 100);
    assert_eq!(counts(&t, before).proofs_failed, 1);
}

#[test]
fn a_failed_read_or_write_forgets_the_tail() {
    for fault in [
        Faults {
            fail_writes: 1,
            ..Faults::default()
        },
        Faults {
            fail_reads: 1,
            ..Faults::default()
        },
    ] {
        let (m, t) = ready(TailLimits::default());
        t.append_events(P, &batch(1, 3)).expect("append");
        m.set_faults(fault.clone());
        let failed = if fault.fail_writes > 0 {
            block_on(t.write(P, vec![SeqValue::new(1, 1, 3)], 3)).is_err()
        } else {
            block_on(t.read_plog(P, 1, 10)).is_err()
        };
        assert!(failed, "{fault:?}");
        let before = t.counts();
        assert_eq!(actualize(&t, 100), from_store(&m, 100));
        assert_eq!(counts(&t, before).proofs_failed, 1, "{fault:?}");
    }
}

#[test]
fn what_is_kept_is_bounded_and_a_replay_from_before_it_reads_the_store() {
    let (m, t) = ready(TailLimits {
        events: 4,
        ..TailLimits::default()
    });
    t.append_events(P, &batch(1, 10)).expect("append");
    let before = t.counts();
    // Nothing flushed: the replay starts at 1, before the 4 events kept (7 to 10).
    assert_eq!(actualize(&t, 3), from_store(&m, 3));
    let c = counts(&t, before);
    assert_eq!(
        (c.vouched, c.pages_read, c.pages_served),
        (1, 2, 2),
        "1-3 and 4-6 read, 7-9 and 10 served"
    );
    block_on(t.write(P, vec![], 8)).expect("flush");
    let before = t.counts();
    assert_eq!(actualize(&t, 100), from_store(&m, 100));
    assert_eq!(counts(&t, before).pages_read, 0);
}

#[test]
fn numbers_read_after_an_actualization_are_served_from_what_the_host_saw_until_another_writer_shows()
 {
    let (m, t) = ready(TailLimits::default());
    assert_eq!(t.read_numbers_many(P, &[1, 2], &[1]), Ok(vec![0, 0]));
    t.append_events(P, &batch(1, 3)).expect("append");
    let before = t.counts();
    actualize(&t, 100);
    assert_eq!(
        t.read_numbers_many(P, &[2, 3, 1], &[1]),
        Ok(vec![3, 0, 3]),
        "1 and 2 raised by the appends; 3 from the store"
    );
    let c = counts(&t, before);
    assert_eq!((c.workspaces_served, c.workspaces_read), (2, 1));
    assert_eq!(t.read_numbers(P, 3, &[1]), Ok(vec![0]));
    assert_eq!(counts(&t, before).workspaces_served, 3);

    // Another host appends event 4 raising ws 1 to 9 and flushes it. What this host serves
    // is stale until it appends: the fence refuses the append at 4 (so the stale 4 it would
    // give ws 1 never lands), the tail is forgotten, and the view answers from then on.
    m.append_event(P, 4, &[SeqValue::new(1, 1, 9)], b"B")
        .expect("the other host's append");
    block_on(m.write(P, vec![SeqValue::new(1, 1, 9)], 4)).expect("its flush");
    actualize(&t, 100);
    assert_eq!(t.read_numbers(P, 1, &[1]), Ok(vec![3]), "stale, not landed");
    assert!(matches!(
        t.append_event(P, 4, &[SeqValue::new(1, 1, 4)], b"A"),
        Err(AppendError::WrongOffset { expected: 5, .. })
    ));
    let before = t.counts();
    assert_eq!(t.read_numbers(P, 1, &[1]), Ok(vec![9]));
    assert_eq!(counts(&t, before).workspaces_read, 1);
    actualize(&t, 100);
    assert_eq!(t.read_numbers(P, 1, &[1]), Ok(vec![9]));
    assert_eq!(m.plog(P).last().map(|(o, _)| *o), Some(4), "B's event last");
}

#[test]
fn nothing_is_served_before_a_replay_has_been_followed_to_the_plogs_end() {
    let m = MemoryStorage::new();
    m.append_events(P, &batch(1, 5))
        .expect("an earlier run's events");
    let t = layer(&m, TailLimits::default());
    assert_eq!(block_on(t.read_next_offset(P)), Ok(0));
    // Only part of the replay: its end is not known, neither are the numbers.
    block_on(t.read_plog(P, 1, 2)).expect("page");
    assert_eq!(t.read_numbers(P, 1, &[1]), Ok(vec![0]), "the view");
    assert_eq!(t.read_numbers(P, 1, &[1]), Ok(vec![0]));
    assert_eq!(t.counts().workspaces_served, 0);
    let before = t.counts();
    assert_eq!(actualize(&t, 100), from_store(&m, 100));
    assert_eq!(counts(&t, before).proofs_failed, 1);
    let before = t.counts();
    assert_eq!(actualize(&t, 100), from_store(&m, 100));
    assert_eq!(counts(&t, before).vouched, 1, "followed to the end once");
}
