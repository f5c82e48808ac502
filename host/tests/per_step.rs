//! The per-step path (`start`, a `next` per number, `flush`) through the component: the
//! numbers the guest gives ahead at `start` and the host hands out without a call are exactly
//! the ones a call per `next` would have handed out, whatever calls come between (a repeated
//! or unknown sequence, `status`, `stage`, `actualize`, a trap), and a transaction crosses
//! into the guest about once instead of five times: its flush waits for the next call (or the
//! task driver) without losing anything. A number that reached the PLog is never handed out
//! again, across traps (the call carrying a deferred flush among them) and a restart.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::ready;
use sequencer::{Params, SeqValue};
use sequencer_host::store::PlogChecker;
use sequencer_host::{
    Driver, DriverConfig, HostError, Limits, MemoryStorage, MonotonicClock, PartitionSequencer,
    Runtime, StartOutcome, Status,
};

/// Kind 1's sequences and the first number each hands out.
const SEQS: [(u16, u64); 3] = [(1, 1), (2, 100), (3, 1000)];
/// A sequence kind 1 does not define.
const UNKNOWN: u16 = 9;

fn params() -> Params {
    SEQS.iter()
        .fold(Params::new(), |p, &(seq, first)| p.with_seq(1, seq, first))
}

fn first(seq: u16) -> u64 {
    SEQS.iter().find(|s| s.0 == seq).map_or(1, |s| s.1)
}

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The numbers as a command processor sees them: the last number of each key in the PLog, and
/// the ones the open transaction took; `first` gives each sequence's first number.
struct Model {
    first: fn(u16) -> u64,
    durable: HashMap<(u64, u16), u64>,
    open: HashMap<(u64, u16), u64>,
}

impl Model {
    fn new(first: fn(u16) -> u64) -> Self {
        Self {
            first,
            durable: HashMap::new(),
            open: HashMap::new(),
        }
    }

    fn next(&mut self, ws: u64, seq: u16) -> u64 {
        let last = self.open.get(&(ws, seq)).or(self.durable.get(&(ws, seq)));
        let n = last.map_or((self.first)(seq), |l| l + 1);
        self.open.insert((ws, seq), n);
        n
    }

    /// The open transaction's numbers reached the PLog.
    fn commit(&mut self) {
        self.durable.extend(self.open.drain());
    }
}

/// A sequencer of partition 0 over `params`, on a memory store, driven.
struct Setup {
    runtime: Runtime,
    m: MemoryStorage,
    driver: Driver,
    seq: PartitionSequencer,
}

fn setup(params: &Params) -> Setup {
    let runtime = Runtime::from_file(&common::component_path(), Limits::default()).expect("load");
    let m = MemoryStorage::new();
    let driver = Driver::spawn(
        Arc::new(m.clone()),
        Arc::new(MonotonicClock::new()),
        DriverConfig::default(),
    );
    let seq = driver.open(&runtime, 0, params).expect("open");
    ready(&driver, &seq);
    Setup {
        runtime,
        m,
        driver,
        seq,
    }
}

/// Partition 0's PLog is dense and holds no number twice.
fn assert_plog_checks(m: &MemoryStorage, first: fn(u16) -> u64) {
    let mut c = PlogChecker::new(0, m.stored_next_offset(0), |s| Some(first(s)));
    for (offset, values) in m.plog(0) {
        c.event(offset, &values).expect("dense, no number twice");
    }
}

fn started(seq: &PartitionSequencer, ws: u64) -> u64 {
    for _ in 0..100_000 {
        match seq.start(1, ws).expect("start") {
            StartOutcome::Started(offset) => return offset,
            StartOutcome::NotNow(_) => std::thread::yield_now(),
        }
    }
    panic!("start stayed 'not now'");
}

#[test]
fn per_step_numbers_are_the_ones_a_call_per_step_gives_and_none_in_the_plog_comes_again() {
    let Setup {
        runtime,
        m,
        driver,
        mut seq,
    } = setup(&params());
    let mut model = Model::new(first);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut flushed, mut cancelled, mut traps, mut staged) = (0, 0, 0, 0);
    // Events staged in the open transaction, appended with its last one.
    let mut pending: Vec<(u64, Vec<SeqValue>)> = Vec::new();

    for tx in 0..3000 {
        let ws = 1 + rng.below(5);
        let offset = started(&seq, ws);
        let mut values = Vec::new();
        // Mostly the same three sequences (what the numbers ahead are asked for), sometimes
        // others, repeats and an unknown one, with other calls between.
        let steps = if rng.below(4) == 0 { rng.below(7) } else { 3 };
        for step in 0..steps {
            let s = match rng.below(10) {
                0 => UNKNOWN,
                1 | 2 => 1 + rng.below(3) as u16,
                _ => 1 + step as u16 % 3,
            };
            match rng.below(20) {
                0 => assert_eq!(seq.status(), Status::InTransaction),
                1 => {
                    seq.held_numbers().expect("held numbers");
                }
                _ => {}
            }
            let got = seq.next(s);
            if s == UNKNOWN {
                assert!(matches!(got, Err(HostError::Sequencer(_))), "{got:?}");
                continue;
            }
            let want = model.next(ws, s);
            assert_eq!(got.expect("next"), want, "tx {tx}, ws {ws}, seq {s}");
            values.push(SeqValue::new(ws, s, want));
        }
        match rng.below(10) {
            // The command failed: its numbers (and the staged events') come back.
            0 => {
                seq.actualize().expect("actualize");
                model.open.clear();
                pending.clear();
                cancelled += 1;
                ready(&driver, &seq);
            }
            // The event is in the PLog but the call that reports its flush to the guest traps
            // (the next start, another call, or the driver's settle, whichever comes first):
            // the new instance recovers the numbers from the PLog.
            1 => {
                pending.push((offset, values));
                for (o, v) in pending.drain(..) {
                    seq.append(o, &v).expect("append");
                }
                model.commit();
                // Nothing in flight, so the next guest call is the one carrying the flush.
                driver.idle();
                let traps_before = seq.traps();
                seq.set_next_call_fuel(1);
                // The flush makes the call itself when another call came after the start.
                let r = seq.flush();
                assert!(
                    r.is_ok() || matches!(r, Err(HostError::Trapped { .. })),
                    "{r:?}"
                );
                if r.is_ok() && rng.below(2) == 0 {
                    let r = seq.held_numbers();
                    assert!(
                        matches!(r, Err(HostError::Trapped { .. })) || seq.traps() > traps_before,
                        "{r:?}"
                    );
                }
                ready(&driver, &seq);
                assert_eq!(seq.traps(), traps_before + 1);
                traps += 1;
            }
            // The next event joins the same transaction.
            2 => {
                seq.stage().expect("stage");
                pending.push((offset, values));
                staged += 1;
            }
            _ => {
                pending.push((offset, values));
                for (o, v) in pending.drain(..) {
                    seq.append(o, &v).expect("append");
                }
                model.commit();
                seq.flush().expect("flush");
                flushed += 1;
            }
        }
    }
    assert!(flushed > 2000 && cancelled > 200 && traps > 200 && staged > 200);
    if !pending.is_empty() {
        for (o, v) in pending.drain(..) {
            seq.append(o, &v).expect("append");
        }
        model.commit();
        seq.flush().expect("flush");
    }

    // A transaction of the usual three sequences crosses into the guest about once (the task
    // driver's deliveries and settles are counted too, fewer with a group commit window);
    // one call per step would be five.
    let driver = driver.with_min_write_interval(std::time::Duration::from_millis(1));
    let calls_before = seq.guest_calls();
    let n = 500;
    for i in 0..n {
        let ws = 1 + i % 5;
        let offset = started(&seq, ws);
        let values: Vec<SeqValue> = (1..=3)
            .map(|s| {
                let got = seq.next(s).expect("next");
                assert_eq!(got, model.next(ws, s));
                SeqValue::new(ws, s, got)
            })
            .collect();
        seq.append(offset, &values).expect("append");
        model.commit();
        seq.flush().expect("flush");
    }
    let per_tx = (seq.guest_calls() - calls_before) as f64 / n as f64;
    assert!(per_tx < 1.5, "{per_tx} guest calls per transaction");

    // A restart on the same storage goes on after every number in the PLog.
    driver.idle();
    seq.cleanup();
    driver.sync();
    seq = driver.open(&runtime, 0, &params()).expect("reopen");
    ready(&driver, &seq);
    for ws in 1..=5 {
        started(&seq, ws);
        for (s, _) in SEQS {
            assert_eq!(seq.next(s).expect("next"), model.next(ws, s));
        }
        seq.actualize().expect("actualize");
        model.open.clear();
        ready(&driver, &seq);
    }
    seq.cleanup();

    assert_plog_checks(&m, first);
    eprintln!(
        "{flushed} flushed, {staged} staged, {cancelled} cancelled, {traps} traps; \
         {per_tx:.2} calls/tx"
    );
}

/// The facade's per-step path (`start_event`, record ids, `finish_event`) hands out the ids a
/// call per id would, and crosses about twice per event (its finish rides on the next start).
#[test]
fn facade_events_take_their_record_ids_ahead_and_the_ids_are_the_ones_a_call_per_id_gives() {
    use sequencer::facade::{self, SEQ_CREC_ID, SEQ_REC_ID};
    use std::time::Duration;

    let Setup { m, driver, seq, .. } = setup(&facade::system_params(Params::new()));
    fn first_of(s: u16) -> u64 {
        match s {
            SEQ_REC_ID => facade::FIRST_REC_ID,
            SEQ_CREC_ID => facade::FIRST_CREC_ID,
            _ => facade::FIRST_WLOG_OFFSET,
        }
    }
    let mut model = Model::new(first_of);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut calls_before = 0;
    let n = 1000;
    for event in 0..n {
        if event == n / 2 {
            calls_before = seq.guest_calls();
        }
        let ws = 1 + rng.below(4);
        let offsets = seq
            .start_event(Duration::from_secs(5), ws)
            .expect("start event")
            .expect("started");
        let mut values = vec![SeqValue::new(
            ws,
            facade::SEQ_WLOG_OFFSET,
            offsets.wlog_offset,
        )];
        let cancel = event < n / 2 && rng.below(8) == 0;
        for _ in 0..1 + rng.below(3) {
            for (s, got) in [
                (SEQ_REC_ID, seq.next_rec_id()),
                (SEQ_CREC_ID, seq.next_c_rec_id()),
            ] {
                let want = model.next(ws, s);
                assert_eq!(got.expect("record id"), want, "event {event}, seq {s}");
                values.push(SeqValue::new(ws, s, want));
            }
        }
        if cancel {
            seq.cancel_event().expect("cancel");
            model.open.clear();
            continue;
        }
        model.commit();
        seq.append(offsets.plog_offset, &values).expect("append");
        seq.finish_event().expect("finish");
    }
    let per_event = (seq.guest_calls() - calls_before) as f64 / (n / 2) as f64;
    // 1-3 record ids of each kind: one call per id would be 6 on average with the two ends,
    // and the task driver's deliveries come on top; ids beyond the four ahead cost a call.
    assert!(per_event < 3.0, "{per_event} guest calls per event");
    driver.idle();
    seq.cleanup();
    assert_plog_checks(&m, first_of);
    eprintln!("facade: {per_event:.2} calls/event");
}

/// A flush that makes no call is not left waiting: with no further call on the partition, the
/// task driver reports it to the guest and its numbers reach the view; meanwhile the status
/// already says ready, and a second flush is refused as it always was.
#[test]
fn a_deferred_flush_reaches_the_view_without_another_call_and_the_status_says_ready_at_once() {
    use sequencer_host::runtime::SequenceStatus;

    let Setup { m, driver, seq, .. } = setup(&params());
    for round in 0..3u64 {
        let ws = 7 + round;
        let offset = started(&seq, ws);
        let values: Vec<SeqValue> = SEQS
            .iter()
            .map(|&(s, _)| SeqValue::new(ws, s, seq.next(s).expect("next")))
            .collect();
        seq.append(offset, &values).expect("append");
        let calls = seq.guest_calls();
        seq.flush().expect("flush");
        assert_eq!(seq.sequence_status(), SequenceStatus::Ready);
        if round == 2 {
            // A second flush reports the first, then is refused: there is no transaction.
            let again = seq.flush();
            assert!(matches!(again, Err(HostError::Sequencer(_))), "{again:?}");
            assert!(seq.next(1).is_err(), "no transaction: no number");
        } else {
            // No call from the command processor: the driver settles the flush, then the
            // flusher writes the numbers (`idle` waits for both).
            driver.idle();
            assert!(seq.guest_calls() > calls, "the driver reported the flush");
        }
        // The flusher may hold its write back a moment (a wake-up, which `idle` does not
        // wait for).
        let in_view = || {
            values
                .iter()
                .all(|v| m.view_value(0, ws, v.key.seq) == v.value)
        };
        for _ in 0..5000 {
            driver.idle();
            if in_view() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(in_view(), "round {round}: {values:?} not in the view");
    }
    seq.cleanup();
    assert_plog_checks(&m, first);
}
