//! The retry rules of docs/DESIGN.md §4.4, one test each, on exact waits (no jitter): a first
//! delay of 100 ms doubling up to 1.6 s.

use core::time::Duration;

use crate::work::{PlogPage, Start, Ticket, Work};
use crate::{Instant, Params, SeqValue, Sequencer, Status};

fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000)
}

fn params() -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_retry_delay(Duration::from_millis(100), Duration::from_millis(1600))
        .with_retry_jitter_percent(0)
}

/// A ready sequencer over empty storage with one flushed event whose write is not yet begun.
fn with_unwritten_event() -> Sequencer {
    let mut s = Sequencer::new(params()).unwrap();
    let Some(Work::ReadNextOffset { ticket }) = s.poll_work(ms(0)) else {
        panic!("an actualization starts by reading the stored offset");
    };
    s.complete_next_offset(ticket, 0).unwrap();
    let Some(Work::ReadPlog { ticket, from }) = s.poll_work(ms(0)) else {
        panic!("then it reads the PLog");
    };
    let page = PlogPage {
        values: &[],
        next: from,
        end: true,
    };
    s.complete_plog_read(ticket, page, ms(0)).unwrap();
    let Ok(Start::Load(read)) = s.start(1, 1) else {
        panic!("workspace 1 is not in memory");
    };
    assert!(matches!(
        s.complete_numbers(read.ticket, &[0]),
        Ok(Start::Started(1))
    ));
    s.next(1).unwrap();
    s.flush().unwrap();
    s
}

/// The write handed out at `t` (it must be the first work due), failed at `t`.
fn fail_write_at(s: &mut Sequencer, t: u64) -> Ticket {
    let Some(Work::Write(w)) = s.poll_work(ms(t)) else {
        panic!("a write is due at {t} ms");
    };
    s.fail(w.ticket, ms(t)).unwrap();
    w.ticket
}

/// The probe handed out at `t` (it must be the first work due).
fn probe_at(s: &mut Sequencer, t: u64) -> Ticket {
    match s.poll_work(ms(t)) {
        Some(Work::ReadNextOffset { ticket }) => ticket,
        other => panic!("a probe is due at {t} ms, not {other:?}"),
    }
}

/// Every storage operation handed out from 0 to `to` ms while storage fails all of them,
/// polling at each deadline: `('W', t)` for a write, `('P', t)` for a probe.
fn schedule_while_down(s: &mut Sequencer, to: u64) -> Vec<(char, u64)> {
    let mut seen = Vec::new();
    let mut at = Some(ms(0));
    while let Some(now) = at.filter(|&t| t <= ms(to)) {
        while let Some(work) = s.poll_work(now) {
            let t = now.as_nanos() / 1_000_000;
            seen.push((
                if matches!(work, Work::Write(_)) {
                    'W'
                } else {
                    'P'
                },
                t,
            ));
            s.fail(work.ticket(), now).unwrap();
        }
        at = s.poll_timeout();
    }
    seen
}

#[test]
fn a_probe_is_handed_out_during_a_long_backoff_and_not_during_a_short_one() {
    let mut s = with_unwritten_event();
    fail_write_at(&mut s, 0);
    assert_eq!(
        s.poll_timeout(),
        Some(ms(100)),
        "the first wait is the first delay: no probe before the retry"
    );
    assert_eq!(s.poll_work(ms(99)), None);
    fail_write_at(&mut s, 100);
    assert_eq!(
        s.poll_timeout(),
        Some(ms(200)),
        "the retry waits 200 ms: a probe after the first delay"
    );
    assert_eq!(s.poll_work(ms(199)), None);
    probe_at(&mut s, 200);
    assert_eq!(s.poll_work(ms(200)), None, "one probe at a time");
    assert_eq!(
        s.poll_timeout(),
        Some(ms(300)),
        "the retry is still due at 300 ms"
    );
}

#[test]
fn a_failed_probe_is_followed_by_the_next_one_a_first_delay_later_while_the_wait_is_long() {
    let mut s = with_unwritten_event();
    for t in [0, 100, 300] {
        fail_write_at(&mut s, t);
    }
    // The retry is at 700 ms: probes at 400, 500 and 600 ms, then the retry itself.
    for t in [400, 500] {
        let probe = probe_at(&mut s, t);
        s.fail(probe, ms(t)).unwrap();
        assert_eq!(s.poll_timeout(), Some(ms(t + 100)));
    }
    let probe = probe_at(&mut s, 600);
    s.fail(probe, ms(600)).unwrap();
    assert_eq!(
        s.poll_timeout(),
        Some(ms(700)),
        "the retry is no more than a first delay away: no probe before it"
    );
    assert_eq!(s.poll_work(ms(699)), None);
    fail_write_at(&mut s, 700);
}

#[test]
fn a_successful_probe_pulls_the_write_retry_forward_and_resets_its_backoff() {
    let mut s = with_unwritten_event();
    for t in [0, 100, 300, 700] {
        fail_write_at(&mut s, t);
    }
    assert_eq!(
        s.poll_timeout(),
        Some(ms(800)),
        "a probe; the retry is at 1500 ms"
    );
    let probe = probe_at(&mut s, 800);
    s.complete_next_offset(probe, 12_345).unwrap();
    assert_eq!(
        s.poll_timeout(),
        Some(ms(800)),
        "the retry is due one first delay after its failure: now"
    );
    let Some(Work::Write(w)) = s.poll_work(ms(800)) else {
        panic!("the write goes as soon as storage answered");
    };
    assert_eq!(
        w.next_plog_offset, 1,
        "the probe's offset is not taken for the stored one"
    );
    s.fail(w.ticket, ms(800)).unwrap();
    assert_eq!(
        s.poll_timeout(),
        Some(ms(900)),
        "the backoff started over: the first delay, and no probe"
    );
}

#[test]
fn any_storage_success_resets_the_backoff_and_pulls_the_retry_forward() {
    let mut s = with_unwritten_event();
    for t in [0, 100, 300, 700] {
        fail_write_at(&mut s, t);
    }
    // A numbers read succeeds at 750 ms (a start on a workspace not in memory).
    let Ok(Start::Load(read)) = s.start(1, 2) else {
        panic!("workspace 2 is not in memory");
    };
    assert!(matches!(
        s.complete_numbers(read.ticket, &[0]),
        Ok(Start::Started(2))
    ));
    assert_eq!(
        s.poll_timeout(),
        Some(ms(800)),
        "the retry set at 700 ms waits no longer than 800 ms, and no probe is wanted"
    );
    assert_eq!(s.poll_work(ms(799)), None);
    fail_write_at(&mut s, 800);
    assert_eq!(s.poll_timeout(), Some(ms(900)), "the backoff started over");
}

#[test]
fn a_refused_report_is_no_storage_success() {
    let mut s = with_unwritten_event();
    for t in [0, 100, 300, 700] {
        fail_write_at(&mut s, t);
    }
    let Ok(Start::Load(read)) = s.start(1, 2) else {
        panic!("workspace 2 is not in memory");
    };
    assert!(
        s.complete_numbers(read.ticket, &[0, 0]).is_err(),
        "malformed"
    );
    assert_eq!(
        s.poll_timeout(),
        Some(ms(800)),
        "still the probe, the retry at 1500 ms"
    );
    let probe = probe_at(&mut s, 800);
    assert!(s.complete_write(probe).is_err(), "a probe is not a write");
    assert_eq!(s.poll_timeout(), Some(ms(1500)), "the probe is still out");
}

#[test]
fn with_no_success_the_wait_still_doubles_to_the_cap_while_probes_go_at_the_first_delay() {
    let mut s = with_unwritten_event();
    let seen = schedule_while_down(&mut s, 4700);
    let writes: Vec<u64> = seen
        .iter()
        .filter(|(k, _)| *k == 'W')
        .map(|&(_, t)| t)
        .collect();
    assert_eq!(
        writes,
        vec![0, 100, 300, 700, 1500, 3100, 4700],
        "capped at 1.6 s"
    );
    let probes: Vec<u64> = seen
        .iter()
        .filter(|(k, _)| *k == 'P')
        .map(|&(_, t)| t)
        .collect();
    let mut expected = vec![200];
    expected.extend((400..=600).step_by(100));
    expected.extend((800..=1400).step_by(100));
    expected.extend((1600..=3000).step_by(100));
    expected.extend((3200..=4600).step_by(100));
    assert_eq!(
        probes, expected,
        "one probe per first delay, none in a short wait"
    );
}

/// A sequencer whose stored-offset read failed at 0, 100 and 300 ms: its retry is at 700 ms.
fn with_failing_offset_read() -> Sequencer {
    let mut s = Sequencer::new(params()).unwrap();
    for t in [0, 100, 300] {
        let Some(Work::ReadNextOffset { ticket }) = s.poll_work(ms(t)) else {
            panic!("the stored offset read is due at {t} ms");
        };
        s.fail(ticket, ms(t)).unwrap();
    }
    s
}

#[test]
fn a_successful_probe_pulls_the_actualizer_retry_forward() {
    let mut s = with_failing_offset_read();
    assert_eq!(
        s.poll_timeout(),
        Some(ms(400)),
        "a probe; the read's retry is at 700 ms"
    );
    let probe = probe_at(&mut s, 400);
    s.complete_next_offset(probe, 9).unwrap();
    assert_eq!(
        s.status(),
        Status::Actualizing,
        "a probe is not the actualizer's read"
    );
    let Some(Work::ReadNextOffset { ticket }) = s.poll_work(ms(400)) else {
        panic!("the actualizer's read goes as soon as storage answered");
    };
    assert_ne!(ticket, probe);
    s.fail(ticket, ms(400)).unwrap();
    assert_eq!(s.poll_timeout(), Some(ms(500)), "its backoff started over");
}

#[test]
fn the_actualizer_waits_for_a_probe_in_flight_one_read_at_a_time() {
    let mut s = with_failing_offset_read();
    let probe = probe_at(&mut s, 400);
    assert_eq!(
        s.poll_work(ms(800)),
        None,
        "the read's retry is due, but the probe is out"
    );
    assert_eq!(
        s.poll_timeout(),
        None,
        "only the probe's report can make work due"
    );
    s.fail(probe, ms(800)).unwrap();
    assert!(
        matches!(s.poll_work(ms(800)), Some(Work::ReadNextOffset { ticket }) if ticket != probe)
    );
}

#[test]
fn no_probe_while_a_write_is_out_and_a_write_success_pulls_the_actualizer_retry_forward() {
    let mut s = Sequencer::new(params().with_max_unflushed_values(4)).unwrap();
    let Some(Work::ReadNextOffset { ticket }) = s.poll_work(ms(0)) else {
        panic!("the stored offset read");
    };
    s.complete_next_offset(ticket, 0).unwrap();
    let Some(Work::ReadPlog { ticket, .. }) = s.poll_work(ms(0)) else {
        panic!("a PLog read");
    };
    let values = [(1, SeqValue::new(1, 1, 1)), (2, SeqValue::new(2, 1, 1))];
    let page = PlogPage {
        values: &values,
        next: 3,
        end: false,
    };
    s.complete_plog_read(ticket, page, ms(0)).unwrap();
    let Some(Work::Write(write)) = s.poll_work(ms(0)) else {
        panic!("half the limit waits: a write during the replay");
    };
    for t in [0, 100, 300] {
        let Some(Work::ReadPlog { ticket, .. }) = s.poll_work(ms(t)) else {
            panic!("the PLog read is due at {t} ms");
        };
        s.fail(ticket, ms(t)).unwrap();
    }
    assert_eq!(
        s.poll_timeout(),
        Some(ms(700)),
        "no probe: the write out will answer first"
    );
    assert_eq!(s.poll_work(ms(650)), None);
    s.complete_write(write.ticket).unwrap();
    assert!(
        matches!(s.poll_work(ms(650)), Some(Work::ReadPlog { from: 3, .. })),
        "the write's success brought the read's retry forward to 400 ms"
    );
}

#[test]
fn no_probe_after_cleanup() {
    let mut s = with_unwritten_event();
    fail_write_at(&mut s, 0);
    fail_write_at(&mut s, 100);
    assert_eq!(s.poll_timeout(), Some(ms(200)));
    s.cleanup();
    assert_eq!(s.poll_timeout(), None);
    assert_eq!(s.poll_work(ms(200)), None);
}
