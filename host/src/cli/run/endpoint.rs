//! `run --metrics ADDR`: the host's metrics, liveness and readiness over HTTP, served from the
//! library's answers ([`Metrics::encode`], [`Metrics::health`], [`Metrics::readiness`]) by a
//! small HTTP/1.1 server on its own threads: `GET /metrics` (OpenMetrics text; the Prometheus
//! text format 0.0.4 to a request that accepts only `text/plain`), `/healthz`
//! (200 while the host is alive, else 503 and why), `/readyz` (200 while every partition it
//! owns is ready, else 503 naming those that are not). Each connection is one request; a
//! request is read for at most [`READ_DEADLINE`] and [`MAX_REQUEST`] bytes; at most
//! [`MAX_CONNECTIONS`] are served at once (one more is refused with 503).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use sequencer_host::metrics::{CONTENT_TYPE, Metrics, TEXT_CONTENT_TYPE};

use super::super::common::{CliError, CliResult};

/// How long a client has to send its request (and to take the answer).
const READ_DEADLINE: Duration = Duration::from_secs(2);

/// The longest request read; a longer one is answered 431.
const MAX_REQUEST: usize = 8 * 1024;

/// Connections served at once.
const MAX_CONNECTIONS: usize = 8;

/// The server; dropping it stops it.
pub(super) struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

#[cfg(test)]
impl Endpoint {
    /// The address it listens on (the port chosen when `:0` was asked for).
    pub(super) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Parses `--metrics`: `PORT` and `:PORT` mean loopback (127.0.0.1), else `HOST:PORT`.
pub(super) fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let port_only = s.strip_prefix(':').unwrap_or(s);
    if let Ok(port) = port_only.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse::<SocketAddr>().map_err(|_| {
        format!(
            "{s:?} is not PORT, :PORT or HOST:PORT (an IP address and a port, e.g. 127.0.0.1:9464)"
        )
    })
}

/// Listens on `addr` and serves `metrics` until the returned [`Endpoint`] is dropped.
pub(super) fn serve(addr: SocketAddr, metrics: Metrics) -> CliResult<Endpoint> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| CliError(format!("--metrics {addr}: cannot listen there: {e}")))?;
    let addr = listener.local_addr().unwrap_or(addr);
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let thread = std::thread::Builder::new()
        .name("sequencer-metrics".into())
        .spawn(move || accept(&listener, &metrics, &stopping))
        .map_err(|e| CliError(format!("--metrics {addr}: cannot start its thread: {e}")))?;
    tracing::info!("metrics on http://{addr}/metrics (also /healthz, /readyz)");
    Ok(Endpoint {
        addr,
        stop,
        thread: Some(thread),
    })
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees `stop`.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept(listener: &TcpListener, metrics: &Metrics, stop: &AtomicBool) {
    let busy = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut stream) = stream else {
            continue;
        };
        if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            busy.fetch_sub(1, Ordering::SeqCst);
            let _ = respond(&mut stream, 503, "text/plain", b"too many connections\n");
            continue;
        }
        let (metrics, busy) = (metrics.clone(), busy.clone());
        let spawned = std::thread::Builder::new()
            .name("sequencer-metrics-conn".into())
            .spawn(move || {
                let _ = serve_one(&mut stream, &metrics);
                busy.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            tracing::debug!("metrics: cannot start a connection's thread");
        }
    }
}

/// Reads one request from `stream` and answers it.
fn serve_one(stream: &mut TcpStream, metrics: &Metrics) -> std::io::Result<()> {
    stream.set_read_timeout(Some(READ_DEADLINE))?;
    stream.set_write_timeout(Some(READ_DEADLINE))?;
    let Some(head) = read_head(stream)? else {
        return respond(stream, 431, "text/plain", b"request too large\n");
    };
    let line = head.lines().next().unwrap_or_default();
    let mut words = line.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if method != "GET" && method != "HEAD" {
        return respond(stream, 405, "text/plain", b"only GET\n");
    }
    let path = target.split('?').next().unwrap_or("");
    let (status, kind, body) = route(path, metrics, wants_text_format(&head));
    if method == "HEAD" {
        return respond(stream, status, kind, b"");
    }
    respond(stream, status, kind, body.as_bytes())
}

/// Whether the request asks for the Prometheus text format and not for OpenMetrics: an
/// `Accept` header naming `text/plain` and no `application/openmetrics-text` (as `curl -H
/// 'Accept: text/plain'` for `promtool check metrics`). Otherwise OpenMetrics is served (what
/// Prometheus asks for first).
fn wants_text_format(head: &str) -> bool {
    let accept = (head.lines().skip(1))
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("accept"))
        .map(|(_, value)| value.to_ascii_lowercase());
    accept.is_some_and(|a| a.contains("text/plain") && !a.contains("application/openmetrics-text"))
}

/// The answer to `GET path`: its status, content type and body (`/metrics` in the Prometheus
/// text format when `text_format`).
fn route(path: &str, metrics: &Metrics, text_format: bool) -> (u16, &'static str, String) {
    match path {
        "/metrics" if text_format => (200, TEXT_CONTENT_TYPE, metrics.encode_text()),
        "/metrics" => (200, CONTENT_TYPE, metrics.encode()),
        "/healthz" => match metrics.health() {
            Ok(()) => (200, "text/plain", "ok\n".into()),
            Err(why) => (503, "text/plain", format!("{why}\n")),
        },
        "/readyz" => {
            let r = metrics.readiness();
            let status = if r.is_ready() { 200 } else { 503 };
            (status, "text/plain", format!("{r}\n"))
        }
        _ => (
            404,
            "text/plain",
            "not found: /metrics, /healthz or /readyz\n".into(),
        ),
    }
}

/// The request's head (up to the blank line), `None` if it is longer than [`MAX_REQUEST`].
fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > MAX_REQUEST {
            return Ok(None);
        }
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

fn respond(stream: &mut TcpStream, status: u16, kind: &str, body: &[u8]) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_listens_on_loopback() {
        assert_eq!(parse_addr("9464"), Ok("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(parse_addr(":9464"), Ok("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(parse_addr("0.0.0.0:80"), Ok("0.0.0.0:80".parse().unwrap()));
        assert!(parse_addr("localhost").is_err());
    }

    #[test]
    fn each_path_answers_and_others_are_not_found() {
        let metrics = Metrics::new();
        let endpoint = serve("127.0.0.1:0".parse().unwrap(), metrics.clone()).unwrap();
        let get = |path: &str| {
            let mut s = TcpStream::connect(endpoint.addr()).unwrap();
            write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        };
        let m = get("/metrics");
        assert!(m.starts_with("HTTP/1.1 200"), "{m}");
        assert!(m.contains("application/openmetrics-text"), "{m}");
        assert!(m.trim_end().ends_with("# EOF"), "{m}");
        let mut s = TcpStream::connect(endpoint.addr()).unwrap();
        write!(s, "GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        assert!(
            text.contains("Content-Type: text/plain; version=0.0.4"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE sequencer_takeovers_total counter"),
            "{text}"
        );
        assert!(!text.contains("# EOF"), "{text}");
        assert!(get("/healthz").starts_with("HTTP/1.1 200"));
        assert!(get("/readyz").contains("ready: 0 partitions"));
        assert!(get("/nothing").starts_with("HTTP/1.1 404"));
    }
}
