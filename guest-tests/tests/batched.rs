//! The batched path through the component: `flush-start-next` finishes one event and starts the
//! next in one call, with the same numbers and writes as the calls it replaces; the `-quad` calls
//! do the same without lists.

use std::time::Duration;

use sequencer::{Params, SeqValue};
use sequencer_guest_tests::Harness;
use sequencer_host::runtime::{GuestError, QuadNumbers, SeqQuad};
use sequencer_host::{HostError, NotNowReason, StartOutcome, Status};

const P: u32 = 11;

fn params() -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 100)
        .with_seq(1, 3, 7)
}

#[test]
fn flush_start_next_numbers_a_stream_of_events_like_separate_calls() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    let (o, n) = seq.start_next(1, 5, &[1, 2]).unwrap();
    assert!(matches!(o, StartOutcome::Started(1)));
    assert_eq!(n, [1, 100]);
    seq.append(1, &[SeqValue::new(5, 1, 1), SeqValue::new(5, 2, 100)])
        .unwrap();
    // Event 2 in another workspace, event 3 back in the first: each call flushes the previous.
    let (o, n) = seq.flush_start_next(1, 6, &[3]).unwrap();
    assert!(matches!(o, StartOutcome::Started(2)));
    assert_eq!(n, [7]);
    seq.append(2, &[SeqValue::new(6, 3, 7)]).unwrap();
    let (o, n) = seq.flush_start_next(1, 5, &[1, 1, 2]).unwrap();
    assert!(matches!(o, StartOutcome::Started(3)));
    assert_eq!(n, [2, 3, 101]);
    seq.append(3, &[SeqValue::new(5, 1, 3), SeqValue::new(5, 2, 101)])
        .unwrap();
    seq.flush().unwrap();
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 3);
    assert_eq!(h.storage.view_value(P, 5, 2), 101);
    assert_eq!(h.storage.view_value(P, 6, 3), 7);
    assert_eq!(h.storage.stored_next_offset(P), 3);

    // A restart recovers exactly that.
    seq.cleanup();
    let seq = h.open_ready(P, &params());
    let (o, n) = seq.start_next(1, 5, &[1, 2, 3]).unwrap();
    assert!(matches!(o, StartOutcome::Started(4)));
    assert_eq!(n, [4, 102, 7]);
}

#[test]
fn slices_number_alike_whether_a_seq_quad_or_lists_carry_them() {
    // `PartitionSequencer` sends up to four sequences as a `seq-quad`, more as lists.
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    // Every number an event took goes to the PLog with it, as a command processor appends it.
    let event = |seqs: &[u16], numbers: &[u64]| -> Vec<SeqValue> {
        seqs.iter()
            .zip(numbers)
            .map(|(&s, &n)| SeqValue::new(5, s, n))
            .collect()
    };
    let seqs = [1, 2, 3, 1, 2];
    let (o, n) = seq.start_next(1, 5, &seqs).unwrap();
    assert!(matches!(o, StartOutcome::Started(1)));
    assert_eq!(n, [1, 100, 7, 2, 101], "five: lists");
    seq.append(1, &event(&seqs, &n)).unwrap();
    let seqs = [3, 1, 2, 3];
    let (o, n) = seq.flush_start_next(1, 5, &seqs).unwrap();
    assert!(matches!(o, StartOutcome::Started(2)));
    assert_eq!(n, [8, 3, 102, 9], "four: a seq-quad");
    seq.append(2, &event(&seqs, &n)).unwrap();
    let seqs = [3; 6];
    let (o, n) = seq.flush_start_next(1, 5, &seqs).unwrap();
    assert!(matches!(o, StartOutcome::Started(3)));
    assert_eq!(n, [10, 11, 12, 13, 14, 15], "six: lists");
    seq.append(3, &event(&seqs, &n)).unwrap();
    // A refusal is the same either way: the flush is done, the start refused as a whole, and
    // the numbers it took (sequence 1 stood at 3, then at 4) are handed out again.
    for (offset, seqs, number) in [(4, &[1, 9][..], 4), (5, &[1, 1, 1, 1, 9][..], 5)] {
        assert!(
            matches!(
                seq.flush_start_next(1, 5, seqs),
                Err(HostError::Sequencer(GuestError::UnknownSeqId(_)))
            ),
            "{seqs:?}"
        );
        h.driver.idle();
        assert_eq!(seq.status(), Status::Ready, "{seqs:?}: no transaction open");
        let (o, n) = seq.start_next(1, 5, &[1]).unwrap();
        assert!(
            matches!(o, StartOutcome::Started(o) if o == offset),
            "{o:?}"
        );
        assert_eq!(
            n,
            [number],
            "{seqs:?}: the refused start's numbers come back"
        );
        seq.append(offset, &event(&[1], &n)).unwrap();
    }
    seq.flush().unwrap();
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 5);
    assert_eq!(h.storage.view_value(P, 5, 2), 102);
    assert_eq!(h.storage.view_value(P, 5, 3), 15);
}

#[test]
fn flush_start_next_without_a_transaction_changes_nothing() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    assert!(matches!(
        seq.flush_start_next(1, 5, &[1]),
        Err(HostError::Sequencer(GuestError::NoTransaction))
    ));
    assert_eq!(seq.status(), Status::Ready);
    let (o, n) = seq.start_next(1, 5, &[1]).unwrap();
    assert!(matches!(o, StartOutcome::Started(1)));
    assert_eq!(n, [1]);
}

#[test]
fn a_refused_start_after_the_flush_leaves_the_flush_done_and_no_transaction() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    let (_, n) = seq.start_next(1, 5, &[1]).unwrap();
    assert_eq!(n, [1]);
    seq.append(1, &[SeqValue::new(5, 1, 1)]).unwrap();
    // Unknown kind: event 1 is flushed (and written), nothing starts.
    assert!(matches!(
        seq.flush_start_next(4, 5, &[1]),
        Err(HostError::Sequencer(GuestError::UnknownWsKind(4)))
    ));
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 1, "the flush was done");
    assert_eq!(seq.status(), Status::Ready, "no transaction is open");
    // Unknown sequence: event 2 is flushed, the start is refused as a whole (as `start-next`
    // refuses it: the sequencer actualizes, and event 2 comes back from the PLog).
    let (o, n) = seq.start_next(1, 5, &[1]).unwrap();
    assert!(matches!(o, StartOutcome::Started(2)));
    assert_eq!(n, [2]);
    seq.append(2, &[SeqValue::new(5, 1, 2)]).unwrap();
    assert!(matches!(
        seq.flush_start_next(1, 5, &[9]),
        Err(HostError::Sequencer(GuestError::UnknownSeqId(_)))
    ));
    h.driver.idle();
    assert_eq!(seq.status(), Status::Ready);
    let (o, n) = seq.start_next(1, 5, &[1]).unwrap();
    assert!(
        matches!(o, StartOutcome::Started(3)),
        "offset 2 was consumed"
    );
    assert_eq!(n, [3]);
}

#[test]
fn flush_start_next_says_not_now_while_too_many_values_wait() {
    let h = Harness::new();
    let params = params().with_max_unflushed_values(1);
    let seq = h.open_ready(P, &params);
    h.storage.write_gate.close();
    let (_, n) = seq.start_next(1, 5, &[1, 2]).unwrap();
    assert_eq!(n, [1, 100]);
    let (o, n) = seq.flush_start_next(1, 6, &[1]).unwrap();
    assert!(
        matches!(o, StartOutcome::NotNow(NotNowReason::TooManyUnflushed)),
        "{o:?}"
    );
    assert!(n.is_empty());
    assert_eq!(seq.status(), Status::Ready, "flushed, nothing started");
    h.storage.write_gate.open();
    h.driver.idle();
    let (o, n) = seq.start_next(1, 6, &[1]).unwrap();
    assert!(matches!(o, StartOutcome::Started(2)));
    assert_eq!(n, [1]);
}

#[test]
fn group_commit_holds_a_write_report_until_the_interval_passed() {
    let h = Harness::new();
    let driver = sequencer_host::Driver::spawn(
        std::sync::Arc::new(h.storage.clone()),
        std::sync::Arc::new(h.clock.clone()),
        sequencer_host::DriverConfig::default(),
    )
    .with_min_write_interval(Duration::from_millis(10));
    let seq = driver.open(&h.runtime, P, &params()).unwrap();
    driver.sync();
    while seq.status() == Status::Actualizing {
        std::thread::yield_now();
    }
    let (_, n) = seq.start_next(1, 5, &[1]).unwrap();
    assert_eq!(n, [1]);
    let (_, n) = seq.flush_start_next(1, 5, &[1]).unwrap();
    assert_eq!(n, [2]);
    seq.flush().unwrap();
    // The first write (number 1, offset 1) reaches storage but is reported only once the
    // interval has passed on the driver's clock: the second event's number waits for it.
    wait_until(|| h.storage.view_value(P, 5, 1) == 1);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(h.storage.view_value(P, 5, 1), 1);
    assert_eq!(seq.storage_ops_in_flight(), 1, "held, still in flight");
    h.clock.advance(Duration::from_millis(10));
    wait_until(|| h.storage.view_value(P, 5, 1) == 2);
    h.clock.advance(Duration::from_millis(10));
    driver.idle();
    assert_eq!(h.storage.stored_next_offset(P), 2);
    assert_eq!(seq.storage_ops_in_flight(), 0);
}

#[test]
fn group_commit_reports_at_once_a_write_of_half_the_partitions_unflushed_limit() {
    let h = Harness::new();
    // An hour on a clock that only moves when told: a held write is never reported.
    let driver = sequencer_host::Driver::spawn(
        std::sync::Arc::new(h.storage.clone()),
        std::sync::Arc::new(h.clock.clone()),
        sequencer_host::DriverConfig::default(),
    )
    .with_min_write_interval(Duration::from_secs(3600));
    let seq = driver
        .open(&h.runtime, P, &params().with_max_unflushed_values(4))
        .unwrap();
    driver.sync();
    while seq.status() == Status::Actualizing {
        std::thread::yield_now();
    }
    // One number: a write of one value, a quarter of the limit, is held.
    seq.start_next(1, 5, &[1]).unwrap();
    seq.flush().unwrap();
    wait_until(|| h.storage.view_value(P, 5, 1) == 1);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(seq.storage_ops_in_flight(), 1, "held");
    h.clock.advance(Duration::from_secs(3600));
    wait_until(|| seq.storage_ops_in_flight() == 0);
    // Two numbers: a write of half the limit is reported as soon as storage completes it, so
    // values arriving meanwhile never wait an interval for room.
    let (_, n) = seq.start_next(1, 6, &[1, 2]).unwrap();
    assert_eq!(n, [1, 100]);
    seq.flush().unwrap();
    wait_until(|| h.storage.view_value(P, 6, 2) == 100);
    wait_until(|| seq.storage_ops_in_flight() == 0);
    assert_eq!(h.storage.stored_next_offset(P), 2);

    // Waiting for the driver to be idle reports a held write at once, and holds none after.
    seq.start_next(1, 7, &[1]).unwrap();
    seq.flush().unwrap();
    wait_until(|| h.storage.view_value(P, 7, 1) == 1);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(seq.storage_ops_in_flight(), 1, "held");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            driver.idle();
            let _ = tx.send(());
        });
        let at_once = rx.recv_timeout(Duration::from_secs(10)).is_ok();
        if !at_once {
            // Let the waiting thread go, so that the assertion fails instead of hanging.
            h.clock.advance(Duration::from_secs(3600));
        }
        assert!(
            at_once,
            "idle waited for the interval on a clock that does not move"
        );
    });
    assert_eq!(seq.storage_ops_in_flight(), 0);
    assert_eq!(h.storage.stored_next_offset(P), 3);
}

fn wait_until(cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out");
        std::thread::sleep(Duration::from_millis(1));
    }
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

/// The numbers of a quad reply as a list call gives them: the first `count`, or none if it did
/// not start (the places not asked for must hold 0).
fn quad_list(q: &QuadNumbers, count: usize) -> (String, Vec<u64>) {
    let all = [q.n0, q.n1, q.n2, q.n3];
    assert!(
        all[count..].iter().all(|&n| n == 0),
        "places not asked for hold 0: {q:?}"
    );
    let numbers = if matches!(q.outcome, StartOutcome::Started(_)) {
        all[..count].to_vec()
    } else {
        assert!(all.iter().all(|&n| n == 0), "no numbers without a start");
        Vec::new()
    };
    (format!("{:?}", q.outcome), numbers)
}

/// One write as storage received it: its values as (ws, seq, value), sorted (their order
/// carries no meaning), and its next PLog offset.
type Write = (Vec<(u64, u16, u64)>, u64);

/// The writes storage received, in order.
fn writes(storage: &sequencer_host::MemoryStorage) -> Vec<Write> {
    let mut out = Vec::new();
    let mut values = Vec::new();
    for w in storage.writes() {
        match w {
            sequencer_host::store::memory::WriteRecord::Value(_, v) => {
                values.push((v.key.ws, v.key.seq, v.value))
            }
            sequencer_host::store::memory::WriteRecord::Offset(_, o) => {
                values.sort_unstable();
                out.push((std::mem::take(&mut values), o));
            }
        }
    }
    out
}

#[test]
fn quad_calls_give_the_same_offsets_numbers_and_writes_as_the_list_calls() {
    // (workspace, sequences) of a stream of events: cold and warm workspaces, no sequence at
    // all, repeated sequences, four of them.
    let script: &[(u64, &[u16])] = &[
        (5, &[1, 2]),
        (6, &[3]),
        (5, &[1, 1, 2]),
        (7, &[]),
        (6, &[1, 2, 3, 3]),
        (8, &[2, 2, 2, 2]),
        (5, &[3, 1]),
    ];
    let run = |use_quad: bool| {
        let h = Harness::new();
        let seq = h.open_ready(P, &params());
        let mut replies = Vec::new();
        for (i, &(ws, seqs)) in script.iter().enumerate() {
            let (outcome, numbers) = match (use_quad, i) {
                (false, 0) => seq.start_next(1, ws, seqs).unwrap(),
                (false, _) => seq.flush_start_next(1, ws, seqs).unwrap(),
                (true, 0) => {
                    let q = seq.start_next_quad(1, ws, quad(seqs)).unwrap();
                    let (o, n) = quad_list(&q, seqs.len());
                    replies.push((o, n.clone()));
                    (q.outcome, n)
                }
                (true, _) => {
                    let q = seq.flush_start_next_quad(1, ws, quad(seqs)).unwrap();
                    let (o, n) = quad_list(&q, seqs.len());
                    replies.push((o, n.clone()));
                    (q.outcome, n)
                }
            };
            if !use_quad {
                replies.push((format!("{outcome:?}"), numbers.clone()));
            }
            let StartOutcome::Started(offset) = outcome else {
                panic!("event {i} did not start: {outcome:?}");
            };
            let values: Vec<_> = seqs
                .iter()
                .zip(&numbers)
                .map(|(&s, &n)| SeqValue::new(ws, s, n))
                .collect();
            seq.append(offset, &values).unwrap();
            // Each write carries the event just flushed, so runs compare write by write.
            h.driver.idle();
        }
        seq.flush().unwrap();
        h.driver.idle();
        // A refused start is refused alike, and drops the transaction alike.
        h.storage.read_gate.close();
        let refusal = if use_quad {
            format!("{:?}", seq.start_next_quad(1, 5, quad(&[1, 4])))
        } else {
            format!("{:?}", seq.start_next(1, 5, &[1, 4]))
        };
        let status = seq.status();
        h.storage.read_gate.open();
        h.driver.idle();
        (
            replies,
            refusal,
            status,
            writes(&h.storage),
            h.storage.plog(P),
            h.storage.stored_next_offset(P),
        )
    };
    let lists = run(false);
    let quads = run(true);
    assert_eq!(lists.0, quads.0, "the same offsets and numbers");
    assert_eq!(lists.1, quads.1, "the same refusal");
    assert_eq!(
        (lists.2, quads.2),
        (Status::Actualizing, Status::Actualizing)
    );
    assert_eq!(lists.3, quads.3, "the same writes, in the same order");
    assert_eq!(lists.4, quads.4);
    assert_eq!(lists.5, quads.5);
    assert_eq!(lists.4.len(), script.len());
    assert_eq!(
        lists.5,
        script.len() as u64 + 1,
        "the refusal's actualization replayed"
    );
    assert_eq!(
        quads.0[4],
        ("StartOutcome::Started(5)".to_string(), vec![1, 100, 8, 9]),
        "a sample, worked by hand"
    );
}

#[test]
fn a_quad_naming_more_than_four_sequences_is_refused_and_changes_nothing() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    let too_many = |count| SeqQuad {
        count,
        ..quad(&[1, 2, 3, 1])
    };
    let observe = |seq: &sequencer_host::PartitionSequencer| {
        (seq.status(), format!("{:?}", seq.held_numbers().unwrap()))
    };
    let before = observe(&seq);
    for count in [5, 6, 255] {
        assert!(matches!(
            seq.start_next_quad(1, 5, too_many(count)),
            Err(HostError::Sequencer(GuestError::InvalidParams(_)))
        ));
        assert_eq!(observe(&seq), before);
    }
    // With an event open, the flushing call refuses before flushing: the event stays open.
    let q = seq.start_next_quad(1, 5, quad(&[1, 2, 3, 1])).unwrap();
    assert!(matches!(q.outcome, StartOutcome::Started(1)));
    assert_eq!([q.n0, q.n1, q.n2, q.n3], [1, 100, 7, 2]);
    seq.append(
        1,
        &[
            SeqValue::new(5, 1, 2),
            SeqValue::new(5, 2, 100),
            SeqValue::new(5, 3, 7),
        ],
    )
    .unwrap();
    let open = observe(&seq);
    assert!(matches!(
        seq.flush_start_next_quad(1, 6, too_many(5)),
        Err(HostError::Sequencer(GuestError::InvalidParams(_)))
    ));
    assert_eq!(observe(&seq), open);
    assert!(matches!(
        seq.start(1, 6),
        Err(HostError::Sequencer(GuestError::TransactionInProgress))
    ));
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 0, "not flushed");
    let q = seq.flush_start_next_quad(1, 6, quad(&[1])).unwrap();
    assert!(matches!(q.outcome, StartOutcome::Started(2)));
    assert_eq!([q.n0, q.n1, q.n2, q.n3], [1, 0, 0, 0]);
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 5, 1), 2);
    assert_eq!(h.storage.view_value(P, 5, 3), 7);
}
