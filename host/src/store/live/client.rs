//! The reader's side: a session on a live run's socket, read as a [`StoreReader`]. A session's
//! `Hello` takes a snapshot, which serves a partition's bounds, stored offset and view; the
//! run lets it go at the first read of events, each of which it reads in a transaction of its
//! own, and the client opens a new session (a new snapshot) when its reads move on to another
//! partition. So a partition's bounds, stored offset and view read before its events come
//! from one committed state, and its events from that state or a later one: an event never
//! changes once written, so a later state holds the same events and perhaps more (`check`
//! reads the view first, then the events up to the end it read). No snapshot is held while
//! the reader works through events or rests between reads: redb cannot reuse the pages a run
//! frees while a snapshot older than them is held, so a long one makes the run's file grow (a
//! 1 GB store doubled in a 16 s hold, measured) and its commits write new pages.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use sequencer::{Number, PLogOffset, SeqId, WsId};

use crate::store::codec::StoredEvent;
use crate::store::layout::Layout;
use crate::store::reader::StoreReader;
use crate::store::storage::{PartitionId, StorageError};

use super::pace::Pace;
use super::protocol::{
    FrameError, MAX_REPLY, MAX_VIEW_ROWS, Reply, Request, VERSION, read_frame, write_frame,
};
use super::source::{ANSWER_DEADLINE, REPLY_DEADLINE, at_socket, socket_path};

/// How long a client rests per unit of its work after each read of events (see `Pace` in
/// `pace.rs`): 1.0, half the time reading. Measured: `check` looping beside
/// a paced run on a 2.2 GB store (docs/BENCHMARKS.md, "Check beside a live run"); 3.0 (a
/// quarter of the time) cost the run no less in the same sitting and finished fewer checks.
pub const REST_PER_WORK: f64 = 1.0;

/// A session on a live run's socket; see the module's documentation.
pub struct LiveClient {
    session: Mutex<Session>,
    /// The data directory, to open the next partition's session in.
    dir: PathBuf,
    socket: PathBuf,
    pid: u32,
    describe: String,
    statistics: Vec<(String, String)>,
    layout: Option<Layout>,
    /// Its share of the machine beside the run.
    pace: Pace,
}

/// The session open now, and the partition whose reads its snapshot served.
struct Session {
    /// `None` once a request failed half-way: the stream may be out of step.
    stream: Option<UnixStream>,
    /// The partition read since the snapshot was taken, `None` before any.
    partition: Option<PartitionId>,
}

/// What [`connect`] found at a data directory's socket.
pub enum Connect {
    /// A live run answered: its snapshot is read through the client.
    Served(LiveClient),
    /// Nobody serves the directory (no socket, or a stale one a killed run left): why.
    NotServed(String),
    /// Something listens but did not answer as a run does within [`ANSWER_DEADLINE`] (a
    /// stopped or overloaded run, or another protocol version): what happened.
    NoAnswer(String),
}

/// Opens a session on the socket of the data directory `dir`.
pub fn connect(dir: &Path) -> Connect {
    let socket = socket_path(dir);
    let stream = match at_socket(dir, |p| UnixStream::connect(p)) {
        Ok(s) => s,
        Err(e) => {
            return Connect::NotServed(format!("{}: no run answers there: {e}", socket.display()));
        }
    };
    let said = (|| {
        stream.set_read_timeout(Some(ANSWER_DEADLINE))?;
        stream.set_write_timeout(Some(ANSWER_DEADLINE))?;
        exchange(&stream, &Request::Hello { version: VERSION })
    })();
    let no_answer = |what: String| Connect::NoAnswer(format!("{}: {what}", socket.display()));
    match said {
        Ok(Reply::Hello {
            version: VERSION,
            pid,
            describe,
            statistics,
        }) => {
            let _ = stream.set_read_timeout(Some(REPLY_DEADLINE));
            let _ = stream.set_write_timeout(Some(REPLY_DEADLINE));
            Connect::Served(LiveClient {
                session: Mutex::new(Session {
                    stream: Some(stream),
                    partition: None,
                }),
                dir: dir.to_path_buf(),
                socket,
                pid,
                describe,
                statistics,
                layout: None,
                pace: Pace::new(REST_PER_WORK),
            })
        }
        Ok(Reply::Hello { version, .. }) => no_answer(format!(
            "the run speaks protocol version {version}, this program {VERSION}"
        )),
        Ok(Reply::Error(e)) => no_answer(format!("the run refused to serve: {e}")),
        Ok(other) => no_answer(format!("an unexpected answer to Hello: {other:?}")),
        Err(e) if timed_out(&e) => no_answer(format!(
            "no answer within {} s (the run may be stopped or overloaded)",
            ANSWER_DEADLINE.as_secs()
        )),
        Err(e) => no_answer(e.to_string()),
    }
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Whether `e` says the run closed the session (rather than failing to answer in time).
fn closed(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    matches!(
        e.kind(),
        UnexpectedEof | BrokenPipe | ConnectionReset | ConnectionAborted
    )
}

/// Sends `request` and reads its reply.
fn exchange(mut stream: &UnixStream, request: &Request) -> std::io::Result<Reply> {
    write_frame(&mut stream, &request.encode())?;
    let body = read_frame(&mut stream, MAX_REPLY).map_err(|e| match e {
        FrameError::Closed => std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the run closed the session",
        ),
        FrameError::TooLarge(n) => std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a reply of {n} bytes, over the limit of {MAX_REPLY}"),
        ),
        FrameError::Io(e) => e,
    })?;
    Reply::decode(&body).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.0))
}

impl LiveClient {
    /// The client, reporting `layout` as the store's recorded layout (read beside the store).
    pub fn with_layout(mut self, layout: Option<Layout>) -> Self {
        self.layout = layout;
        self
    }

    /// The run's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    fn fail(&self, what: impl std::fmt::Display) -> StorageError {
        StorageError(format!(
            "{}: the live run (pid {}) {what}",
            self.socket.display(),
            self.pid
        ))
    }

    /// One request and its reply; a reply of the wrong kind or an error is an error.
    fn ask(&self, request: &Request) -> Result<Reply, StorageError> {
        self.ask_in(None, request)
    }

    /// [`ask`](Self::ask) about `partition`: in a new session (a new snapshot) if the reads
    /// move on from another partition.
    fn ask_about(&self, partition: PartitionId, request: &Request) -> Result<Reply, StorageError> {
        self.ask_in(Some(partition), request)
    }

    fn ask_in(&self, about: Option<PartitionId>, request: &Request) -> Result<Reply, StorageError> {
        let mut guard = self.session.lock().unwrap_or_else(|p| p.into_inner());
        if guard.stream.is_none() {
            return Err(self.fail("session ended after an earlier failure"));
        }
        if let Some(p) = about {
            if guard.partition.is_some_and(|q| q != p) {
                // The session ends first (and the run drops its snapshot), then the next opens.
                guard.stream = None;
                guard.stream = Some(self.next_session()?);
            }
            guard.partition = Some(p);
        }
        let stream = (guard.stream.as_ref())
            .ok_or_else(|| self.fail("session ended after an earlier failure"))?;
        let mut said = exchange(stream, request);
        if matches!(request, Request::Events { .. }) && matches!(&said, Err(e) if closed(e)) {
            // The run closed the session: it closes one left idle past IDLE_DEADLINE (a
            // reader paused by Ctrl-Z or a debugger). A read of events uses no snapshot of the
            // session, and events never change once written: it goes on in a new session with
            // the same run, once.
            guard.stream = None;
            let stream = self.next_session()?;
            said = exchange(&stream, request);
            guard.stream = Some(stream);
        }
        match said {
            Ok(Reply::Error(e)) => Err(self.fail(format_args!("refused: {e}"))),
            Ok(reply) => Ok(reply),
            Err(e) => {
                guard.stream = None;
                if timed_out(&e) {
                    return Err(self.fail(format_args!(
                        "did not answer within {} s",
                        REPLY_DEADLINE.as_secs()
                    )));
                }
                Err(self.fail(format_args!("failed: {e}")))
            }
        }
    }

    /// A new session with the same run (a new snapshot); the one it replaces is closed, and
    /// the run drops its snapshot.
    fn next_session(&self) -> Result<UnixStream, StorageError> {
        match connect(&self.dir) {
            Connect::Served(next) if next.pid == self.pid => {
                let session = next.session.into_inner().unwrap_or_else(|p| p.into_inner());
                session
                    .stream
                    .ok_or_else(|| self.fail("closed its next session at once"))
            }
            Connect::Served(next) => {
                Err(self.fail(format_args!("ended: run {} serves the store now", next.pid)))
            }
            Connect::NotServed(why) | Connect::NoAnswer(why) => {
                Err(self.fail(format_args!("refused a new session: {why}")))
            }
        }
    }

    fn unexpected(&self, reply: &Reply) -> StorageError {
        self.fail(format_args!("answered out of turn: {reply:?}"))
    }

    /// Runs `f` while the run holds its commits, so that the store's files are still; fails
    /// if the hold ended before `f` did (the run ends a hold after `MAX_HOLD`).
    pub fn while_held<T>(
        &self, f: impl FnOnce() -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        match self.ask(&Request::Hold)? {
            Reply::Held => {}
            other => return Err(self.unexpected(&other)),
        }
        let started = Instant::now();
        let out = f();
        match self.ask(&Request::Release) {
            Ok(Reply::Released) => out,
            Ok(other) => Err(self.unexpected(&other)),
            Err(e) => Err(StorageError(format!(
                "{} (after holding its commits for {:.1} s)",
                e.0,
                started.elapsed().as_secs_f64()
            ))),
        }
    }
}

impl StoreReader for LiveClient {
    fn describe(&self) -> String {
        format!(
            "{} (a run has it open, pid {}: a snapshot per partition, its events read after it, served over {})",
            self.describe,
            self.pid,
            self.socket.display()
        )
    }

    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        match self.ask(&Request::Partitions)? {
            Reply::Partitions(p) => Ok(p),
            other => Err(self.unexpected(&other)),
        }
    }

    fn plog_bounds(
        &self, partition: PartitionId,
    ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
        match self.ask_about(partition, &Request::Bounds { partition })? {
            Reply::Bounds(b) => Ok(b),
            other => Err(self.unexpected(&other)),
        }
    }

    fn events(
        &self, partition: PartitionId, from: PLogOffset, max: usize,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        match self.ask_about(
            partition,
            &Request::Events {
                partition,
                from,
                max,
            },
        )? {
            Reply::Events(e) => {
                self.pace.rest();
                Ok(e)
            }
            other => Err(self.unexpected(&other)),
        }
    }

    fn stored_next_offset(&self, partition: PartitionId) -> Result<PLogOffset, StorageError> {
        match self.ask_about(partition, &Request::StoredNext { partition })? {
            Reply::Offset(o) => Ok(o),
            other => Err(self.unexpected(&other)),
        }
    }

    fn view(&self, partition: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
        let mut rows: Vec<(WsId, SeqId, Number)> = Vec::new();
        loop {
            let after = rows.last().map(|&(ws, seq, _)| (ws, seq));
            let page = match self.ask_about(
                partition,
                &Request::View {
                    partition,
                    after,
                    max: MAX_VIEW_ROWS,
                },
            )? {
                Reply::View(page) => page,
                other => return Err(self.unexpected(&other)),
            };
            let more = page.len() == MAX_VIEW_ROWS as usize;
            rows.extend(page);
            if !more {
                return Ok(rows);
            }
        }
    }

    fn layout(&self) -> Result<Option<Layout>, StorageError> {
        Ok(self.layout.clone())
    }

    fn statistics(&self) -> Vec<(String, String)> {
        self.statistics.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;
    use crate::store::codec::Checksum;

    /// Answers one session's `Hello` as a run does.
    fn hello(stream: &mut UnixStream) {
        assert_eq!(request(stream), Request::Hello { version: VERSION });
        let hello = Reply::Hello {
            version: VERSION,
            pid: 7,
            describe: "a run of the test".into(),
            statistics: Vec::new(),
        };
        write_frame(stream, &hello.encode()).expect("answer Hello");
    }

    fn request(stream: &mut UnixStream) -> Request {
        let body = read_frame(stream, MAX_REPLY).expect("a request");
        Request::decode(&body).expect("a well-formed request")
    }

    fn event(offset: PLogOffset) -> StoredEvent {
        StoredEvent {
            offset,
            values: Vec::new(),
            payload: vec![1, 2, 3],
            checksum: Checksum::Verified,
        }
    }

    /// A run that serves `sessions` sessions: the first `closing` it closes at their first
    /// request after `Hello` (as it closes one left idle), the others answer a read of events
    /// with one event. Returns the requests it was sent.
    fn run_closing(
        dir: &Path, sessions: usize, closing: usize,
    ) -> std::thread::JoinHandle<Vec<Request>> {
        let listener = at_socket(dir, |p| UnixListener::bind(p)).expect("listen");
        std::thread::spawn(move || {
            let mut asked = Vec::new();
            for session in 0..sessions {
                let (mut stream, _) = listener.accept().expect("a session");
                hello(&mut stream);
                let req = request(&mut stream);
                asked.push(req.clone());
                if let (false, Request::Events { from, .. }) = (session < closing, req) {
                    let reply = Reply::Events(vec![event(from)]).encode();
                    write_frame(&mut stream, &reply).expect("answer");
                }
            }
            asked
        })
    }

    fn client(dir: &Path) -> LiveClient {
        match connect(dir) {
            Connect::Served(c) => c,
            _ => panic!("the run did not answer"),
        }
    }

    #[test]
    fn a_read_of_events_whose_session_the_run_closed_goes_on_in_a_new_session_once() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let run = run_closing(tmp.path(), 2, 1);
        let reader = client(tmp.path());
        let got = reader.events(0, 5, 10).expect("read in a new session");
        assert_eq!(got.iter().map(|e| e.offset).collect::<Vec<_>>(), [5]);
        let asked = run.join().expect("the run");
        assert_eq!(asked.len(), 2, "asked once, then again in a new session");
        assert_eq!(asked[0], asked[1]);

        // A second close in a row is the reader's error, in one line.
        let tmp = tempfile::tempdir().expect("temp dir");
        let run = run_closing(tmp.path(), 2, 2);
        let reader = client(tmp.path());
        let e = reader.events(0, 5, 10).expect_err("closed twice");
        assert!(e.0.contains("closed the session"), "{e}");
        drop(reader);
        run.join().expect("the run");
    }

    #[test]
    fn a_read_from_the_sessions_snapshot_is_not_asked_again_in_another() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let run = run_closing(tmp.path(), 1, 1);
        let reader = client(tmp.path());
        // Bounds, the stored offset and the view must come from one snapshot: a new session
        // would take another, so the read fails instead.
        let e = reader.plog_bounds(0).expect_err("the session closed");
        assert!(e.0.contains("closed the session"), "{e}");
        drop(reader);
        let asked = run.join().expect("the run");
        assert_eq!(asked, [Request::Bounds { partition: 0 }]);
    }
}
