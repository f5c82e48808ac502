//! The test plan of spec 000: basic usage, actualization on error, several storages.

use core::time::Duration;

use sequencer::testkit::{Driver, MemStorage};
use sequencer::{NotNowReason, NumberKey, Params, SeqValue, Start, Status};

const KIND: u16 = 1;
const SEQ: u16 = 1;
const WS: u64 = 1000;

fn params() -> Params {
    Params::new().with_seq(KIND, SEQ, 1)
}

#[test]
fn basic_usage_continues_from_the_plog_and_flushes_values_then_offset() {
    let mut storage = MemStorage::new();
    storage.seed_event(42, &[SeqValue::new(WS, SEQ, 13)]);
    let mut d = Driver::new(params(), storage).unwrap();
    assert_eq!(
        d.start(KIND, WS),
        Ok(Start::NotNow(NotNowReason::Actualizing))
    );
    d.run().unwrap();
    assert_eq!(d.seq.status(), Status::Ready);

    assert_eq!(d.start(KIND, WS), Ok(Start::Started(43)));
    assert_eq!(d.seq.next(SEQ), Ok(14));
    d.seq.flush().unwrap();
    d.run().unwrap();

    assert_eq!(d.storage.read_numbers(WS, &[SEQ]), vec![14]);
    assert_eq!(
        d.storage.next_offset, 43,
        "replay restarts at the last flushed event"
    );
}

#[test]
fn actualization_on_error_hands_out_the_same_offset_and_numbers_again() {
    let mut d = Driver::new(params(), MemStorage::new()).unwrap();
    d.run().unwrap();
    assert_eq!(d.start(KIND, WS), Ok(Start::Started(1)));
    let first = d.seq.next(SEQ).unwrap();
    assert_eq!(
        first, 1,
        "a sequence never seen starts at its initial value"
    );
    let second = d.seq.next(SEQ).unwrap();

    // Time passes, the flusher runs: nothing of the unfinished transaction reaches storage.
    d.advance(Duration::from_millis(500)).unwrap();
    assert!(d.storage.numbers.is_empty());

    d.seq.actualize().unwrap();
    assert_eq!(
        d.start(KIND, WS),
        Ok(Start::NotNow(NotNowReason::Actualizing))
    );
    d.run().unwrap();
    assert_eq!(d.start(KIND, WS), Ok(Start::Started(1)));
    assert_eq!(d.seq.next(SEQ), Ok(first));
    assert_eq!(d.seq.next(SEQ), Ok(second));
}

struct Case {
    name: &'static str,
    params: Params,
    storage: MemStorage,
    /// (kind, ws, seq, expected next number)
    expect: Vec<(u16, u64, u16, u64)>,
    expected_offset: u64,
}

fn cases() -> Vec<Case> {
    let params = Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 100)
        .with_seq(2, 1, 5)
        .with_seq(2, 7, 1000);
    let mut several = MemStorage::new();
    // Stored view and offset, then PLog events from that offset on (keys repeat; max wins).
    several.numbers.insert(NumberKey { ws: 10, seq: 1 }, 40);
    several.numbers.insert(NumberKey { ws: 20, seq: 7 }, 1500);
    several.next_offset = 8;
    several.seed_event(7, &[SeqValue::new(10, 1, 39)]);
    several.seed_event(
        8,
        &[
            SeqValue::new(10, 2, 150),
            SeqValue::new(30, 1, 9),
            SeqValue::new(10, 2, 149),
        ],
    );
    several.seed_event(9, &[SeqValue::new(20, 7, 1501), SeqValue::new(30, 1, 11)]);
    several.seed_event(10, &[]);
    vec![
        Case {
            name: "empty",
            params: params.clone(),
            storage: MemStorage::new(),
            expect: vec![
                (1, 10, 1, 1),
                (1, 10, 2, 100),
                (2, 20, 7, 1000),
                (2, 20, 1, 5),
            ],
            expected_offset: 1,
        },
        Case {
            name: "several workspaces, kinds and values",
            params,
            storage: several,
            expect: vec![
                (1, 10, 1, 41),
                (1, 10, 2, 151),
                (2, 20, 7, 1502),
                (2, 20, 1, 5),
                (2, 30, 1, 12),
                (1, 30, 1, 12),
                (1, 40, 2, 100),
            ],
            expected_offset: 11,
        },
    ]
}

#[test]
fn batcher_gives_the_right_offset_and_numbers_for_each_storage() {
    for case in cases() {
        let mut d = Driver::new(case.params, case.storage).unwrap();
        d.page_events = 2;
        d.run().unwrap();
        for (kind, ws, seq, want) in case.expect {
            assert_eq!(
                d.start(kind, ws),
                Ok(Start::Started(case.expected_offset)),
                "{}: start({kind}, {ws})",
                case.name
            );
            assert_eq!(
                d.seq.next(seq),
                Ok(want),
                "{}: next({seq}) in ws {ws}",
                case.name
            );
            d.seq.actualize().unwrap();
            d.run().unwrap();
        }
    }
}
