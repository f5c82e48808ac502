//! `start-status` and `flush-status`: the status after the call comes back in the result and is
//! not reported through the host; the next change is reported as before.

use sequencer::shell::{Host, Read, Shell};
use sequencer::{Error, Instant, Outcome, Params, PlogPage, SeqId, Start, Status, Work, WsId};

/// A host that answers every numbers read with zeros and records what the shell asked.
#[derive(Default)]
struct Recorder {
    work: Vec<Work>,
    reported: Vec<Status>,
}

impl Host for Recorder {
    fn now(&mut self) -> Instant {
        Instant::default()
    }
    fn read_numbers(&mut self, _ws: WsId, seqs: &[SeqId]) -> Read {
        Read::Numbers(vec![0; seqs.len()])
    }
    fn read_numbers_many(&mut self, ws: &[WsId], seqs: &[SeqId]) -> Read {
        Read::Numbers(vec![0; ws.len() * seqs.len()])
    }
    fn begin(&mut self, work: Work) {
        self.work.push(work);
    }
    fn set_wake(&mut self, _at: Option<Instant>) {}
    fn status_changed(&mut self, status: Status) {
        self.reported.push(status);
    }
}

/// A shell that actualized from an empty PLog, and its host with nothing recorded.
fn ready() -> (Shell, Recorder) {
    let mut host = Recorder::default();
    let params = Params::new().with_seq(1, 1, 1);
    let mut shell = Shell::create(params, &mut host).expect("valid params");
    for _ in 0..4 {
        let Some(work) = host.work.pop() else { break };
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
    assert_eq!(host.reported.last(), Some(&Status::Ready));
    host.reported.clear();
    (shell, host)
}

#[test]
fn the_status_comes_back_in_the_result_and_is_not_reported_through_the_host() {
    let (mut shell, mut host) = ready();
    let (start, status) = shell.start_status(1, 7, &mut host).expect("start");
    assert_eq!(start, Start::Started(1));
    assert_eq!(status, Status::InTransaction);
    assert_eq!(shell.next(1), Ok(1));
    assert_eq!(shell.flush_status(&mut host), Ok(Status::Ready));
    assert!(host.reported.is_empty(), "no status-changed call");

    // The plain calls report the next change, once.
    assert_eq!(shell.start(1, 7, &mut host), Ok(Start::Started(2)));
    shell.flush(&mut host).expect("flush");
    assert_eq!(host.reported, [Status::InTransaction, Status::Ready]);
}

#[test]
fn a_refused_call_returns_its_error_and_changes_no_status() {
    let (mut shell, mut host) = ready();
    assert_eq!(shell.flush_status(&mut host), Err(Error::NoTransaction));
    assert_eq!(
        shell.start_status(9, 7, &mut host),
        Err(Error::UnknownWsKind(9))
    );
    assert!(host.reported.is_empty());
    assert_eq!(shell.status(), Status::Ready);
    shell.cleanup(&mut host);
    assert_eq!(shell.start_status(1, 7, &mut host), Err(Error::CleanedUp));
    assert_eq!(host.reported, [Status::CleanedUp]);
}
