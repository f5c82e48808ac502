//! The WIT's `instance` interface through the compiled component: the calls of the `sequencer`
//! resource without a handle reach the sequencer `create` made last in the instance, with the
//! same outcomes; with no sequencer (before `create`, after its resource is dropped) they are
//! refused with `cleaned-up`, never a trap, and the instance stays usable.

use std::sync::OnceLock;

use sequencer::Params;
use sequencer_guest_tests::sim::io::{Effect, Io, NumbersAnswer};
use sequencer_host::runtime::bindings::PlogPage;
use sequencer_host::runtime::link::{Limits, Linked, component_path, guest_params};
use sequencer_host::runtime::{GuestError, Outcome, Refusal};
use sequencer_host::{StartOutcome, Status};

fn linked() -> &'static Linked<Io> {
    static LINKED: OnceLock<Linked<Io>> = OnceLock::new();
    LINKED.get_or_init(|| {
        Linked::from_file(&component_path(), Limits::default())
            .expect("the component (build it first: bash scripts/build-component.sh)")
    })
}

fn params() -> Params {
    Params::new().with_seq(1, 1, 1).with_seq(1, 2, 50)
}

/// An instance whose sequencer is ready: created, then actualized from an empty store.
fn ready() -> sequencer_host::runtime::link::Instance<Io> {
    let mut i = linked()
        .create(Io::default(), &guest_params(&params()))
        .expect("no trap")
        .expect("created");
    actualize_empty(&mut i);
    i
}

/// Actualizes the instance's sequencer from an empty store through the `instance` calls: the
/// stored offset is 0, the PLog is empty.
fn actualize_empty(i: &mut sequencer_host::runtime::link::Instance<Io>) {
    let api = i.plugin.sequencer_plugin_instance();
    let ops = begun(&mut i.store);
    assert_eq!(ops.len(), 1, "create asked for the stored offset");
    api.call_deliver(&mut i.store, ops[0], &Outcome::NextOffset(0))
        .expect("no trap")
        .expect("offset delivered");
    let ops = begun(&mut i.store);
    let page = PlogPage {
        values: Vec::new(),
        next: 1,
        end: true,
    };
    api.call_deliver(&mut i.store, ops[0], &Outcome::PlogPage(page))
        .expect("no trap")
        .expect("page delivered");
}

/// The operations of the work the guest began since the last look.
fn begun(store: &mut wasmtime::Store<sequencer_host::runtime::link::StoreData<Io>>) -> Vec<u64> {
    let effects = std::mem::take(&mut store.data_mut().host.effects);
    effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::Begin(w) => Some(op(w)),
            _ => None,
        })
        .collect()
}

fn op(w: sequencer::Work) -> u64 {
    match w {
        sequencer::Work::Write(w) => w.ticket.0,
        sequencer::Work::ReadNextOffset { ticket } | sequencer::Work::ReadPlog { ticket, .. } => {
            ticket.0
        }
    }
}

#[test]
fn instance_calls_reach_the_sequencer_create_made_and_number_as_its_methods_do() {
    let mut i = ready();
    let api = i.plugin.sequencer_plugin_instance();
    let (started, status) = api
        .call_start_status(&mut i.store, 1, 7)
        .expect("no trap")
        .expect("started");
    assert!(matches!(
        (started, status),
        (StartOutcome::Started(1), Status::InTransaction)
    ));
    let n1 = api.call_next(&mut i.store, 1).expect("no trap");
    let n2 = api.call_next(&mut i.store, 2).expect("no trap");
    assert!(matches!((n1, n2), (Ok(1), Ok(50))));
    // The resource's method sees the same sequencer, mid-transaction.
    let resource = i.plugin.sequencer_plugin_sequencer_api().sequencer();
    assert!(matches!(
        resource
            .call_status(&mut i.store, i.handle)
            .expect("no trap"),
        Status::InTransaction
    ));
    assert!(matches!(
        api.call_flush_status(&mut i.store).expect("no trap"),
        Ok(Status::Ready)
    ));
    // A refusal is the method's refusal, without its payload; `last-error` gives it whole.
    assert!(matches!(
        api.call_next(&mut i.store, 1).expect("no trap"),
        Err(Refusal::NoTransaction)
    ));
    assert!(matches!(
        api.call_last_error(&mut i.store).expect("no trap"),
        Some(GuestError::NoTransaction)
    ));
    let (started, _) = api
        .call_start_status(&mut i.store, 1, 7)
        .expect("no trap")
        .expect("started");
    assert!(matches!(started, StartOutcome::Started(2)));
    assert!(matches!(
        api.call_next(&mut i.store, 1).expect("no trap"),
        Ok(2)
    ));
}

#[test]
fn without_a_sequencer_instance_calls_are_refused_as_cleaned_up_and_nothing_traps() {
    let (mut store, plugin) = linked().instantiate(Io::default()).expect("instantiated");
    let api = plugin.sequencer_plugin_instance();
    // Before `create`.
    assert!(matches!(
        api.call_status(&mut store).expect("no trap"),
        Status::CleanedUp
    ));
    assert!(matches!(
        api.call_start(&mut store, 1, 7).expect("no trap"),
        Err(Refusal::CleanedUp)
    ));
    assert!(matches!(
        api.call_last_error(&mut store).expect("no trap"),
        Some(GuestError::CleanedUp)
    ));
    api.call_pump(&mut store).expect("no trap");
    api.call_cleanup(&mut store).expect("no trap");
    let held = api.call_held_numbers(&mut store).expect("no trap");
    assert_eq!((held.cached, held.unflushed, held.transaction), (0, 0, 0));
    // After `create`, the sequencer answers; once its resource is dropped, it is gone again.
    let handle = plugin
        .sequencer_plugin_sequencer_api()
        .sequencer()
        .call_create(&mut store, &guest_params(&params()))
        .expect("no trap")
        .expect("created");
    assert!(matches!(
        api.call_status(&mut store).expect("no trap"),
        Status::Actualizing
    ));
    handle.resource_drop(&mut store).expect("dropped");
    assert!(matches!(
        api.call_status(&mut store).expect("no trap"),
        Status::CleanedUp
    ));
    assert!(matches!(
        api.call_flush(&mut store).expect("no trap"),
        Err(Refusal::CleanedUp)
    ));
}

#[test]
fn last_error_gives_the_full_error_of_the_last_refusal_with_its_payload_and_text() {
    let (mut store, plugin) = linked().instantiate(Io::default()).expect("instantiated");
    let api = plugin.sequencer_plugin_instance();
    assert!(
        api.call_last_error(&mut store).expect("no trap").is_none(),
        "nothing refused yet"
    );
    let mut i = ready();
    let api = i.plugin.sequencer_plugin_instance();
    // A payload: the sequence a `next` named.
    api.call_start(&mut i.store, 1, 7)
        .expect("no trap")
        .expect("started");
    assert!(matches!(
        api.call_next(&mut i.store, 9).expect("no trap"),
        Err(Refusal::UnknownSeqId)
    ));
    let error = api.call_last_error(&mut i.store).expect("no trap");
    assert!(
        matches!(error, Some(GuestError::UnknownSeqId(r)) if (r.kind, r.seq) == (1, 9)),
        "{error:?}"
    );
    // A later success keeps it.
    assert!(matches!(
        api.call_next(&mut i.store, 1).expect("no trap"),
        Ok(1)
    ));
    assert!(matches!(
        api.call_last_error(&mut i.store).expect("no trap"),
        Some(GuestError::UnknownSeqId(_))
    ));
    api.call_flush(&mut i.store)
        .expect("no trap")
        .expect("flushed");
    // A text: the storage's own message, as the resource's method gives it.
    i.store.data_mut().host.numbers = NumbersAnswer::Fail("disk on fire".into());
    assert!(matches!(
        api.call_start(&mut i.store, 1, 8).expect("no trap"),
        Err(Refusal::Storage)
    ));
    let error = api.call_last_error(&mut i.store).expect("no trap");
    assert!(
        matches!(&error, Some(GuestError::Storage(m)) if m.contains("disk on fire")),
        "{error:?}"
    );
    let method = i
        .plugin
        .sequencer_plugin_sequencer_api()
        .sequencer()
        .call_start(&mut i.store, i.handle, 1, 8)
        .expect("no trap");
    assert_eq!(
        format!("{:?}", method.err()),
        format!("{error:?}"),
        "the method's error"
    );
}

#[test]
fn a_second_create_makes_the_new_sequencer_the_instances() {
    let mut i = ready();
    let api = i.plugin.sequencer_plugin_instance();
    assert!(matches!(
        api.call_status(&mut i.store).expect("no trap"),
        Status::Ready
    ));
    let second = i
        .plugin
        .sequencer_plugin_sequencer_api()
        .sequencer()
        .call_create(&mut i.store, &guest_params(&params()))
        .expect("no trap")
        .expect("created");
    assert!(
        matches!(
            api.call_status(&mut i.store).expect("no trap"),
            Status::Actualizing
        ),
        "the instance's sequencer is the new one"
    );
    // Dropping the first one's resource leaves the second the instance's.
    i.handle.resource_drop(&mut i.store).expect("dropped");
    assert!(matches!(
        api.call_status(&mut i.store).expect("no trap"),
        Status::Actualizing
    ));
    second.resource_drop(&mut i.store).expect("dropped");
    assert!(matches!(
        api.call_status(&mut i.store).expect("no trap"),
        Status::CleanedUp
    ));
}

/// `seqs` as a `seq-quad` (at most four).
fn quad(seqs: &[u16]) -> sequencer_host::runtime::SeqQuad {
    sequencer_host::runtime::SeqQuad::of(seqs).expect("at most four")
}

#[test]
fn start_ahead_answers_what_next_would_and_the_take_calls_take_just_those() {
    let mut i = ready();
    let api = i.plugin.sequencer_plugin_instance();
    // Sequence 9 is not kind 1's: no number ahead for it (0), as `next` would refuse it.
    let a = api
        .call_start_ahead(&mut i.store, 1, 7, quad(&[2, 1, 9]))
        .expect("no trap")
        .expect("started");
    assert!(matches!(a.outcome, StartOutcome::Started(1)));
    assert!(matches!(a.status, Status::InTransaction));
    assert_eq!((a.n0, a.n1, a.n2, a.n3), (50, 1, 0, 0));
    // Nothing was taken: `next` hands out the same numbers.
    assert!(matches!(
        api.call_next(&mut i.store, 1).expect("no trap"),
        Ok(1)
    ));
    // A take naming an unknown sequence is refused and takes nothing, not even sequence 2.
    assert!(matches!(
        api.call_take(&mut i.store, quad(&[2, 9])).expect("no trap"),
        Err(Refusal::UnknownSeqId)
    ));
    // Sequence 2's 50 was handed out ahead: `take-next` takes it, then numbers 2 again.
    assert!(matches!(
        api.call_take_next(&mut i.store, quad(&[2]), 2)
            .expect("no trap"),
        Ok(51)
    ));
    // A refused `next` after the take keeps the take: 1's number 2 stays taken.
    assert!(matches!(
        api.call_take_next(&mut i.store, quad(&[1]), 9)
            .expect("no trap"),
        Err(Refusal::UnknownSeqId)
    ));
    assert!(matches!(
        api.call_take_flush(&mut i.store, quad(&[]))
            .expect("no trap"),
        Ok(Status::Ready)
    ));
    // The flush consumed 1 → 2 and 2 → 51: the next transaction goes on after them.
    let a = api
        .call_start_ahead(&mut i.store, 1, 7, quad(&[1, 2]))
        .expect("no trap")
        .expect("started");
    assert!(matches!(a.outcome, StartOutcome::Started(2)));
    assert_eq!((a.n0, a.n1), (3, 52));
    assert!(matches!(
        api.call_take_flush(&mut i.store, quad(&[1, 2]))
            .expect("no trap"),
        Ok(Status::Ready)
    ));
    // With no transaction: nothing ahead, and a take of a sequence is refused.
    assert!(matches!(
        api.call_take(&mut i.store, quad(&[1])).expect("no trap"),
        Err(Refusal::NoTransaction)
    ));
    // More than four sequences is refused before anything is done.
    let five = sequencer_host::runtime::SeqQuad {
        count: 5,
        s0: 1,
        s1: 2,
        s2: 1,
        s3: 2,
    };
    assert!(matches!(
        api.call_start_ahead(&mut i.store, 1, 7, five)
            .expect("no trap"),
        Err(Refusal::InvalidParams)
    ));
    let a = api
        .call_start_ahead(&mut i.store, 1, 7, quad(&[1]))
        .expect("no trap")
        .expect("started");
    assert!(matches!(a.outcome, StartOutcome::Started(3)));
    assert_eq!(a.n0, 4);
}

#[test]
fn take_flush_start_ahead_flushes_with_the_numbers_taken_then_starts_or_changes_nothing() {
    let mut i = ready();
    let api = i.plugin.sequencer_plugin_instance();
    // With no transaction the flush is refused and nothing starts.
    assert!(matches!(
        api.call_take_flush_start_ahead(&mut i.store, quad(&[]), 1, 7, quad(&[1]))
            .expect("no trap"),
        Err(Refusal::NoTransaction)
    ));
    let a = api
        .call_start_ahead(&mut i.store, 1, 7, quad(&[1, 2]))
        .expect("no trap")
        .expect("started");
    assert!(matches!(a.outcome, StartOutcome::Started(1)));
    assert_eq!((a.n0, a.n1), (1, 50));
    // A take naming an unknown sequence is refused: no flush, no start, nothing taken.
    assert!(matches!(
        api.call_take_flush_start_ahead(&mut i.store, quad(&[1, 9]), 1, 8, quad(&[1]))
            .expect("no trap"),
        Err(Refusal::UnknownSeqId)
    ));
    assert!(matches!(
        api.call_status(&mut i.store).expect("no trap"),
        Status::InTransaction
    ));
    // Both numbers were handed out: the flush takes them, and the next transaction (another
    // workspace, then the same one) goes on after them.
    let a = api
        .call_take_flush_start_ahead(&mut i.store, quad(&[1, 2]), 1, 7, quad(&[2, 1]))
        .expect("no trap")
        .expect("flushed and started");
    assert!(matches!(a.outcome, StartOutcome::Started(2)));
    assert!(matches!(a.status, Status::InTransaction));
    assert_eq!((a.n0, a.n1), (51, 2));
    // An error from the start comes after the flush: the transaction is done, none is open.
    assert!(matches!(
        api.call_take_flush_start_ahead(&mut i.store, quad(&[]), 99, 7, quad(&[1]))
            .expect("no trap"),
        Err(Refusal::UnknownWsKind)
    ));
    assert!(matches!(
        api.call_status(&mut i.store).expect("no trap"),
        Status::Ready
    ));
    let a = api
        .call_start_ahead(&mut i.store, 1, 7, quad(&[1]))
        .expect("no trap")
        .expect("started");
    assert!(matches!(a.outcome, StartOutcome::Started(3)));
    // Nothing of transaction 2 was handed out: its numbers are handed out again.
    assert_eq!(a.n0, 2);
}

#[test]
fn start_event_ahead_answers_the_record_ids_the_facade_would_hand_out() {
    use sequencer::facade::{self, FIRST_CREC_ID, FIRST_REC_ID, SEQ_CREC_ID, SEQ_REC_ID};
    use sequencer_host::runtime::bindings::{EventOffsets, EventStart};
    let mut i = linked()
        .create(
            Io::default(),
            &guest_params(&facade::system_params(Params::new())),
        )
        .expect("no trap")
        .expect("created");
    actualize_empty(&mut i);
    let events = i.plugin.sequencer_plugin_events();
    let api = i.plugin.sequencer_plugin_instance();
    let quad = quad(&[SEQ_REC_ID, SEQ_CREC_ID, SEQ_REC_ID]);
    let a = events
        .call_start_event_ahead(&mut i.store, i.handle, 7, quad)
        .expect("no trap")
        .expect("started");
    assert!(matches!(
        a.start,
        EventStart::Started(EventOffsets {
            plog_offset: 1,
            wlog_offset: 1
        })
    ));
    assert_eq!(
        (a.n0, a.n1, a.n2, a.n3),
        (FIRST_REC_ID, FIRST_CREC_ID, FIRST_REC_ID + 1, 0)
    );
    // Nothing was taken: the facade's call hands out the first record id.
    assert!(matches!(
        events.call_next_rec_id(&mut i.store, i.handle).expect("no trap"),
        Ok(n) if n == FIRST_REC_ID
    ));
    // The C record id handed out ahead, reported with the finish.
    assert!(matches!(
        api.call_take_flush(&mut i.store, self::quad(&[SEQ_CREC_ID]))
            .expect("no trap"),
        Ok(Status::Ready)
    ));
    let a = events
        .call_start_event_ahead(
            &mut i.store,
            i.handle,
            7,
            self::quad(&[SEQ_REC_ID, SEQ_CREC_ID]),
        )
        .expect("no trap")
        .expect("started");
    assert_eq!((a.n0, a.n1), (FIRST_REC_ID + 1, FIRST_CREC_ID + 1));
}

#[test]
fn actualize_beside_write_reads_the_offset_at_once_where_actualize_waits_for_the_write() {
    for beside in [false, true] {
        let mut i = ready();
        let api = i.plugin.sequencer_plugin_instance();
        assert!(matches!(
            api.call_start(&mut i.store, 1, 7).expect("no trap"),
            Ok(StartOutcome::Started(1))
        ));
        api.call_next(&mut i.store, 1)
            .expect("no trap")
            .expect("a number");
        api.call_flush(&mut i.store)
            .expect("no trap")
            .expect("flushed");
        let write = begun(&mut i.store);
        assert_eq!(write.len(), 1, "the flusher's write is out");
        let called = if beside {
            api.call_actualize_beside_write(&mut i.store)
        } else {
            api.call_actualize(&mut i.store)
        };
        called.expect("no trap").expect("actualizing");
        let reads = begun(&mut i.store);
        assert_eq!(reads.len(), usize::from(beside), "beside: {beside}");
        // Refused while actualizing, as `actualize` is.
        assert!(matches!(
            api.call_actualize_beside_write(&mut i.store)
                .expect("no trap"),
            Err(Refusal::AlreadyActualizing)
        ));
        api.call_deliver(&mut i.store, write[0], &Outcome::Written)
            .expect("no trap")
            .expect("written");
        if !beside {
            assert_eq!(begun(&mut i.store).len(), 1, "the read, once written");
        }
    }
}
