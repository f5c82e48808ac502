//! The run's side: a listener on the data directory's socket and one thread per session, each
//! answering from the snapshot its `Hello` took. Nothing a client sends can stop the run: a
//! malformed request is answered with an error, an oversized one closes its session, a
//! session's panic ends that session only, an idle session is closed after
//! [`IDLE_DEADLINE`], and a hold on the commits ends after [`MAX_HOLD`].

use std::io::Write as _;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::store::reader::StoreReader;
use crate::store::storage::StorageError;

use super::protocol::{
    FrameError, MAX_EVENTS, MAX_REPLY, MAX_REQUEST, MAX_VIEW_ROWS, REPLY_BUDGET, Reply, Request,
    VERSION, event_len, read_frame, write_frame,
};
use super::source::{
    IDLE_DEADLINE, LiveSource, MAX_HOLD, MAX_SESSIONS, REPLY_DEADLINE, at_socket, socket_path,
};

/// How often the listener looks for a new connection (and for the end of the run).
const POLL: Duration = Duration::from_millis(25);

/// A live run's socket, served until this is dropped: the listener and its sessions stop, and
/// the socket file is removed.
pub struct LiveServer {
    path: PathBuf,
    /// The socket file's (device, inode), so that only this one is removed.
    id: (u64, u64),
    stop: Arc<AtomicBool>,
    listener: Option<JoinHandle<()>>,
    sessions: Arc<Mutex<Vec<Session>>>,
}

struct Session {
    thread: JoinHandle<()>,
    stream: UnixStream,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serves `source` on the socket in the data directory `dir` (always `Some` here; `None` where
/// the platform has no Unix sockets). The caller holds the store for writing, so no other run
/// serves `dir`: a socket file left there (by a killed run) is replaced. A file of another
/// type there is refused.
pub fn serve(dir: &Path, source: Arc<dyn LiveSource>) -> Result<Option<LiveServer>, StorageError> {
    let path = socket_path(dir);
    let fail = |what: &str, e: std::io::Error| {
        StorageError(format!("{}: cannot {what}: {e}", path.display()))
    };
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_socket() => {
            std::fs::remove_file(&path).map_err(|e| fail("remove a stale socket", e))?;
        }
        Ok(_) => {
            return Err(StorageError(format!(
                "{}: cannot serve readers: the file there is not a socket",
                path.display()
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail("look at the socket", e)),
    }
    let listener = at_socket(dir, |p| UnixListener::bind(p)).map_err(|e| fail("listen", e))?;
    let id = std::fs::symlink_metadata(&path)
        .map(|m| (m.dev(), m.ino()))
        .map_err(|e| fail("look at the socket", e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| fail("listen", e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let sessions = Arc::new(Mutex::new(Vec::new()));
    let thread = {
        let (stop, sessions) = (stop.clone(), sessions.clone());
        std::thread::Builder::new()
            .name("live-listener".into())
            .spawn(move || listen(&listener, &source, &stop, &sessions))
            .map_err(|e| fail("start the listener", e))?
    };
    tracing::debug!("serving readers on {}", path.display());
    Ok(Some(LiveServer {
        path,
        id,
        stop,
        listener: Some(thread),
        sessions,
    }))
}

impl LiveServer {
    /// The socket file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.listener.take() {
            let _ = t.join();
        }
        for s in lock(&self.sessions).drain(..) {
            let _ = s.stream.shutdown(std::net::Shutdown::Both);
            let _ = s.thread.join();
        }
        // Only the socket this server made: a later run may have replaced it.
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.id) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn listen(
    listener: &UnixListener, source: &Arc<dyn LiveSource>, stop: &AtomicBool,
    sessions: &Mutex<Vec<Session>>,
) {
    while !stop.load(Ordering::Relaxed) {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) => {
                if e.kind() != std::io::ErrorKind::WouldBlock {
                    tracing::debug!("live socket: accept failed: {e}");
                }
                std::thread::sleep(POLL);
                continue;
            }
        };
        let mut open = lock(sessions);
        open.retain(|s| !s.thread.is_finished());
        if open.len() >= MAX_SESSIONS {
            drop(open);
            refuse(
                stream,
                &format!("busy: {MAX_SESSIONS} readers are served already; try again"),
            );
            continue;
        }
        let Ok(clone) = stream.try_clone() else {
            continue;
        };
        let source = source.clone();
        let spawned = std::thread::Builder::new()
            .name("live-session".into())
            .spawn(move || {
                let mut stream = stream;
                let run = std::panic::AssertUnwindSafe(|| session(&mut stream, source.as_ref()));
                if std::panic::catch_unwind(run).is_err() {
                    tracing::warn!("a reader's session on the live socket failed; the run goes on");
                }
                // The listener keeps a clone of the stream: this closes the connection.
                let _ = stream.shutdown(std::net::Shutdown::Both);
            });
        if let Ok(thread) = spawned {
            open.push(Session {
                thread,
                stream: clone,
            });
        }
    }
}

/// Answers one connection with an error and closes it.
fn refuse(mut stream: UnixStream, message: &str) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = write_frame(&mut stream, &Reply::Error(message.into()).encode());
}

type Rows = Vec<(u64, u16, u64)>;

/// One session: requests answered in order until the client leaves, idles too long, or sends
/// a frame over the limit.
fn session(stream: &mut UnixStream, source: &dyn LiveSource) {
    let ready = stream.set_nonblocking(false).is_ok()
        && stream.set_read_timeout(Some(IDLE_DEADLINE)).is_ok()
        && stream.set_write_timeout(Some(REPLY_DEADLINE)).is_ok();
    if !ready {
        return;
    }
    let mut reads: Option<Reads<'_>> = None;
    // One buffer for every reply of the session (see `Reply::encode_into`).
    let mut reply_body = Vec::new();
    loop {
        let body = match read_frame(stream, MAX_REQUEST) {
            Ok(body) => body,
            Err(FrameError::TooLarge(n)) => {
                let message = format!(
                    "malformed request: {n} bytes, over the limit of {MAX_REQUEST}; closing the session"
                );
                let _ = write_frame(stream, &Reply::Error(message).encode());
                return;
            }
            Err(FrameError::Closed | FrameError::Io(_)) => return,
        };
        let reply = match Request::decode(&body) {
            Err(e) => Reply::Error(format!("malformed request: {}", e.0)),
            Ok(Request::Hello { version }) if version != VERSION => Reply::Error(format!(
                "this run speaks protocol version {VERSION}, not {version}"
            )),
            Ok(Request::Hello { .. }) => {
                // The new snapshot replaces the old one, which is dropped first.
                reads = None;
                match source.snapshot() {
                    Ok(s) => {
                        reads = Some(Reads {
                            source,
                            snapshot: Some(s),
                            view: None,
                        });
                        Reply::Hello {
                            version: VERSION,
                            pid: std::process::id(),
                            describe: source.describe(),
                            statistics: source.statistics(),
                        }
                    }
                    Err(e) => Reply::Error(e.0),
                }
            }
            Ok(Request::Hold) => {
                if hold(stream, source).is_err() {
                    return;
                }
                continue;
            }
            Ok(Request::Release) => Reply::Error(format!(
                "no hold to release: none was asked, or it ended after {} s",
                MAX_HOLD.as_secs()
            )),
            Ok(request) => match &mut reads {
                Some(reads) => reads.answer(request),
                None => Reply::Error("say Hello first: it takes the session's snapshot".into()),
            },
        };
        reply_body = reply.encode_into(std::mem::take(&mut reply_body));
        if write_frame(stream, &reply_body).is_err() {
            return;
        }
    }
}

/// `Hold`: holds the commits, says so, and waits (at most [`MAX_HOLD`]) for `Release`. `Err`
/// closes the session: the hold ended without a `Release`, so the client's copy may be torn
/// and its `Release` must fail.
fn hold(stream: &mut UnixStream, source: &dyn LiveSource) -> Result<(), ()> {
    let Some(guard) = source.hold_commits() else {
        let refusal = Reply::Error("this store cannot hold its commits".into());
        return write_frame(stream, &refusal.encode()).map_err(drop);
    };
    write_frame(stream, &Reply::Held.encode()).map_err(drop)?;
    stream.set_read_timeout(Some(MAX_HOLD)).map_err(drop)?;
    let next = read_frame(stream, MAX_REQUEST);
    drop(guard);
    stream.set_read_timeout(Some(IDLE_DEADLINE)).map_err(drop)?;
    let reply = match next.map(|body| Request::decode(&body)) {
        Ok(Ok(Request::Release)) => Reply::Released,
        Ok(_) => {
            Reply::Error("malformed request: only Release may follow Hold; the hold ended".into())
        }
        Err(_) => return Err(()),
    };
    write_frame(stream, &reply.encode()).map_err(drop)?;
    stream.flush().map_err(drop)
}

/// What a session reads from. Its bounds, stored offsets and view come from one snapshot (a
/// read transaction), which `Hello` takes; a read of events lets it go and reads in a
/// transaction of its own, ended with the reply, so that a reader working through a large
/// PLog (and resting between its reads) holds no snapshot in between: while one is held, redb
/// cannot reuse the pages the run frees, and every commit of the run writes more. A read of
/// bounds, stored offsets or the view after that takes a new snapshot.
struct Reads<'a> {
    source: &'a dyn LiveSource,
    snapshot: Option<Box<dyn StoreReader + 'a>>,
    /// The partition's view rows read from `snapshot`, served page by page.
    view: Option<(u32, Rows)>,
}

impl Reads<'_> {
    fn answer(&mut self, request: Request) -> Reply {
        self.read(request).unwrap_or_else(|e| Reply::Error(e.0))
    }

    fn read(&mut self, request: Request) -> Result<Reply, StorageError> {
        match request {
            Request::Events {
                partition,
                from,
                max,
            } => {
                (self.snapshot, self.view) = (None, None);
                events(self.source.snapshot()?.as_ref(), partition, from, max)
            }
            Request::Partitions => self.snapshot()?.partitions().map(Reply::Partitions),
            Request::Bounds { partition } => {
                self.snapshot()?.plog_bounds(partition).map(Reply::Bounds)
            }
            Request::StoredNext { partition } => {
                (self.snapshot()?.stored_next_offset(partition)).map(Reply::Offset)
            }
            Request::View {
                partition,
                after,
                max,
            } => {
                let snapshot = snapshot(self.source, &mut self.snapshot, &mut self.view)?;
                view_page(snapshot, &mut self.view, partition, after, max)
            }
            Request::Hello { .. } | Request::Hold | Request::Release => {
                Ok(Reply::Error("not a read".into()))
            }
        }
    }

    fn snapshot(&mut self) -> Result<&dyn StoreReader, StorageError> {
        snapshot(self.source, &mut self.snapshot, &mut self.view)
    }
}

/// The session's snapshot, taken again (the view rows read from the old one forgotten) if a
/// read of events let it go.
fn snapshot<'a, 's>(
    source: &'s dyn LiveSource, held: &'a mut Option<Box<dyn StoreReader + 's>>,
    view: &mut Option<(u32, Rows)>,
) -> Result<&'a dyn StoreReader, StorageError> {
    let s = match held {
        Some(s) => s,
        empty => {
            *view = None;
            empty.insert(source.snapshot()?)
        }
    };
    Ok(&**s)
}

/// Up to `max` events from `from`, cut at [`REPLY_BUDGET`] bytes (at least one). Read in
/// chunks sized by the events already read, so that the run reads and decodes about what the
/// reply carries (`check` asks for 16,384 events; 1 MiB holds about 500 of 2 KiB).
fn events(
    snapshot: &dyn StoreReader, partition: u32, from: u64, max: u32,
) -> Result<Reply, StorageError> {
    let max = usize::try_from(max.clamp(1, MAX_EVENTS)).unwrap_or(1);
    let mut out = Vec::new();
    let mut size = 4;
    let mut next = from;
    let mut chunk = FIRST_CHUNK.min(max);
    while chunk > 0 {
        let events = snapshot.events(partition, next, chunk)?;
        let ended = events.len() < chunk;
        for e in events {
            let len = event_len(&e);
            if !out.is_empty() && size + len > REPLY_BUDGET {
                return Ok(Reply::Events(out));
            }
            if size + len > MAX_REPLY {
                return Err(StorageError(format!(
                    "partition {partition}: event {} takes {len} bytes, more than one reply carries ({MAX_REPLY})",
                    e.offset
                )));
            }
            size += len;
            next = e.offset + 1;
            out.push(e);
        }
        if ended {
            break;
        }
        // As many more as the rest of the budget holds at the mean size so far, and one.
        let mean = ((size - 4) / out.len().max(1)).max(1);
        chunk = (REPLY_BUDGET.saturating_sub(size) / mean + 1).min(max - out.len());
    }
    Ok(Reply::Events(out))
}

/// The events of a reply's first read: enough to size the next by, few enough that a reply
/// of large events reads little past its budget.
const FIRST_CHUNK: usize = 64;

/// A page of the view: the session reads a partition's view once (one snapshot, so it cannot
/// change) and serves it page by page.
fn view_page(
    snapshot: &dyn StoreReader, cache: &mut Option<(u32, Rows)>, partition: u32,
    after: Option<(u64, u16)>, max: u32,
) -> Result<Reply, StorageError> {
    let rows = match cache {
        Some((p, rows)) if *p == partition => rows,
        _ => &mut cache.insert((partition, snapshot.view(partition)?)).1,
    };
    let start = match after {
        None => 0,
        Some(key) => rows.partition_point(|&(ws, seq, _)| (ws, seq) <= key),
    };
    let n = usize::try_from(max.clamp(1, MAX_VIEW_ROWS)).unwrap_or(1);
    let end = start.saturating_add(n).min(rows.len());
    Ok(Reply::View(
        rows.get(start..end).unwrap_or_default().to_vec(),
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use sequencer::{Number, PLogOffset, SeqId, WsId};

    use super::*;
    use crate::store::codec::{Checksum, StoredEvent};
    use crate::store::storage::PartitionId;

    /// A PLog of `events` events of `payload` bytes each, counting the events it hands out.
    struct Plog {
        events: u64,
        payload: usize,
        handed: AtomicUsize,
    }

    impl StoreReader for Plog {
        fn describe(&self) -> String {
            "a PLog of equal events".into()
        }

        fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
            Ok(vec![0])
        }

        fn plog_bounds(
            &self, _: PartitionId,
        ) -> Result<Option<(PLogOffset, PLogOffset)>, StorageError> {
            Ok(Some((1, self.events)))
        }

        fn events(
            &self, _: PartitionId, from: PLogOffset, max: usize,
        ) -> Result<Vec<StoredEvent>, StorageError> {
            let out: Vec<StoredEvent> = (from..=self.events)
                .take(max)
                .map(|offset| StoredEvent {
                    offset,
                    values: Vec::new(),
                    payload: vec![0; self.payload],
                    checksum: Checksum::Verified,
                })
                .collect();
            self.handed.fetch_add(out.len(), Ordering::Relaxed);
            Ok(out)
        }

        fn stored_next_offset(&self, _: PartitionId) -> Result<PLogOffset, StorageError> {
            Ok(self.events + 1)
        }

        fn view(&self, _: PartitionId) -> Result<Vec<(WsId, SeqId, Number)>, StorageError> {
            Ok(Vec::new())
        }
    }

    fn page(plog: &Plog, from: u64, max: u32) -> Vec<StoredEvent> {
        match events(plog, 0, from, max) {
            Ok(Reply::Events(e)) => e,
            other => panic!("not a page of events: {other:?}"),
        }
    }

    #[test]
    fn a_page_cut_at_the_reply_budget_reads_about_what_it_carries() {
        let plog = Plog {
            events: 100_000,
            payload: 2048,
            handed: AtomicUsize::new(0),
        };
        let got = page(&plog, 11, MAX_EVENTS);
        let size: usize = 4 + got.iter().map(event_len).sum::<usize>();
        assert!(size <= REPLY_BUDGET, "within the budget");
        assert!(
            size + event_len(&got[0]) > REPLY_BUDGET,
            "cut only at the budget"
        );
        let offsets: Vec<u64> = got.iter().map(|e| e.offset).collect();
        assert_eq!(
            offsets,
            (11..11 + got.len() as u64).collect::<Vec<_>>(),
            "dense from 11"
        );
        let read = plog.handed.load(Ordering::Relaxed);
        assert!(
            read <= got.len() + FIRST_CHUNK,
            "read {read} events for a reply of {}",
            got.len()
        );
    }

    #[test]
    fn a_page_stops_at_the_plogs_end_and_at_the_count_asked_for() {
        let plog = Plog {
            events: 300,
            payload: 16,
            handed: AtomicUsize::new(0),
        };
        assert_eq!(page(&plog, 1, MAX_EVENTS).len(), 300, "the whole PLog");
        assert_eq!(page(&plog, 290, 5).len(), 5, "as many as asked");
        assert_eq!(page(&plog, 200, 1000).len(), 101, "to the end");
        let one = Plog {
            events: 3,
            payload: REPLY_BUDGET,
            handed: AtomicUsize::new(0),
        };
        assert_eq!(
            page(&one, 1, 10).len(),
            1,
            "one event over the budget still comes alone"
        );
    }
}
