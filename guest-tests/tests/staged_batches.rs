//! Several events in one transaction through the compiled component: `stage`, `start-batch`
//! and `flush-start-batch`, and the `read-numbers-many` import a cold batch reads storage with.
//! Storage is wrapped so that the tests count (and can fail) the numbers reads the guest makes.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sequencer::{Number, PLogOffset, Params, SeqId, SeqValue, WsId};
use sequencer_guest_tests::{Harness, assert_no_number_reused, runtime};
use sequencer_host::runtime::{BatchNumbers, GuestError, HeldNumbers, SeqQuad, SequenceStatus};
use sequencer_host::store::memory::WriteRecord;
use sequencer_host::{
    AppendError, Driver, DriverConfig, EventBatch, HostError, ManualClock, MemoryStorage,
    NotNowReason, PartitionId, PartitionSequencer, PlogPage, StartOutcome, Status, Storage,
    StorageError,
};

const P: u32 = 21;
/// A sequence of kind 2 that starts at the last number there is.
const LAST: u16 = 9;

fn params() -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 100)
        .with_seq(1, 3, 7)
        .with_seq(2, 1, 1)
        .with_seq(2, LAST, u64::MAX)
}

fn quad(seqs: &[u16]) -> SeqQuad {
    let s = |i: usize| seqs.get(i).copied().unwrap_or(0);
    SeqQuad {
        count: seqs.len() as u8,
        s0: s(0),
        s1: s(1),
        s2: s(2),
        s3: s(3),
    }
}

type Fut<T> = Pin<Box<dyn Future<Output = Result<T, StorageError>> + Send + 'static>>;

/// How `read-numbers-many` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Many {
    FromStorage,
    Fail,
    /// One number short of what was asked.
    Short,
}

/// [`MemoryStorage`] that counts the guest's numbers reads and can make `read-numbers-many`
/// misbehave.
#[derive(Clone)]
struct Counting {
    inner: MemoryStorage,
    single: Arc<AtomicUsize>,
    many: Arc<Mutex<Vec<Vec<WsId>>>>,
    answer: Arc<Mutex<Many>>,
}

impl Counting {
    fn new(inner: MemoryStorage) -> Self {
        Self {
            inner,
            single: Arc::default(),
            many: Arc::default(),
            answer: Arc::new(Mutex::new(Many::FromStorage)),
        }
    }

    fn single_reads(&self) -> usize {
        self.single.load(Ordering::SeqCst)
    }

    /// The workspaces of every `read-numbers-many` call so far.
    fn many_reads(&self) -> Vec<Vec<WsId>> {
        self.many.lock().unwrap().clone()
    }

    fn answer(&self, a: Many) {
        *self.answer.lock().unwrap() = a;
    }
}

impl Storage for Counting {
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.single.fetch_add(1, Ordering::SeqCst);
        self.inner.read_numbers(partition, ws, seqs)
    }

    fn read_numbers_many(
        &self, partition: PartitionId, ws: &[WsId], seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.many.lock().unwrap().push(ws.to_vec());
        let mut out = Vec::new();
        for &w in ws {
            out.extend(self.inner.read_numbers(partition, w, seqs)?);
        }
        match *self.answer.lock().unwrap() {
            Many::FromStorage => Ok(out),
            Many::Fail => Err(StorageError("injected read-numbers-many failure".into())),
            Many::Short => {
                out.pop();
                Ok(out)
            }
        }
    }

    fn read_next_offset(&self, partition: PartitionId) -> Fut<PLogOffset> {
        self.inner.read_next_offset(partition)
    }

    fn write(&self, partition: PartitionId, values: Vec<SeqValue>, next: PLogOffset) -> Fut<()> {
        self.inner.write(partition, values, next)
    }

    fn read_plog(&self, partition: PartitionId, from: PLogOffset, max: usize) -> Fut<PlogPage> {
        self.inner.read_plog(partition, from, max)
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.inner.append_events(partition, batch)
    }
}

/// A harness whose driver and guests reach `storage` through a [`Counting`] wrapper
/// (`h.storage` is the same data, unwrapped).
fn counting_harness(storage: MemoryStorage) -> (Harness, Counting) {
    let counting = Counting::new(storage.clone());
    let clock = ManualClock::new();
    let driver = Driver::spawn(
        Arc::new(counting.clone()),
        Arc::new(clock.clone()),
        DriverConfig { page_events: 100 },
    );
    let h = Harness {
        storage,
        clock,
        driver,
        runtime: runtime(),
    };
    (h, counting)
}

/// Storage whose PLog and view already hold ws 5: seq 1 at 40, seq 2 at 400; ws 6: seq 1 at
/// 60; ws 7: seq 3 at 70 (events at offsets 1 to 3, all written by an earlier life).
fn seeded() -> MemoryStorage {
    let storage = MemoryStorage::new();
    storage.seed_event(P, 1, &[SeqValue::new(5, 1, 40), SeqValue::new(5, 2, 400)]);
    storage.seed_event(P, 2, &[SeqValue::new(6, 1, 60)]);
    storage.seed_event(P, 3, &[SeqValue::new(7, 3, 70)]);
    // An earlier life replays them and writes them to the view; then it stops.
    let h = Harness::with(storage.clone(), runtime());
    let seq = h.open_ready(P, &params());
    h.driver.idle();
    seq.cleanup();
    assert_eq!(storage.view_value(P, 5, 2), 400);
    assert_eq!(storage.view_value(P, 7, 3), 70);
    assert_eq!(storage.stored_next_offset(P), 4);
    storage
}

fn refused<T: std::fmt::Debug>(r: Result<T, HostError>) -> GuestError {
    match r {
        Err(HostError::Sequencer(e)) => e,
        other => panic!("expected a typed refusal, got {other:?}"),
    }
}

/// Status and held numbers (cached, unflushed, transaction).
fn observe(seq: &PartitionSequencer) -> (Status, [u32; 3]) {
    let HeldNumbers {
        cached,
        unflushed,
        transaction,
    } = seq.held_numbers().expect("held numbers");
    (seq.status(), [cached, unflushed, transaction])
}

/// Appends a batch's events to the PLog at the offsets it was given.
fn append_batch(seq: &PartitionSequencer, ws: &[u64], seqs: &[u16], batch: &BatchNumbers) {
    let per = seqs.len();
    for (i, &w) in ws.iter().enumerate().take(batch.started as usize) {
        let values: Vec<SeqValue> = seqs
            .iter()
            .zip(&batch.numbers[i * per..(i + 1) * per])
            .map(|(&s, &n)| SeqValue::new(w, s, n))
            .collect();
        seq.append(batch.first_offset + i as u64, &values)
            .expect("append at the offset the batch gave");
    }
}

/// Every write storage received, as (ws, seq, value) of values and the offsets stored.
fn written(storage: &MemoryStorage) -> (Vec<(u64, u16, u64)>, Vec<u64>) {
    let mut values = Vec::new();
    let mut offsets = Vec::new();
    for w in storage.writes() {
        match w {
            WriteRecord::Value(p, v) if p == P => values.push((v.key.ws, v.key.seq, v.value)),
            WriteRecord::Offset(p, o) if p == P => offsets.push(o),
            _ => {}
        }
    }
    (values, offsets)
}

#[test]
fn start_batch_numbers_events_at_consecutive_offsets_continuing_each_workspace() {
    let (h, counting) = counting_harness(seeded());
    let seq = h.open_ready(P, &params());
    let ws = [5, 6, 5, 8];
    let batch = seq.start_batch(1, &ws, quad(&[1, 2])).unwrap();
    assert_eq!(batch.first_offset, 4, "after the three seeded events");
    assert_eq!(batch.started, 4);
    assert_eq!(batch.not_now, None);
    assert_eq!(
        batch.numbers,
        [41, 401, 61, 100, 42, 402, 1, 100],
        "each workspace continues from storage, and ws 5 from its own earlier event"
    );
    assert_eq!(seq.status(), Status::InTransaction);
    assert_eq!(
        counting.many_reads(),
        [vec![5, 6, 8]],
        "one read for the cold workspaces"
    );
    assert_eq!(counting.single_reads(), 0);

    append_batch(&seq, &ws, &[1, 2], &batch);
    seq.flush().unwrap();
    assert_eq!(seq.status(), Status::Ready);
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 42);
    assert_eq!(h.storage.view_value(P, 5, 2), 402);
    assert_eq!(h.storage.view_value(P, 6, 2), 100);
    assert_eq!(h.storage.view_value(P, 8, 1), 1);
    assert_eq!(
        h.storage.stored_next_offset(P),
        7,
        "the last event's offset"
    );

    // The next batch is warm: no read at all, and it continues.
    let batch = seq.start_batch(1, &[8, 5], quad(&[1])).unwrap();
    assert_eq!((batch.first_offset, batch.started), (8, 2));
    assert_eq!(batch.numbers, [2, 43]);
    assert_eq!(counting.many_reads().len(), 1);
    assert_eq!(counting.single_reads(), 0);
}

#[test]
fn a_cold_batch_reads_its_workspaces_with_one_read_numbers_many_and_continues_from_storage() {
    let (h, counting) = counting_harness(seeded());
    let seq = h.open_ready(P, &params());
    // Repeated and warm workspaces are not read again; every cold one is read once, together.
    h.event(&seq, 1, 7, &[3]).unwrap();
    let before = counting.single_reads();
    assert_eq!(before, 1, "the single event read ws 7");
    let ws = [6, 7, 5, 6, 9, 5];
    let batch = seq.start_batch(1, &ws, quad(&[1, 3])).unwrap();
    assert_eq!(counting.many_reads(), [vec![6, 5, 9]]);
    assert_eq!(
        counting.single_reads(),
        before,
        "no read-numbers inside the batch"
    );
    assert_eq!(batch.first_offset, 5);
    assert_eq!(batch.started, 6);
    assert_eq!(
        batch.numbers,
        [61, 7, 1, 72, 41, 7, 62, 8, 1, 7, 42, 8],
        "numbers continue from the values storage holds (ws 7 from memory)"
    );
}

#[test]
fn a_failing_read_numbers_many_is_a_storage_error_and_changes_nothing() {
    let (h, counting) = counting_harness(seeded());
    let seq = h.open_ready(P, &params());
    let before = observe(&seq);

    counting.answer(Many::Fail);
    assert!(matches!(
        refused(seq.start_batch(1, &[5, 6], quad(&[1]))),
        GuestError::Storage(_)
    ));
    assert_eq!(observe(&seq), before, "nothing changed");

    counting.answer(Many::Short);
    assert!(matches!(
        refused(seq.start_batch(1, &[5, 6], quad(&[1]))),
        GuestError::MalformedNumbers(_)
    ));
    assert_eq!(observe(&seq), before, "nothing changed");
    assert_eq!(counting.many_reads().len(), 2);

    // With a batch already staged, a failed read keeps it (and only it) in the transaction.
    counting.answer(Many::FromStorage);
    let first = seq.start_batch(1, &[8, 8], quad(&[1])).unwrap();
    assert_eq!(
        (first.first_offset, first.numbers.as_slice()),
        (4, &[1, 2][..])
    );
    let staged = observe(&seq);
    counting.answer(Many::Fail);
    assert!(matches!(
        refused(seq.start_batch(1, &[5, 6], quad(&[1]))),
        GuestError::Storage(_)
    ));
    assert_eq!(observe(&seq), staged, "the staged batch is untouched");

    counting.answer(Many::FromStorage);
    let second = seq.start_batch(1, &[5, 6], quad(&[1])).unwrap();
    assert_eq!((second.first_offset, second.started), (6, 2));
    assert_eq!(
        second.numbers,
        [41, 61],
        "nothing was taken by the failed calls"
    );
    append_batch(&seq, &[8, 8], &[1], &first);
    append_batch(&seq, &[5, 6], &[1], &second);
    seq.flush().unwrap();
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 8, 1), 2);
    assert_eq!(h.storage.view_value(P, 6, 1), 61);
    assert_eq!(h.storage.stored_next_offset(P), 7);
}

#[test]
fn staged_values_never_reach_storage_before_the_flush_even_while_writes_run() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    // Event 1's write is held; event 2 is flushed behind it, so two writes run while the batch
    // is staged.
    h.storage.write_gate.close();
    h.event(&seq, 1, 3, &[1]).unwrap();
    let batch = seq.start_batch(1, &[5, 6], quad(&[1, 2])).unwrap();
    assert_eq!((batch.first_offset, batch.started), (2, 2));
    assert_eq!(seq.status(), Status::InTransaction);
    h.storage.write_gate.open();
    h.driver.idle();
    h.clock.advance(std::time::Duration::from_secs(3600));
    h.driver.idle();
    let (values, offsets) = written(&h.storage);
    assert_eq!(values, [(3, 1, 1)], "only the flushed event's value");
    assert_eq!(offsets, [1]);
    assert_eq!(h.storage.view_value(P, 5, 1), 0);

    // A third event joins the transaction through `start-next` + `stage`; still nothing.
    let (o, n) = seq.start_next(1, 3, &[1]).unwrap();
    assert!(matches!(o, StartOutcome::Started(4)), "{o:?}");
    assert_eq!(n, [2]);
    seq.stage().unwrap();
    assert!(matches!(refused(seq.stage()), GuestError::NoTransaction));
    h.driver.idle();
    assert_eq!(written(&h.storage).0, [(3, 1, 1)]);

    append_batch(&seq, &[5, 6], &[1, 2], &batch);
    seq.append(4, &[SeqValue::new(3, 1, 2)]).unwrap();
    seq.flush().unwrap();
    h.driver.idle();
    let (values, offsets) = written(&h.storage);
    assert_eq!(offsets, [1, 4]);
    let mut later = values[1..].to_vec();
    later.sort_unstable();
    assert_eq!(
        later,
        [(3, 1, 2), (5, 1, 1), (5, 2, 100), (6, 1, 1), (6, 2, 100)]
    );
}

#[test]
fn flush_start_batch_completes_the_events_and_starts_the_next_batch() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    let first = seq.start_batch(1, &[5, 6], quad(&[1])).unwrap();
    assert_eq!(
        (first.first_offset, first.numbers.as_slice()),
        (1, &[1, 1][..])
    );
    append_batch(&seq, &[5, 6], &[1], &first);
    let second = seq.flush_start_batch(1, &[6, 7, 5], quad(&[1, 3])).unwrap();
    assert_eq!((second.first_offset, second.started), (3, 3));
    assert_eq!(second.numbers, [2, 7, 1, 7, 2, 7]);
    h.driver.idle();
    assert_eq!(
        h.storage.view_value(P, 5, 1),
        1,
        "the first batch was written"
    );
    assert_eq!(h.storage.view_value(P, 6, 1), 1, "... and not the second");
    assert_eq!(h.storage.view_value(P, 7, 3), 0);
    assert_eq!(h.storage.stored_next_offset(P), 2);
    assert_eq!(seq.status(), Status::InTransaction);

    append_batch(&seq, &[6, 7, 5], &[1, 3], &second);
    // Flushing with an empty batch completes the transaction and starts nothing.
    let none = seq.flush_start_batch(1, &[], quad(&[1])).unwrap();
    assert_eq!((none.started, none.not_now), (0, None));
    assert_eq!(seq.status(), Status::Ready);
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 6, 1), 2);
    assert_eq!(h.storage.view_value(P, 7, 3), 7);
    assert_eq!(h.storage.stored_next_offset(P), 5);

    // Without a transaction, nothing is done.
    assert!(matches!(
        refused(seq.flush_start_batch(1, &[5], quad(&[1]))),
        GuestError::NoTransaction
    ));
    let next = seq.start_batch(1, &[5], quad(&[1])).unwrap();
    assert_eq!((next.first_offset, next.numbers.as_slice()), (6, &[3][..]));
}

#[test]
fn a_restart_after_a_staged_but_unflushed_batch_hands_out_the_same_offsets_and_numbers() {
    let storage = seeded();
    let h = Harness::with(storage.clone(), runtime());
    let seq = h.open_ready(P, &params());
    let ws = [5, 8, 5];
    let batch = seq.start_batch(1, &ws, quad(&[1, 2])).unwrap();
    assert_eq!(batch.first_offset, 4);
    assert_eq!(batch.numbers, [41, 401, 1, 100, 42, 402]);
    h.driver.idle();
    // The process dies before anything reached the PLog.
    drop(seq);
    drop(h);

    let h = Harness::with(storage.clone(), runtime());
    let seq = h.open_ready(P, &params());
    let again = seq.start_batch(1, &ws, quad(&[1, 2])).unwrap();
    assert_eq!(
        (again.first_offset, &again.numbers),
        (batch.first_offset, &batch.numbers),
        "nothing was consumed: the same offsets and numbers, none skipped"
    );
    // This time the first event reaches the PLog, then the process dies.
    seq.append(4, &[SeqValue::new(5, 1, 41), SeqValue::new(5, 2, 401)])
        .unwrap();
    drop(seq);
    drop(h);

    let h = Harness::with(storage.clone(), runtime());
    let seq = h.open_ready(P, &params());
    let rest = seq.start_batch(1, &ws[1..], quad(&[1, 2])).unwrap();
    assert_eq!(
        rest.first_offset, 5,
        "the appended event is replayed, not reused"
    );
    assert_eq!(
        rest.numbers,
        [1, 100, 42, 402],
        "and its numbers are not reissued"
    );
    append_batch(&seq, &ws[1..], &[1, 2], &rest);
    seq.flush().unwrap();
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 42);
    assert_eq!(h.storage.stored_next_offset(P), 6);
    assert_no_number_reused(&h.storage, P);
}

#[test]
fn a_trap_while_a_batch_is_staged_drops_it_and_the_new_instance_hands_it_out_again() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    let batch = seq.start_batch(1, &[5, 6], quad(&[1])).unwrap();
    assert_eq!(
        (batch.first_offset, batch.numbers.as_slice()),
        (1, &[1, 1][..])
    );
    seq.set_next_call_fuel(1);
    assert!(matches!(seq.held_numbers(), Err(HostError::Trapped { .. })));
    h.driver.idle();
    assert_eq!(seq.status(), Status::Ready);
    let again = seq.start_batch(1, &[5, 6], quad(&[1])).unwrap();
    assert_eq!((again.first_offset, again.numbers), (1, vec![1, 1]));
}

#[test]
fn not_now_mid_batch_returns_a_partial_batch_and_the_rest_follows_after_the_flush() {
    let h = Harness::new();
    // Two values per event: the third event finds 4 values staged, more than the 2 allowed.
    let seq = h.open_ready(P, &params().with_max_unflushed_values(2));
    let ws = [5, 6, 7, 8];
    let batch = seq.start_batch(1, &ws, quad(&[1, 2])).unwrap();
    assert_eq!(batch.first_offset, 1);
    assert_eq!(batch.started, 2);
    assert_eq!(batch.not_now, Some(NotNowReason::TooManyUnflushed));
    assert_eq!(batch.numbers, [1, 100, 1, 100]);
    assert_eq!(seq.held_numbers().unwrap().transaction, 4);

    // The rest cannot join the transaction ...
    let more = seq.start_batch(1, &ws[2..], quad(&[1, 2])).unwrap();
    assert_eq!(
        (more.started, more.not_now),
        (0, Some(NotNowReason::TooManyUnflushed))
    );
    assert!(more.numbers.is_empty());
    // ... but follows once the staged events are flushed and written.
    h.storage.write_gate.close();
    append_batch(&seq, &ws, &[1, 2], &batch);
    let held = seq.flush_start_batch(1, &ws[2..], quad(&[1, 2])).unwrap();
    assert_eq!(
        (held.started, held.not_now),
        (0, Some(NotNowReason::TooManyUnflushed)),
        "4 values wait to be written"
    );
    assert_eq!(seq.status(), Status::Ready, "flushed, nothing started");
    h.storage.write_gate.open();
    h.driver.idle();
    let rest = seq.start_batch(1, &ws[2..], quad(&[1, 2])).unwrap();
    assert_eq!(
        (rest.first_offset, rest.started, rest.not_now),
        (3, 2, None)
    );
    assert_eq!(rest.numbers, [1, 100, 1, 100]);
}

#[test]
fn a_batch_while_actualizing_is_not_now_and_starts_nothing() {
    let h = Harness::new();
    h.storage.read_gate.close();
    let seq = h.open(P, &params());
    let batch = seq.start_batch(1, &[5, 6], quad(&[1])).unwrap();
    assert_eq!(
        (batch.started, batch.not_now),
        (0, Some(NotNowReason::Actualizing))
    );
    assert_eq!(seq.status(), Status::Actualizing);
    h.storage.read_gate.open();
    h.driver.idle();
    let batch = seq.start_batch(1, &[5, 6], quad(&[1])).unwrap();
    assert_eq!((batch.first_offset, batch.started), (1, 2));
}

#[test]
fn an_unknown_kind_or_sequence_is_refused_up_front_and_changes_nothing() {
    let (h, counting) = counting_harness(MemoryStorage::new());
    let seq = h.open_ready(P, &params());
    for staged in [false, true] {
        if staged {
            seq.start_batch(1, &[5], quad(&[1])).unwrap();
        }
        let before = observe(&seq);
        assert!(matches!(
            refused(seq.start_batch(4, &[5, 6], quad(&[1]))),
            GuestError::UnknownWsKind(4)
        ));
        assert!(matches!(
            refused(seq.start_batch(1, &[5, 6], quad(&[1, 42]))),
            GuestError::UnknownSeqId(r) if r.kind == 1 && r.seq == 42
        ));
        assert!(matches!(
            refused(seq.start_batch(2, &[5, 6], quad(&[1, 2]))),
            GuestError::UnknownSeqId(r) if r.kind == 2 && r.seq == 2
        ));
        assert_eq!(observe(&seq), before, "nothing changed");
        assert!(
            counting.many_reads().is_empty(),
            "storage was not even read"
        );
    }
    // With a batch staged, flush-start-batch's refusal of the start comes after its flush.
    assert!(matches!(
        refused(seq.flush_start_batch(1, &[6], quad(&[5]))),
        GuestError::UnknownSeqId(_)
    ));
    assert_eq!(seq.status(), Status::Ready, "the staged event was flushed");
    h.driver.idle();
    let next = seq.start_batch(1, &[5, 6], quad(&[1])).unwrap();
    assert_eq!(next.first_offset, 2, "offset 1 was consumed by the flush");
}

/// A refusal before the first event (an open event) changes nothing: no `read-numbers-many`,
/// no cache growth. (Found by the simulator: `loads_ahead` named workspaces while an event was
/// open, so the batch preloaded them before `start` refused it.)
#[test]
fn a_batch_while_an_event_is_open_is_refused_and_changes_nothing() {
    let (h, counting) = counting_harness(MemoryStorage::new());
    let seq = h.open_ready(P, &params());
    assert!(matches!(seq.start(1, 5).unwrap(), StartOutcome::Started(1)));
    let before = observe(&seq);
    assert!(matches!(
        refused(seq.start_batch(1, &[6, 7], quad(&[1]))),
        GuestError::TransactionInProgress
    ));
    assert_eq!(observe(&seq), before, "nothing changed");
    assert!(
        counting.many_reads().is_empty(),
        "no storage read for a batch that cannot start: {:?}",
        counting.many_reads()
    );
    let _ = h;
}

#[test]
fn an_exhausted_sequence_mid_batch_drops_the_whole_transaction() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    // An earlier batch of the same transaction, then one that runs out on its third event.
    let first = seq.start_batch(2, &[5], quad(&[1])).unwrap();
    assert_eq!(
        (first.first_offset, first.numbers.as_slice()),
        (1, &[1][..])
    );
    h.storage.read_gate.close(); // hold the actualization to see it
    assert!(matches!(
        refused(seq.start_batch(2, &[6, 7, 6], quad(&[1, LAST]))),
        GuestError::SequenceExhausted(r) if r.kind == 2 && r.seq == LAST
    ));
    assert_eq!(seq.status(), Status::Actualizing, "dropped as by actualize");
    h.storage.read_gate.open();
    h.driver.idle();
    assert_eq!(seq.status(), Status::Ready);
    assert_eq!(seq.held_numbers().unwrap().transaction, 0);
    // Nothing of it was consumed: the same offsets and numbers come again.
    let again = seq.start_batch(2, &[5, 6, 7], quad(&[1, LAST])).unwrap();
    assert_eq!(again.first_offset, 1);
    assert_eq!(again.numbers, [1, u64::MAX, 1, u64::MAX, 1, u64::MAX]);
    append_batch(&seq, &[5, 6, 7], &[1, LAST], &again);
    seq.flush().unwrap();
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 6, LAST), u64::MAX);
    // Exhausted on the first event of a batch: the same, nothing stays open.
    h.storage.read_gate.close();
    assert!(matches!(
        refused(seq.start_batch(2, &[6], quad(&[LAST]))),
        GuestError::SequenceExhausted(_)
    ));
    assert_eq!(seq.status(), Status::Actualizing);
    h.storage.read_gate.open();
    h.driver.idle();
    let next = seq.start_batch(2, &[6], quad(&[1])).unwrap();
    assert_eq!((next.first_offset, next.numbers.as_slice()), (4, &[2][..]));
}

#[test]
fn a_quad_naming_more_than_four_sequences_is_refused_by_the_batch_calls_and_changes_nothing() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    let five = SeqQuad {
        count: 5,
        ..quad(&[1, 1, 1, 1])
    };
    let before = observe(&seq);
    assert!(matches!(
        refused(seq.start_batch(1, &[5], five)),
        GuestError::InvalidParams(_)
    ));
    assert_eq!(observe(&seq), before);
    let batch = seq.start_batch(1, &[5], quad(&[1, 1, 1, 1])).unwrap();
    assert_eq!(
        batch.numbers,
        [1, 2, 3, 4],
        "four of one sequence are four numbers"
    );
    append_batch(&seq, &[5], &[1, 1, 1, 1], &batch);
    let staged = observe(&seq);
    assert!(matches!(
        refused(seq.flush_start_batch(1, &[5], five)),
        GuestError::InvalidParams(_)
    ));
    assert_eq!(observe(&seq), staged, "not even flushed");
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 0);
    seq.flush().unwrap();
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 4);
}

/// A `flush-start-batch` that flushes and then starts nothing (an empty list, or a start
/// refused after the flush) leaves the facade's status (docs/DESIGN.md §5.3) `Ready`, as the
/// sequencer is. (It once stayed `Eventing`: the host set the status only from a batch that started
/// or said "not now", and never after a refused start.)
#[test]
fn a_flush_start_batch_that_starts_nothing_leaves_the_facade_status_ready() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    for ws in [&[][..], &[6][..]] {
        let batch = seq.start_batch(1, &[5], quad(&[1])).unwrap();
        append_batch(&seq, &[5], &[1], &batch);
        assert_eq!(seq.sequence_status(), SequenceStatus::Eventing);
        // An empty batch, then a batch refused after the flush (an unknown sequence).
        let seqs = if ws.is_empty() {
            quad(&[1])
        } else {
            quad(&[42])
        };
        let _ = seq.flush_start_batch(1, ws, seqs);
        assert_eq!(seq.status(), Status::Ready, "the flush was done");
        assert_eq!(
            seq.sequence_status(),
            SequenceStatus::Ready,
            "after flush-start-batch({ws:?})"
        );
    }
}
