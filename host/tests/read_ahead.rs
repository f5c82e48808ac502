//! `ReadAhead`: numbers read for a batch in one go serve the guest's next read of each
//! workspace, and nothing kept is ever staler than a read at the `start` itself: writes raise
//! or drop it, an actualization drops all of it.

use std::sync::{Arc, Mutex};

use futures::executor::block_on;
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};
use sequencer_host::StorageFuture;
use sequencer_host::store::layers::ReadAhead;
use sequencer_host::store::memory::Faults;
use sequencer_host::{
    AppendError, EventBatch, MemoryStorage, PartitionId, PlogPage, Storage, StorageError,
};

const P: PartitionId = 3;
const SEQS: [SeqId; 2] = [1, 2];

/// Storage whose view holds (ws, 1) = 10 × ws and (ws, 2) = 100 × ws for ws 1..=4.
fn seeded() -> MemoryStorage {
    let m = MemoryStorage::new();
    let values = (1..=4u64)
        .flat_map(|ws| {
            [
                SeqValue::new(ws, 1, 10 * ws),
                SeqValue::new(ws, 2, 100 * ws),
            ]
        })
        .collect();
    block_on(m.write(P, values, 1)).expect("seed the view");
    m
}

/// (guest reads answered from what was read ahead, guest reads sent to storage)
fn served_missed(r: &ReadAhead) -> (u64, u64) {
    let c = r.counts();
    (c.served, c.missed)
}

/// Changes the view behind the read-ahead's back (as another writer would).
fn store_directly(m: &MemoryStorage, ws: WsId, seq: SeqId, value: Number) {
    block_on(m.write(P, vec![SeqValue::new(ws, seq, value)], 1)).expect("write");
}

#[test]
fn numbers_read_ahead_are_served_once_then_read_from_storage() {
    let m = seeded();
    let r = ReadAhead::new(Arc::new(m.clone()));
    assert_eq!(
        r.read_ahead(P, &[2, 1, 2], &SEQS),
        Ok(2),
        "distinct workspaces"
    );
    store_directly(&m, 1, 1, 77);
    assert_eq!(
        r.read_numbers(P, 1, &[2, 1]),
        Ok(vec![100, 10]),
        "served as read"
    );
    assert_eq!(
        r.read_numbers(P, 1, &[1]),
        Ok(vec![77]),
        "then from storage"
    );
    assert_eq!(
        r.read_numbers(P, 2, &[1]),
        Ok(vec![20]),
        "a subset of the sequences kept"
    );
    assert_eq!(r.read_numbers(P, 4, &[1]), Ok(vec![40]), "not read ahead");
    assert_eq!(served_missed(&r), (2, 2));
    let c = r.counts();
    assert_eq!(
        (c.storage_reads, c.workspaces_read),
        (3, 4),
        "one read ahead of 2 workspaces, then 2 reads of one"
    );
    // Partitions are apart.
    assert_eq!(r.read_ahead(P + 1, &[1], &SEQS), Ok(1));
    assert_eq!(r.read_numbers(P, 1, &[1]), Ok(vec![77]));
    assert_eq!(served_missed(&r), (2, 3));
}

#[test]
fn a_successful_write_raises_what_is_kept_and_a_failed_one_drops_it() {
    let m = seeded();
    let r = ReadAhead::new(Arc::new(m.clone()));
    r.read_ahead(P, &[1, 2, 3], &SEQS).expect("read ahead");
    block_on(r.write(
        P,
        vec![SeqValue::new(1, 2, 150), SeqValue::new(3, 1, 31)],
        5,
    ))
    .expect("write");
    assert_eq!(
        r.read_numbers(P, 1, &SEQS),
        Ok(vec![10, 150]),
        "raised to the write"
    );
    assert_eq!(r.read_numbers(P, 3, &SEQS), Ok(vec![31, 300]));
    assert_eq!(served_missed(&r), (2, 0));

    m.set_faults(Faults {
        fail_writes: 1,
        ..Faults::default()
    });
    assert!(block_on(r.write(P, vec![SeqValue::new(2, 1, 21)], 6)).is_err());
    store_directly(&m, 2, 1, 25);
    assert_eq!(
        r.read_numbers(P, 2, &SEQS),
        Ok(vec![25, 200]),
        "after a failed write, storage is asked"
    );
    assert_eq!(served_missed(&r), (2, 1));
}

#[test]
fn a_write_abandoned_before_it_ends_drops_what_is_kept_of_its_workspaces() {
    let m = seeded();
    let r = ReadAhead::new(Arc::new(m.clone()));
    r.read_ahead(P, &[1, 2], &SEQS).expect("read ahead");
    m.write_gate.close();
    let write = r.write(P, vec![SeqValue::new(1, 1, 11)], 2);
    drop(write);
    m.write_gate.open();
    store_directly(&m, 1, 1, 12);
    assert_eq!(
        r.read_numbers(P, 1, &[1]),
        Ok(vec![12]),
        "read from storage"
    );
    assert_eq!(
        r.read_numbers(P, 2, &[1]),
        Ok(vec![20]),
        "another workspace still served"
    );
    assert_eq!(served_missed(&r), (1, 1));
}

#[test]
fn an_actualization_drops_everything_kept_and_nothing_read_ahead_until_it_ends_is_kept() {
    let m = seeded();
    m.seed_event(P, 1, &[SeqValue::new(1, 1, 10)]);
    let r = ReadAhead::new(Arc::new(m.clone()));
    r.read_ahead(P, &[1, 2], &SEQS).expect("read ahead");
    let offset = r.read_next_offset(P);
    assert_eq!(
        r.read_ahead(P, &[3], &SEQS),
        Ok(0),
        "actualizing: nothing kept"
    );
    block_on(offset).expect("offset");
    let page = block_on(r.read_plog(P, 1, 10)).expect("page");
    assert!(page.end);
    assert_eq!(r.read_numbers(P, 1, &[1]), Ok(vec![10]));
    assert_eq!(r.read_numbers(P, 3, &[1]), Ok(vec![30]));
    assert_eq!(served_missed(&r), (0, 2), "all from storage");
    assert_eq!(r.read_ahead(P, &[3], &SEQS), Ok(1), "ready again: kept");
    assert_eq!(r.read_numbers(P, 3, &[1]), Ok(vec![30]));
    assert_eq!(served_missed(&r), (1, 2));
}

/// Storage that runs a hook inside `read_numbers_many`, as if another thread acted while the
/// read-ahead's read was under way.
struct Hooked {
    inner: MemoryStorage,
    hook: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Storage for Hooked {
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.inner.read_numbers(partition, ws, seqs)
    }

    fn read_numbers_many(
        &self, partition: PartitionId, ws: &[WsId], seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        let read = self.inner.read_numbers_many(partition, ws, seqs);
        let hook = self.hook.lock().expect("hook").take();
        if let Some(hook) = hook {
            hook();
        }
        read
    }

    fn read_next_offset(&self, partition: PartitionId) -> StorageFuture<PLogOffset> {
        self.inner.read_next_offset(partition)
    }

    fn write(
        &self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
    ) -> StorageFuture<()> {
        self.inner.write(partition, values, next_offset)
    }

    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        self.inner.read_plog(partition, from, max_events)
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.inner.append_events(partition, batch)
    }
}

/// A read-ahead over `m` whose read runs `hook(read_ahead)` before it returns.
fn hooked(m: &MemoryStorage, hook: impl FnOnce(&ReadAhead) + Send + 'static) -> Arc<ReadAhead> {
    let storage = Arc::new(Hooked {
        inner: m.clone(),
        hook: Mutex::new(None),
    });
    let r = Arc::new(ReadAhead::new(storage.clone()));
    let weak = Arc::downgrade(&r);
    *storage.hook.lock().expect("hook") = Some(Box::new(move || {
        if let Some(r) = weak.upgrade() {
            hook(&r);
        }
    }));
    r
}

#[test]
fn a_read_ahead_that_an_actualization_overlapped_keeps_nothing() {
    let m = seeded();
    let r = hooked(&m, |r| {
        // An actualization begins while the numbers are read, and even ends.
        block_on(r.read_next_offset(P)).expect("offset");
        block_on(r.read_plog(P, 1, 10)).expect("page");
    });
    assert_eq!(r.read_ahead(P, &[1, 2], &SEQS), Ok(0));
    assert_eq!(r.read_numbers(P, 1, &[1]), Ok(vec![10]));
    assert_eq!(served_missed(&r), (0, 1));
}

#[test]
fn a_read_ahead_keeps_the_larger_numbers_of_writes_that_ended_meanwhile_and_none_of_failed_ones() {
    let m = seeded();
    let m2 = m.clone();
    let r = hooked(&m, move |r| {
        // The read saw the old numbers; these writes end before the read-ahead does.
        block_on(r.write(P, vec![SeqValue::new(1, 1, 15)], 2)).expect("write");
        m2.set_faults(Faults {
            fail_writes: 1,
            ..Faults::default()
        });
        assert!(block_on(r.write(P, vec![SeqValue::new(2, 2, 250)], 3)).is_err());
    });
    assert_eq!(
        r.read_ahead(P, &[1, 2, 3], &SEQS),
        Ok(2),
        "workspace 2 is not kept"
    );
    assert_eq!(
        r.read_numbers(P, 1, &SEQS),
        Ok(vec![15, 100]),
        "raised to the write"
    );
    store_directly(&m, 2, 2, 260);
    assert_eq!(
        r.read_numbers(P, 2, &SEQS),
        Ok(vec![20, 260]),
        "read from storage"
    );
    assert_eq!(r.read_numbers(P, 3, &SEQS), Ok(vec![30, 300]));
    assert_eq!(served_missed(&r), (2, 1));
}
