//! Recovery from a storage outage: once storage answers again, the sequencer's
//! flusher and actualizer retry within about one first retry delay (500 ms), however long their
//! capped backoff (10 s) had grown while storage was down. Proven through the compiled
//! component, the host's driver and a manual clock, with the default retry params.

use std::time::Duration;

use sequencer::Params;
use sequencer_guest_tests::Harness;
use sequencer_host::store::memory::Faults;
use sequencer_host::{NotNowReason, StartOutcome, Status};

const P: u32 = 1;
const STEP: Duration = Duration::from_millis(50);
const OUTAGE: Duration = Duration::from_secs(30);

fn params() -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_max_unflushed_values(10)
}

fn down() -> Faults {
    Faults {
        down: true,
        ..Faults::default()
    }
}

/// Moves the manual clock through `span` in small steps, letting the driver do what is due
/// after each, and checks that `start` says "not now" for `reason` all along.
fn refused_throughout(
    h: &Harness, seq: &sequencer_host::PartitionSequencer, span: Duration, reason: NotNowReason,
) {
    let mut waited = Duration::ZERO;
    while waited < span {
        h.clock.advance(STEP);
        waited += STEP;
        h.driver.idle();
        match seq.start(1, 1_000) {
            Ok(StartOutcome::NotNow(r)) if r == reason => {}
            other => panic!("after {waited:?} of the outage, start gave {other:?}, not {reason:?}"),
        }
    }
}

/// How long after storage came back (the clock moving in small steps, the driver doing what
/// is due) `start` first succeeded; panics if it did not within `limit`.
fn started_within(
    h: &Harness, seq: &sequencer_host::PartitionSequencer, limit: Duration,
) -> Duration {
    let mut waited = Duration::ZERO;
    loop {
        h.driver.idle();
        if let Ok(StartOutcome::Started(_)) = seq.start(1, 1_000) {
            return waited;
        }
        assert!(
            waited < limit,
            "start still refused {waited:?} after storage came back (status {:?})",
            seq.status()
        );
        h.clock.advance(STEP);
        waited += STEP;
    }
}

#[test]
fn after_a_30_s_write_outage_start_succeeds_within_1_s_of_storage_returning() {
    let h = Harness::new();
    let seq = h.open_ready(P, &params());
    // The view's writes fail; events go on until more than 10 values wait.
    h.storage.set_faults(Faults {
        fail_writes: u32::MAX,
        ..Faults::default()
    });
    let mut ws = 0;
    while h.event(&seq, 1, ws, &[1]).is_some() {
        ws += 1;
        h.driver.idle();
    }
    assert_eq!(ws, 11, "start refused once more than 10 values waited");
    // Then storage is down altogether (reads too) for 30 s: the write's wait grows to the cap.
    h.storage.set_faults(down());
    refused_throughout(&h, &seq, OUTAGE, NotNowReason::TooManyUnflushed);
    assert!(
        h.storage.writes().is_empty(),
        "nothing was written during the outage"
    );

    h.storage.set_faults(Faults::default());
    let after = started_within(&h, &seq, Duration::from_secs(1));
    assert!(
        after <= Duration::from_secs(1),
        "started {after:?} after storage returned"
    );
    assert_eq!(seq.status(), Status::InTransaction);
}

#[test]
fn after_a_30_s_outage_during_actualization_start_succeeds_within_1_s_of_storage_returning() {
    let h = Harness::new();
    h.storage.set_faults(down());
    // The sequencer's first read (the stored offset) fails, and every retry with it.
    let seq = h.open(P, &params());
    refused_throughout(&h, &seq, OUTAGE, NotNowReason::Actualizing);
    assert_eq!(seq.status(), Status::Actualizing);

    h.storage.set_faults(Faults::default());
    let after = started_within(&h, &seq, Duration::from_secs(1));
    assert!(
        after <= Duration::from_secs(1),
        "started {after:?} after storage returned"
    );
}
