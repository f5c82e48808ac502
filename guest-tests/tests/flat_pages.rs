//! `deliver-plog-words` through the compiled component: a PLog page in the flat layout replays
//! exactly as the same page through `deliver` (the same work asked, the same numbers after),
//! and a malformed flat page is a typed refusal that changes nothing, never a trap.

use std::sync::OnceLock;

use sequencer::testkit::Rng;
use sequencer::{Params, SeqValue, Work};
use sequencer_guest_tests::sim::io::{Effect, Io};
use sequencer_host::runtime::link::{
    Instance, Limits, Linked, component_path, guest_params, plog_words, wit_page,
};
use sequencer_host::runtime::{GuestError, HeldNumbers, Outcome, SeqQuad};
use sequencer_host::{StartOutcome, Status};

const SEQS: [u16; 3] = [1, 2, 3];
const WORKSPACES: u64 = 40;

fn linked() -> &'static Linked<Io> {
    static LINKED: OnceLock<Linked<Io>> = OnceLock::new();
    LINKED.get_or_init(|| {
        Linked::from_file(&component_path(), Limits::default())
            .expect("the component (build it first: bash scripts/build-component.sh)")
    })
}

fn params(max_unflushed: usize) -> Params {
    Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 50)
        .with_seq(1, 3, 7)
        .with_max_unflushed_values(max_unflushed)
}

/// A random PLog: events at offsets 1.., each with up to four values.
fn random_plog(rng: &mut Rng, events: u64) -> Vec<(u64, Vec<SeqValue>)> {
    (1..=events)
        .map(|offset| {
            let values = (0..rng.below(5))
                .map(|_| {
                    let ws = rng.below(WORKSPACES);
                    let seq = SEQS[rng.below(3) as usize];
                    SeqValue::new(ws, seq, rng.range(1, 1_000_000))
                })
                .collect();
            (offset, values)
        })
        .collect()
}

/// The values of up to `max_events` events from `from` on, flattened, the offset after them,
/// and whether the PLog ends there.
fn page(
    plog: &[(u64, Vec<SeqValue>)], from: u64, max_events: usize,
) -> (Vec<(u64, SeqValue)>, u64, bool) {
    let rest: Vec<_> = plog.iter().filter(|(o, _)| *o >= from).collect();
    let taken = &rest[..rest.len().min(max_events)];
    let values = taken
        .iter()
        .flat_map(|(o, vs)| vs.iter().map(move |v| (*o, *v)))
        .collect();
    (
        values,
        taken.last().map_or(from, |(o, _)| o + 1),
        taken.len() == rest.len(),
    )
}

/// One instance that replays through one of the two layouts.
struct Side {
    i: Instance<Io>,
    flat: bool,
}

impl Side {
    fn create(max_unflushed: usize, flat: bool) -> Self {
        let i = linked()
            .create(Io::default(), &guest_params(&params(max_unflushed)))
            .expect("no trap")
            .expect("created");
        Self { i, flat }
    }

    /// What the guest asked of its host since the last take.
    fn effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.i.store.data_mut().host.effects)
    }

    fn deliver(&mut self, op: u64, outcome: &Outcome) -> Result<(), GuestError> {
        let api = self.i.plugin.sequencer_plugin_sequencer_api().sequencer();
        api.call_deliver(&mut self.i.store, self.i.handle, op, outcome)
            .expect("no trap")
    }

    fn deliver_page(&mut self, op: u64, values: &[(u64, SeqValue)], next: u64, end: bool) {
        let replied = if self.flat {
            let api = self.i.plugin.sequencer_plugin_sequencer_api().sequencer();
            api.call_deliver_plog_words(
                &mut self.i.store,
                self.i.handle,
                op,
                &plog_words(values),
                next,
                end,
            )
            .expect("no trap")
        } else {
            self.deliver(op, &Outcome::PlogPage(wit_page(values, next, end)))
        };
        replied.expect("the page is accepted");
    }

    fn words(&mut self, op: u64, words: &[u64], next: u64) -> Result<(), GuestError> {
        let api = self.i.plugin.sequencer_plugin_sequencer_api().sequencer();
        api.call_deliver_plog_words(&mut self.i.store, self.i.handle, op, words, next, true)
            .expect("a malformed page is a refusal, not a trap")
    }

    fn status(&mut self) -> Status {
        let api = self.i.plugin.sequencer_plugin_sequencer_api().sequencer();
        api.call_status(&mut self.i.store, self.i.handle)
            .expect("no trap")
    }

    /// `held-numbers`: cached, unflushed, in the transaction.
    fn held(&mut self) -> (u32, u32, u32) {
        let api = self.i.plugin.sequencer_plugin_sequencer_api().sequencer();
        let h: HeldNumbers = api
            .call_held_numbers(&mut self.i.store, self.i.handle)
            .expect("no trap");
        (h.cached, h.unflushed, h.transaction)
    }

    /// One event in `ws` taking a number of each sequence, flushed: its offset and numbers.
    fn event(&mut self, ws: u64) -> (u64, [u64; 3]) {
        let api = self.i.plugin.sequencer_plugin_sequencer_api().sequencer();
        let quad = SeqQuad {
            count: 3,
            s0: 1,
            s1: 2,
            s2: 3,
            s3: 0,
        };
        let (store, h) = (&mut self.i.store, self.i.handle);
        let n = api
            .call_start_next_quad(&mut *store, h, 1, ws, quad)
            .expect("no trap")
            .expect("started");
        let StartOutcome::Started(offset) = n.outcome else {
            panic!("not started: {:?}", n.outcome)
        };
        api.call_flush(store, h).expect("no trap").expect("flush");
        (offset, [n.n0, n.n1, n.n2])
    }
}

/// The storage work begun among `effects` (a write's values come sorted).
fn begun(effects: Vec<Effect>) -> Vec<Work> {
    effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::Begin(w) => Some(w),
            _ => None,
        })
        .collect()
}

#[test]
fn a_flat_page_replays_through_the_component_exactly_as_the_same_page_of_records() {
    for seed in 1..=6u64 {
        let mut rng = Rng::new(seed);
        let events = rng.range(1, 400);
        let plog = random_plog(&mut rng, events);
        let page_events = rng.range(1, 64) as usize;
        let max_unflushed = rng.range(3, 200) as usize;
        let mut a = Side::create(max_unflushed, false);
        let mut b = Side::create(max_unflushed, true);
        let mut work = begun(a.effects());
        assert_eq!(work, begun(b.effects()), "seed {seed}: create");
        let mut steps = 0;
        // Until replay is done and every write it began is reported.
        while a.status() == Status::Actualizing || !work.is_empty() {
            steps += 1;
            assert!(steps < 10_000, "seed {seed}: replay ends");
            let mut next_work = Vec::new();
            for w in std::mem::take(&mut work) {
                match w {
                    Work::ReadNextOffset { ticket } => {
                        let o = Outcome::NextOffset(0);
                        a.deliver(ticket.0, &o).expect("offset a");
                        b.deliver(ticket.0, &o).expect("offset b");
                    }
                    Work::ReadPlog { ticket, from } => {
                        let (values, next, end) = page(&plog, from, page_events);
                        a.deliver_page(ticket.0, &values, next, end);
                        b.deliver_page(ticket.0, &values, next, end);
                    }
                    Work::Write(w) => {
                        a.deliver(w.ticket.0, &Outcome::Written).expect("write a");
                        b.deliver(w.ticket.0, &Outcome::Written).expect("write b");
                    }
                }
                let (ea, eb) = (begun(a.effects()), begun(b.effects()));
                assert_eq!(ea, eb, "seed {seed}: the same work asked");
                next_work.extend(ea);
            }
            if next_work.is_empty() && a.status() == Status::Actualizing {
                // Held back by max-unflushed-values: the batcher's wake-up pumps.
                let api = a.i.plugin.sequencer_plugin_sequencer_api().sequencer();
                api.call_pump(&mut a.i.store, a.i.handle).expect("pump a");
                let api = b.i.plugin.sequencer_plugin_sequencer_api().sequencer();
                api.call_pump(&mut b.i.store, b.i.handle).expect("pump b");
                next_work = begun(a.effects());
                assert_eq!(next_work, begun(b.effects()), "seed {seed}: pumped");
            }
            work = next_work;
            assert_eq!(a.held(), b.held(), "seed {seed}: the same numbers held");
        }
        assert_eq!(b.status(), Status::Ready, "seed {seed}");
        for ws in 0..WORKSPACES {
            assert_eq!(a.event(ws), b.event(ws), "seed {seed}: ws {ws}");
            // The flush's write, reported on both.
            let (wa, wb) = (begun(a.effects()), begun(b.effects()));
            assert_eq!(wa, wb, "seed {seed}: ws {ws}: the same write");
            for w in wa {
                let op = w.ticket().0;
                a.deliver(op, &Outcome::Written).expect("write a");
                b.deliver(op, &Outcome::Written).expect("write b");
            }
            assert!(begun(a.effects()).is_empty() && begun(b.effects()).is_empty());
        }
    }
}

#[test]
fn a_malformed_flat_page_is_a_typed_refusal_that_changes_nothing() {
    let mut s = Side::create(1_000, true);
    let Some(Work::ReadNextOffset { ticket }) = begun(s.effects()).pop() else {
        panic!("expected an offset read")
    };
    s.deliver(ticket.0, &Outcome::NextOffset(0))
        .expect("offset");
    let Some(Work::ReadPlog { ticket, from: 1 }) = begun(s.effects()).pop() else {
        panic!("expected a PLog read from 1")
    };
    let op = ticket.0;
    let good = [1, 5, 1, 40, 2, 5, 2, 60];
    let before = s.held();
    let malformed: [(&[u64], &str); 5] = [
        (&good[..7], "a length not a multiple of four"),
        (&good[..3], "three words"),
        (&[1, 5, 65_536, 40], "a sequence above 65535"),
        (&[2, 5, 1, 40, 1, 5, 1, 41], "offsets going backwards"),
        (&[3, 5, 1, 40], "an offset not below next"),
    ];
    for (words, what) in malformed {
        assert!(
            matches!(s.words(op, words, 3), Err(GuestError::MalformedPlogPage(_))),
            "{what}: malformed-plog-page"
        );
        assert_eq!(s.status(), Status::Actualizing, "{what}: status unchanged");
        assert_eq!(s.held(), before, "{what}: nothing held");
        assert!(begun(s.effects()).is_empty(), "{what}: no work begun");
    }
    assert!(
        matches!(
            s.words(op + 7, &good, 3),
            Err(GuestError::UnknownOperation(_))
        ),
        "a page for an operation not outstanding"
    );
    s.words(op, &good, 3)
        .expect("the read is still outstanding: the good page is taken");
    assert_eq!(s.status(), Status::Ready);
    assert_eq!(s.held().1, 2, "its two values wait to be written");
    let (_, numbers) = s.event(5);
    assert_eq!(numbers, [41, 61, 7], "replay's numbers continue");
}
