//! A PLog page in the flat layout (`PlogWords`, the WIT's `deliver-plog-words`) replays exactly
//! as the same page as a `PlogPage`; a malformed flat page is refused and changes nothing.

use proptest::prelude::*;
use sequencer::{
    Error, Instant, PLOG_WORDS_PER_VALUE, PLogOffset, Params, PlogPage, PlogWords, ReplayProgress,
    SeqValue, Sequencer, Start, Status, Ticket, Work,
};

const SEQS: [u16; 3] = [1, 2, 3];

fn params(max_unflushed: usize) -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 50)
        .with_seq(1, 3, 7)
        .with_max_unflushed_values(max_unflushed)
}

/// The PLog as replay reads it: each event's offset and values (offsets dense from 1).
type Plog = Vec<(PLogOffset, Vec<SeqValue>)>;

/// The page of up to `max_events` events from `from` on, flattened.
fn page(plog: &Plog, from: PLogOffset, max_events: usize) -> (Vec<(u64, SeqValue)>, u64, bool) {
    let events: Vec<_> = plog.iter().filter(|(o, _)| *o >= from).collect();
    let taken = &events[..events.len().min(max_events)];
    let values = taken
        .iter()
        .flat_map(|(o, vs)| vs.iter().map(move |v| (*o, *v)))
        .collect();
    let next = taken.last().map_or(from, |(o, _)| o + 1);
    (values, next, taken.len() == events.len())
}

/// One sequencer replaying through one of the two page layouts.
struct Side {
    seq: Sequencer,
    flat: bool,
}

impl Side {
    fn new(max_unflushed: usize, flat: bool) -> Self {
        Self {
            seq: Sequencer::new(params(max_unflushed)).expect("valid params"),
            flat,
        }
    }

    fn deliver(
        &mut self, ticket: Ticket, values: &[(u64, SeqValue)], next: u64, end: bool,
    ) -> Result<ReplayProgress, Error> {
        let now = Instant::default();
        if self.flat {
            let mut words = Vec::new();
            PlogWords::encode_into(values, &mut words);
            let page = PlogWords {
                words: &words,
                next,
                end,
            };
            self.seq.complete_plog_words(ticket, page, now)
        } else {
            let page = PlogPage { values, next, end };
            self.seq.complete_plog_read(ticket, page, now)
        }
    }
}

/// Work in a comparable form: a write's values sorted (their order comes from a hash map).
fn comparable(work: Option<Work>) -> Option<Work> {
    match work {
        Some(Work::Write(mut w)) => {
            w.values.sort_by_key(|v| (v.key.ws, v.key.seq, v.value));
            Some(Work::Write(w))
        }
        other => other,
    }
}

/// Drives both sides in lockstep until ready: the same work asked, the same progress per
/// page, writes completed every `complete_writes_every` steps.
fn replay_both(plog: &Plog, page_events: usize, max_unflushed: usize, complete_every: usize) {
    let mut a = Side::new(max_unflushed, false);
    let mut b = Side::new(max_unflushed, true);
    let mut writes: Vec<Ticket> = Vec::new();
    let now = Instant::default();
    for step in 0..100_000 {
        if a.seq.status() == Status::Ready {
            break;
        }
        if step % complete_every == 0 {
            for t in writes.drain(..) {
                a.seq.complete_write(t).expect("write a");
                b.seq.complete_write(t).expect("write b");
            }
        }
        let wa = comparable(a.seq.poll_work(now));
        let wb = comparable(b.seq.poll_work(now));
        assert_eq!(wa, wb, "both layouts ask for the same work");
        match wa {
            Some(Work::ReadNextOffset { ticket }) => {
                a.seq.complete_next_offset(ticket, 0).expect("offset a");
                b.seq.complete_next_offset(ticket, 0).expect("offset b");
            }
            Some(Work::ReadPlog { ticket, from }) => {
                let (values, next, end) = page(plog, from, page_events);
                let pa = a.deliver(ticket, &values, next, end).expect("page a");
                let pb = b.deliver(ticket, &values, next, end).expect("page b");
                assert_eq!(pa, pb, "the same progress through the page");
            }
            Some(Work::Write(w)) => writes.push(w.ticket),
            None => {
                // Held back by max_unflushed: only a completed write lets replay go on.
                for t in writes.drain(..) {
                    a.seq.complete_write(t).expect("write a");
                    b.seq.complete_write(t).expect("write b");
                }
            }
        }
        assert_eq!(a.seq.status(), b.seq.status());
        assert_eq!(a.seq.held_numbers(), b.seq.held_numbers());
    }
    assert_eq!(a.seq.status(), Status::Ready, "replay finished");
    // The numbers each workspace continues from are the same.
    for ws in 0..8 {
        let sa = a.seq.start(1, ws).expect("start a");
        let sb = b.seq.start(1, ws).expect("start b");
        assert_eq!(sa, sb);
        if let Start::Started(_) = sa {
            for s in SEQS {
                assert_eq!(a.seq.next(s), b.seq.next(s), "ws {ws} seq {s}");
            }
            a.seq.flush().expect("flush a");
            b.seq.flush().expect("flush b");
        }
    }
}

fn plog_strategy() -> impl Strategy<Value = Plog> {
    let event = prop::collection::vec((0u64..8, 0usize..3, 1u64..1_000), 0..5);
    prop::collection::vec(event, 0..60).prop_map(|events| {
        events
            .into_iter()
            .enumerate()
            .map(|(i, vs)| {
                let values = vs
                    .into_iter()
                    .map(|(ws, s, v)| SeqValue::new(ws, SEQS[s], v))
                    .collect();
                (i as u64 + 1, values)
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn a_flat_page_replays_exactly_as_the_same_page_of_records(
        plog in plog_strategy(),
        page_events in 1usize..20,
        max_unflushed in 1usize..40,
        complete_every in 1usize..4,
    ) {
        replay_both(&plog, page_events, max_unflushed, complete_every);
    }
}

/// A sequencer waiting for its first PLog page (from offset 1).
fn awaiting_page() -> (Sequencer, Ticket) {
    let mut s = Sequencer::new(params(100)).expect("valid params");
    let now = Instant::default();
    let Some(Work::ReadNextOffset { ticket }) = s.poll_work(now) else {
        panic!("expected an offset read")
    };
    s.complete_next_offset(ticket, 0).expect("offset");
    let Some(Work::ReadPlog { ticket, from: 1 }) = s.poll_work(now) else {
        panic!("expected a PLog read from 1")
    };
    (s, ticket)
}

#[test]
fn a_malformed_flat_page_is_refused_and_the_read_stays_outstanding() {
    let (mut s, ticket) = awaiting_page();
    let now = Instant::default();
    let good = [1, 5, 1, 40, 2, 5, 2, 60];
    let malformed: [(&[u64], &str); 5] = [
        (&good[..7], "a length not a multiple of four"),
        (&good[..1], "a single word"),
        (&[1, 5, 70_000, 40], "a sequence above u16::MAX"),
        (&[2, 5, 1, 40, 1, 5, 1, 41], "offsets going backwards"),
        (&[3, 5, 1, 40], "an offset not below next"),
    ];
    for (words, what) in malformed {
        let page = PlogWords {
            words,
            next: 3,
            end: true,
        };
        assert!(
            matches!(
                s.complete_plog_words(ticket, page, now),
                Err(Error::MalformedPlogPage { from: 1, .. })
            ),
            "{what} is a malformed page"
        );
        assert_eq!(s.status(), Status::Actualizing, "{what} changed the status");
        assert_eq!(s.held_numbers().unflushed, 0, "{what} raised a value");
    }
    assert_eq!(good.len() % PLOG_WORDS_PER_VALUE, 0);
    let page = PlogWords {
        words: &good,
        next: 3,
        end: true,
    };
    let progress = s
        .complete_plog_words(ticket, page, now)
        .expect("the good page");
    assert!(progress.finished);
    assert_eq!(progress.consumed, 2);
    assert_eq!(s.status(), Status::Ready);
    assert_eq!(
        s.held_numbers().unflushed,
        2,
        "both values wait to be written"
    );
}

#[test]
fn a_flat_page_for_the_wrong_ticket_is_refused_like_a_page_of_records() {
    let (mut s, ticket) = awaiting_page();
    let now = Instant::default();
    let words = [1, 5, 1, 40];
    let wrong = Ticket(ticket.0 + 100);
    let flat = s.complete_plog_words(
        wrong,
        PlogWords {
            words: &words,
            next: 2,
            end: true,
        },
        now,
    );
    let records = s.complete_plog_read(
        wrong,
        PlogPage {
            values: &[(1, SeqValue::new(5, 1, 40))],
            next: 2,
            end: true,
        },
        now,
    );
    assert_eq!(flat, Err(Error::UnknownTicket(wrong)));
    assert_eq!(flat, records);
}
