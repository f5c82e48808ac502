//! A start's load left pending (`pending_load`) and reported together with its start
//! (`complete_numbers_start`), on a host that answers numbers reads later, as the JavaScript
//! package's does.

use crate::error::Error;
use crate::params::Params;
use crate::sequencer::Status;
use crate::shell::{Host, Read, Shell};
use crate::types::{Instant, SeqId, WsId};
use crate::work::{Outcome, PlogPage, ReadNumbers, Start, Work};

/// A host whose numbers reads answer later; it keeps the storage work begun.
#[derive(Default)]
struct LaterHost {
    work: Vec<Work>,
}

impl Host for LaterHost {
    fn now(&mut self) -> Instant {
        Instant::default()
    }
    fn read_numbers(&mut self, _ws: WsId, _seqs: &[SeqId]) -> Read {
        Read::Later
    }
    fn read_numbers_many(&mut self, _ws: &[WsId], _seqs: &[SeqId]) -> Read {
        Read::Later
    }
    fn begin(&mut self, work: Work) {
        self.work.push(work);
    }
    fn set_wake(&mut self, _at: Option<Instant>) {}
    fn status_changed(&mut self, _status: Status) {}
}

/// A shell over kind 1 (sequences 1 and 2) and kind 2 (sequence 1), actualized from empty
/// storage.
fn ready() -> (Shell, LaterHost) {
    let mut host = LaterHost::default();
    let params = Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 1)
        .with_seq(2, 1, 1);
    let mut shell = Shell::create(params, &mut host).expect("valid params");
    while let Some(work) = host.work.pop() {
        let outcome = match work {
            Work::ReadNextOffset { .. } => Outcome::NextOffset(0),
            Work::ReadPlog { from, .. } => Outcome::PlogPage(PlogPage {
                values: &[],
                next: from,
                end: true,
            }),
            Work::Write(_) => Outcome::Written,
        };
        shell
            .deliver(work.ticket(), outcome, &mut host)
            .expect("delivered");
    }
    assert_eq!(shell.status(), Status::Ready);
    (shell, host)
}

/// The load a start of `(kind, ws)` hands out.
fn load(shell: &mut Shell, host: &mut LaterHost, kind: u16, ws: WsId) -> ReadNumbers {
    match shell.start(kind, ws, host) {
        Ok(Start::Load(read)) => read,
        other => panic!("a start of a cold workspace loads, got {other:?}"),
    }
}

#[test]
fn a_start_s_load_stays_pending_for_its_kind_and_workspace_only() {
    let (mut shell, mut host) = ready();
    let read = load(&mut shell, &mut host, 1, 7);
    assert_eq!(read.seqs, [1, 2]);
    assert_eq!(
        shell.pending_load(1, 7),
        Some((read.ticket, &[1, 2][..])),
        "the very read the start handed out"
    );
    assert_eq!(shell.core().pending_load(1, 7), shell.pending_load(1, 7));
    assert_eq!(shell.pending_load(1, 8), None, "another workspace");
    assert_eq!(shell.pending_load(2, 7), None, "another kind");
}

#[test]
fn complete_numbers_start_reports_the_read_and_makes_its_start() {
    let (mut shell, mut host) = ready();
    let read = load(&mut shell, &mut host, 1, 7);
    assert_eq!(
        shell.complete_numbers_start(read.ticket, &[4, 0], &mut host),
        Ok(Start::Started(1))
    );
    assert_eq!(shell.status(), Status::InTransaction);
    assert_eq!(shell.pending_load(1, 7), None, "the read is done");
    assert_eq!(shell.next(1), Ok(5), "after the stored number");
    assert_eq!(shell.next(2), Ok(1), "never stored: the initial number");
    shell.flush(&mut host).expect("flush");
    assert_eq!(shell.status(), Status::Ready);
    // Reported twice: the ticket is gone.
    assert_eq!(
        shell.complete_numbers_start(read.ticket, &[4, 0], &mut host),
        Err(Error::UnknownTicket(read.ticket))
    );
}

#[test]
fn a_later_start_actualize_or_cleanup_drops_the_pending_load() {
    let (mut shell, mut host) = ready();
    let first = load(&mut shell, &mut host, 1, 7);
    let second = load(&mut shell, &mut host, 1, 8);
    assert_eq!(shell.pending_load(1, 7), None, "dropped by the next start");
    assert_eq!(
        shell.complete_numbers_start(first.ticket, &[0, 0], &mut host),
        Err(Error::UnknownTicket(first.ticket)),
        "refused: nothing started"
    );
    assert_eq!(shell.status(), Status::Ready);
    assert_eq!(shell.pending_load(1, 8), Some((second.ticket, &[1, 2][..])));

    // Starting the same workspace again hands out the same read under a new ticket: what a
    // caller that performs the pending read instead spares.
    let again = load(&mut shell, &mut host, 1, 8);
    assert_ne!(again.ticket, second.ticket);
    assert_eq!(again.seqs, second.seqs);

    shell.actualize(&mut host).expect("actualize");
    assert_eq!(shell.pending_load(1, 8), None, "dropped by actualize");
    assert_eq!(
        shell.complete_numbers_start(again.ticket, &[0, 0], &mut host),
        Err(Error::UnknownTicket(again.ticket))
    );

    let (mut shell, mut host) = ready();
    let read = load(&mut shell, &mut host, 1, 7);
    shell.cleanup(&mut host);
    assert_eq!(shell.pending_load(1, 7), None, "dropped by cleanup");
    assert_eq!(
        shell.complete_numbers_start(read.ticket, &[0, 0], &mut host),
        Err(Error::CleanedUp)
    );
}

#[test]
fn a_malformed_report_starts_nothing_and_leaves_the_load_pending() {
    let (mut shell, mut host) = ready();
    let read = load(&mut shell, &mut host, 1, 7);
    assert_eq!(
        shell.complete_numbers_start(read.ticket, &[0], &mut host),
        Err(Error::MalformedNumbers {
            expected: 2,
            got: 1
        })
    );
    assert_eq!(shell.status(), Status::Ready);
    assert_eq!(shell.pending_load(1, 7), Some((read.ticket, &[1, 2][..])));
    assert_eq!(
        shell.complete_numbers_start(read.ticket, &[0, 0], &mut host),
        Ok(Start::Started(1))
    );
}

#[test]
fn a_pending_read_no_longer_needed_is_harmless_numbers_in_memory_win() {
    let (mut shell, mut host) = ready();
    let read = load(&mut shell, &mut host, 1, 7);
    // The workspace's numbers reach memory another way meanwhile (a batch's read of many).
    shell
        .complete_numbers_many(1, &[7], &[9, 3])
        .expect("preloaded");
    assert_eq!(
        shell.pending_load(1, 7),
        Some((read.ticket, &[1, 2][..])),
        "still awaited"
    );
    // Its older stored numbers do not lower what memory holds.
    assert_eq!(
        shell.complete_numbers_start(read.ticket, &[2, 1], &mut host),
        Ok(Start::Started(1))
    );
    assert_eq!(shell.next(1), Ok(10));
    assert_eq!(shell.next(2), Ok(4));
}
