//! Every misuse the spec answers with a panic returns its own error and changes nothing.

use sequencer::testkit::{Driver, MemStorage};
use sequencer::{
    Error, Instant, Params, ParamsError, PlogPage, SeqValue, Sequencer, Start, Status, Ticket, Work,
};

fn params() -> Params {
    Params::new().with_seq(1, 1, 1).with_seq(1, 2, 10)
}

fn ready() -> Driver {
    let mut d = Driver::new(params(), MemStorage::new()).unwrap();
    d.run().unwrap();
    d
}

#[test]
fn second_start_is_refused_and_the_first_transaction_goes_on() {
    let mut d = ready();
    assert_eq!(d.start(1, 5), Ok(Start::Started(1)));
    assert_eq!(d.seq.next(1), Ok(1));
    assert_eq!(d.seq.start(1, 6), Err(Error::TransactionInProgress));
    assert_eq!(d.seq.next(1), Ok(2));
    assert_eq!(d.seq.flush(), Ok(()));
}

#[test]
fn next_and_flush_without_start_are_refused() {
    let mut d = ready();
    assert_eq!(d.seq.next(1), Err(Error::NoTransaction));
    assert_eq!(d.seq.flush(), Err(Error::NoTransaction));
    assert_eq!(d.start(1, 5), Ok(Start::Started(1)));
    d.seq.flush().unwrap();
    assert_eq!(
        d.seq.flush(),
        Err(Error::NoTransaction),
        "flush consumed the transaction"
    );
}

#[test]
fn every_call_after_cleanup_is_refused() {
    let mut d = ready();
    assert_eq!(d.start(1, 5), Ok(Start::Started(1)));
    d.seq.cleanup();
    d.seq.cleanup(); // idempotent
    assert_eq!(d.seq.status(), Status::CleanedUp);
    assert_eq!(d.seq.start(1, 5), Err(Error::CleanedUp));
    assert_eq!(d.seq.next(1), Err(Error::CleanedUp));
    assert_eq!(d.seq.flush(), Err(Error::CleanedUp));
    assert_eq!(d.seq.actualize(), Err(Error::CleanedUp));
    assert_eq!(d.seq.complete_write(Ticket(0)), Err(Error::CleanedUp));
    assert_eq!(d.seq.poll_work(Instant::default()), None);
    assert_eq!(d.seq.poll_timeout(), None);
}

#[test]
fn unknown_workspace_kind_and_sequence_are_refused() {
    let mut d = ready();
    assert_eq!(d.seq.start(9, 5), Err(Error::UnknownWsKind(9)));
    assert_eq!(d.start(1, 5), Ok(Start::Started(1)));
    assert_eq!(d.seq.next(3), Err(Error::UnknownSeqId { kind: 1, seq: 3 }));
    assert_eq!(
        d.seq.next(2),
        Ok(10),
        "the transaction survives the refusal"
    );
}

#[test]
fn actualize_while_actualizing_is_refused() {
    let mut s = Sequencer::new(params()).unwrap();
    assert_eq!(s.status(), Status::Actualizing);
    assert_eq!(s.actualize(), Err(Error::AlreadyActualizing));
    let mut d = ready();
    d.seq.actualize().unwrap();
    assert_eq!(d.seq.actualize(), Err(Error::AlreadyActualizing));
    d.run().unwrap();
    assert_eq!(d.seq.status(), Status::Ready);
}

#[test]
fn invalid_params_are_refused_at_construction() {
    let cases = [
        (Params::new(), ParamsError::NoWorkspaceKinds),
        (
            Params::new().with_seq(1, 1, 0),
            ParamsError::ZeroInitialValue { kind: 1, seq: 1 },
        ),
        (
            params().with_max_unflushed_values(0),
            ParamsError::ZeroMaxUnflushedValues,
        ),
        (
            params().with_lru_cache_size(1),
            ParamsError::LruSmallerThanKind {
                lru_cache_size: 1,
                sequences: 2,
            },
        ),
        (
            params().with_retry_delay(
                core::time::Duration::from_secs(2),
                core::time::Duration::from_secs(1),
            ),
            ParamsError::RetryDelaysReversed,
        ),
    ];
    for (p, want) in cases {
        assert_eq!(Sequencer::new(p).err(), Some(Error::InvalidParams(want)));
    }
    let mut empty_kind = params();
    empty_kind.seq_types.insert(4, Default::default());
    assert_eq!(
        Sequencer::new(empty_kind).err(),
        Some(Error::InvalidParams(ParamsError::KindWithoutSequences {
            kind: 4
        }))
    );
}

#[test]
fn a_sequence_at_the_largest_number_is_exhausted_not_wrapped() {
    let mut s = Sequencer::new(params()).unwrap();
    let now = Instant::default();
    let Some(Work::ReadNextOffset { ticket }) = s.poll_work(now) else {
        panic!("expected an offset read")
    };
    s.complete_next_offset(ticket, 0).unwrap();
    let Some(Work::ReadPlog { ticket, from }) = s.poll_work(now) else {
        panic!("expected a PLog read")
    };
    let values = [(1, SeqValue::new(5, 1, u64::MAX))];
    let page = PlogPage {
        values: &values,
        next: 2,
        end: true,
    };
    assert_eq!(from, 1);
    s.complete_plog_read(ticket, page, now).unwrap();
    let Ok(Start::Load(read)) = s.start(1, 5) else {
        panic!("expected a load for seq 2")
    };
    assert_eq!(read.seqs, vec![2]);
    assert_eq!(s.complete_numbers(read.ticket, &[0]), Ok(Start::Started(2)));
    assert_eq!(s.next(1), Err(Error::SequenceExhausted { kind: 1, seq: 1 }));
    assert_eq!(s.next(2), Ok(10));
}

#[test]
fn malformed_and_misdirected_reports_are_refused_and_the_work_stays_outstanding() {
    let mut s = Sequencer::new(params()).unwrap();
    let now = Instant::default();
    let Some(Work::ReadNextOffset { ticket }) = s.poll_work(now) else {
        panic!("expected an offset read")
    };
    assert_eq!(
        s.complete_write(ticket),
        Err(Error::WrongResultKind {
            ticket,
            expected: "a next PLog offset read"
        })
    );
    assert_eq!(
        s.complete_next_offset(Ticket(99), 0),
        Err(Error::UnknownTicket(Ticket(99)))
    );
    assert_eq!(
        s.fail(Ticket(99), now),
        Err(Error::UnknownTicket(Ticket(99)))
    );
    s.complete_next_offset(ticket, 5).unwrap();
    assert_eq!(
        s.complete_next_offset(ticket, 5),
        Err(Error::UnknownTicket(ticket)),
        "a second report of the same work is refused"
    );

    let Some(Work::ReadPlog { ticket, from: 5 }) = s.poll_work(now) else {
        panic!("expected a PLog read from 5")
    };
    let backwards = [(6, SeqValue::new(1, 1, 3)), (5, SeqValue::new(1, 1, 2))];
    let outside = [(9, SeqValue::new(1, 1, 3))];
    for (values, next) in [(&backwards[..], 7), (&outside[..], 9), (&[][..], 4)] {
        let page = PlogPage {
            values,
            next,
            end: true,
        };
        assert!(matches!(
            s.complete_plog_read(ticket, page, now),
            Err(Error::MalformedPlogPage { from: 5, .. })
        ));
    }
    assert_eq!(s.status(), Status::Actualizing);
    let good = [(5, SeqValue::new(1, 1, 3))];
    let page = PlogPage {
        values: &good,
        next: 6,
        end: true,
    };
    assert!(s.complete_plog_read(ticket, page, now).unwrap().finished);

    let Ok(Start::Load(read)) = s.start(1, 1) else {
        panic!("expected a load")
    };
    assert_eq!(
        s.complete_numbers(read.ticket, &[1, 2, 3]),
        Err(Error::MalformedNumbers {
            expected: 1,
            got: 3
        })
    );
    assert_eq!(s.complete_numbers(read.ticket, &[0]), Ok(Start::Started(6)));
    assert_eq!(s.next(1), Ok(4));
}
