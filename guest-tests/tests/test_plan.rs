//! The test plan of spec 000, through the component.

use sequencer::{Params, SeqValue};
use sequencer_guest_tests::{Harness, runtime};
use sequencer_host::MemoryStorage;
use sequencer_host::bindings::{NotNowReason, StartOutcome, Status};

const P: u32 = 7;

#[test]
fn basic_usage_continues_from_the_plog_and_flushes_values_then_offset() {
    let storage = MemoryStorage::new();
    storage.seed_event(P, 42, &[SeqValue::new(1000, 1, 13)]);
    let h = Harness::with(storage, runtime());
    let params = Params::new().with_seq(1, 1, 1);
    let seq = h.open_ready(P, &params);
    assert!(matches!(seq.start(1, 1000), Ok(StartOutcome::Started(43))));
    assert_eq!(seq.next(1).unwrap(), 14);
    seq.flush().unwrap();
    h.driver.idle();
    assert_eq!(h.storage.view_value(P, 1000, 1), 14);
    assert_eq!(h.storage.stored_next_offset(P), 43);
}

#[test]
fn actualization_on_error_hands_out_the_same_offset_and_numbers_again() {
    let h = Harness::new();
    h.storage.write_gate.close(); // nothing may reach storage unseen
    let seq = h.open_ready(P, &Params::new().with_seq(1, 1, 5));
    assert!(matches!(seq.start(1, 9), Ok(StartOutcome::Started(1))));
    let (a, b) = (seq.next(1).unwrap(), seq.next(1).unwrap());
    assert_eq!((a, b), (5, 6));
    h.storage.read_gate.close(); // the actualization cannot finish before the check
    seq.actualize().unwrap();
    assert!(matches!(
        seq.start(1, 9),
        Ok(StartOutcome::NotNow(NotNowReason::Actualizing))
    ));
    h.storage.read_gate.open();
    h.driver.idle();
    assert_eq!(
        h.storage.write_gate.waiting(),
        0,
        "the dropped numbers were never written"
    );
    assert!(matches!(seq.start(1, 9), Ok(StartOutcome::Started(1))));
    assert_eq!((seq.next(1).unwrap(), seq.next(1).unwrap()), (a, b));
}

#[test]
fn batcher_gives_the_right_numbers_for_each_storage() {
    let params = Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 100)
        .with_seq(2, 7, 1000);
    // Empty storage: initial values, offset 1.
    let h = Harness::new();
    let seq = h.open_ready(P, &params);
    let (o, n) = seq.start_next(2, 30, &[7]).unwrap();
    assert!(matches!(o, StartOutcome::Started(1)));
    assert_eq!(n, vec![1000]);

    // Several workspaces, kinds and values over a few pages (page size 100 in the harness).
    let storage = MemoryStorage::new();
    storage.seed_events(P, 250, |offset| {
        vec![
            SeqValue::new(10, 1, offset),
            SeqValue::new(20 + offset % 3, 2, 100 + offset),
            SeqValue::new(10, 1, offset.saturating_sub(1)),
        ]
    });
    let h = Harness::with(storage, runtime());
    let seq = h.open_ready(P, &params);
    assert_eq!(seq.status(), Status::Ready);
    let (o, n) = seq.start_next(1, 10, &[1, 2]).unwrap();
    assert!(matches!(o, StartOutcome::Started(251)));
    assert_eq!(n, vec![251, 100]);
    seq.actualize().unwrap();
    h.driver.idle();
    for (ws, last) in [(20u64, 349u64), (21, 350), (22, 348)] {
        let (_, n) = seq.start_next(1, ws, &[2]).unwrap();
        assert_eq!(n, vec![last + 1], "workspace {ws}");
        seq.flush().unwrap();
    }
}
