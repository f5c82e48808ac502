//! A seeded simulation of the object PLog's fence: the real `ObjectPlog` (three writers, each
//! a handle with its own id and state, as three hosts would be) over an in-memory object store
//! whose create-if-absent is atomic (`object_store`'s `InMemory`, as a hard link on the local
//! file system or S3's `If-None-Match: *`), with faults drawn from the seed: a put that fails
//! before it lands, and a put that lands but whose answer is lost. Writers append in an order
//! the seed picks, retry after an error with the same batch, restart (a new handle and id,
//! stale), and merge.
//!
//! Invariants after every step:
//! - **Dense and linked**: a fresh reader finds the PLog dense from offset 1, every link whole.
//! - **Acknowledged is stored**: every event an append acknowledged is in the PLog at its
//!   offset with its bytes (a lost answer followed by a retry is recognized as the writer's own
//!   write, never taken for a lost race, never written twice).
//! - **One winner per offset**: no offset is acknowledged to two writers (a stale writer loses).
//! - **Nothing invented**: every stored event is one some writer offered at that offset.
//!
//! `SIM_FENCE_SEEDS` (default 64) seeds of `SIM_FENCE_STEPS` (default 120) steps each; a failure
//! names its seed and step. The merger thread of each handle may also merge between steps:
//! bundles change where events are kept, never what an append answers.

#![cfg(feature = "objects")]

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::faulty_objects::{FaultyObjects, PutFault};
use sequencer::SeqValue;
use sequencer::testkit::Rng;
use sequencer_host::store::codec::encode_event;
use sequencer_host::store::objects::{Access, ObjectPlog};
use sequencer_host::{AppendError, EventBatch};

/// One writer: its handle, where it believes the PLog ends, and the batch it retries.
struct Writer {
    plog: ObjectPlog,
    known: u64,
    pending: Option<(u64, u64, u32)>,
}

const BUNDLE: u64 = 8;

/// The event a writer offers: its value names the offset, its payload the writer and attempt.
fn event(offset: u64, writer: usize, attempt: u32) -> Vec<u8> {
    encode_event(
        offset,
        &[SeqValue::new(1, 1, offset)],
        format!("w{writer}-a{attempt}").as_bytes(),
    )
}

fn batch(first: u64, n: u64, writer: usize, attempt: u32) -> EventBatch {
    let mut b = EventBatch::new(first);
    for o in first..first + n {
        let payload = format!("w{writer}-a{attempt}");
        b.push(&[SeqValue::new(1, 1, o)], payload.as_bytes());
    }
    b
}

/// What one seed's run did, for the totals.
#[derive(Default)]
struct Totals {
    acked: u64,
    own_retries: u64,
    fenced: u64,
    lost_answers: u64,
}

fn run_seed(seed: u64, steps: u64) -> Totals {
    let mut rng = Rng::new(seed);
    let store = Arc::new(FaultyObjects::default());
    let open = |store: &Arc<FaultyObjects>| {
        ObjectPlog::open(store.clone(), None, BUNDLE, Access::Write).expect("open a writer")
    };
    let mut writers: Vec<Writer> = (0..3)
        .map(|_| Writer {
            plog: open(&store),
            known: 1,
            pending: None,
        })
        .collect();
    // Every offset acknowledged, to whom, with which bytes; every event offered per offset.
    let mut acked: HashMap<u64, (usize, Vec<u8>)> = HashMap::new();
    let mut offered: HashMap<u64, Vec<Vec<u8>>> = HashMap::new();
    let mut totals = Totals::default();
    let mut attempt = 0u32;
    for step in 0..steps {
        let at = format!("seed {seed:#x} step {step}");
        let w = rng.below(writers.len() as u64) as usize;
        match rng.below(100) {
            0..=4 => {
                // A restart: memory lost, a new id, a stale view of the PLog.
                let own = writers[w].plog.stats();
                totals.own_retries += own.own_retries.load(std::sync::atomic::Ordering::Relaxed);
                totals.fenced += own.fenced.load(std::sync::atomic::Ordering::Relaxed);
                writers[w] = Writer {
                    plog: open(&store),
                    known: writers[w].known,
                    pending: writers[w].pending,
                };
            }
            5..=9 => {
                writers[w].plog.merge_now().expect(&at);
            }
            _ => {
                let (first, n, a) = writers[w].pending.take().unwrap_or_else(|| {
                    attempt += 1;
                    (writers[w].known, 1 + rng.below(3), attempt)
                });
                for o in first..first + n {
                    offered.entry(o).or_default().push(event(o, w, a));
                }
                store.on_next_event_object(match rng.below(100) {
                    0..=9 => Some(PutFault::NeverLands),
                    10..=24 => {
                        totals.lost_answers += 1;
                        Some(PutFault::AnswerLost)
                    }
                    _ => None,
                });
                match writers[w].plog.append(0, &batch(first, n, w, a)) {
                    Ok(()) => {
                        for o in first..first + n {
                            let e = event(o, w, a);
                            if let Some((other, _)) = acked.insert(o, (w, e)) {
                                panic!(
                                    "{at}: offset {o} acknowledged to writer {other} and to writer {w}"
                                );
                            }
                        }
                        totals.acked += n;
                        writers[w].known = first + n;
                    }
                    Err(AppendError::WrongOffset { expected, offered }) => {
                        assert!(
                            expected > offered,
                            "{at}: the fence named {expected}, not past {offered}"
                        );
                        writers[w].known = expected;
                    }
                    // Retried with the same batch next time this writer moves.
                    Err(AppendError::Storage(_)) => writers[w].pending = Some((first, n, a)),
                    Err(e @ AppendError::NotOwner { .. }) => panic!("{at}: no owners here: {e}"),
                }
                store.on_next_event_object(None);
            }
        }
        // The invariants, through a fresh reader.
        let reader = ObjectPlog::open(store.clone(), None, BUNDLE, Access::ReadOnly)
            .unwrap_or_else(|e| panic!("{at}: the PLog does not open: {e}"));
        let events = reader
            .read(0, 1, 100_000)
            .unwrap_or_else(|e| panic!("{at}: the PLog does not read: {e}"));
        for (i, (o, bytes)) in events.iter().enumerate() {
            assert_eq!(*o, i as u64 + 1, "{at}: not dense");
            assert!(
                offered.get(o).is_some_and(|v| v.contains(bytes)),
                "{at}: offset {o} holds an event no writer offered there"
            );
        }
        for (o, (w, bytes)) in &acked {
            let stored = events.get(*o as usize - 1).map(|e| &e.1);
            assert_eq!(
                stored,
                Some(bytes),
                "{at}: offset {o}, acknowledged to writer {w}, is not stored with its bytes"
            );
        }
    }
    for w in &writers {
        let s = w.plog.stats();
        totals.own_retries += s.own_retries.load(std::sync::atomic::Ordering::Relaxed);
        totals.fenced += s.fenced.load(std::sync::atomic::Ordering::Relaxed);
    }
    totals
}

#[test]
fn seeded_writers_with_lost_answers_and_restarts_never_lose_or_share_an_acknowledged_offset() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (seeds, steps) = (env("SIM_FENCE_SEEDS", 64), env("SIM_FENCE_STEPS", 120));
    let mut all = Totals::default();
    for s in 0..seeds {
        let t = run_seed(0xFE4C_E000 + s, steps);
        all.acked += t.acked;
        all.own_retries += t.own_retries;
        all.fenced += t.fenced;
        all.lost_answers += t.lost_answers;
    }
    eprintln!(
        "fence simulation: {seeds} seeds × {steps} steps: {} events acknowledged, {} lost answers, {} creates recognized as the writer's own, {} appends fenced",
        all.acked, all.lost_answers, all.own_retries, all.fenced
    );
    // The paths the invariants are about were taken, not skipped.
    assert!(
        all.own_retries > 0,
        "no retry after a lost answer found its own object"
    );
    assert!(all.fenced > 0, "no writer lost a race");
}
