//! Reading a store beside the live run that holds it: the run serves read-only requests on a
//! local Unix socket in its data directory (`live.sock`), each session from one snapshot of
//! the store, and `check` and `inspect` read through a [`LiveClient`], a
//! [`StoreReader`](crate::store::reader::StoreReader) like any other.
//!
//! - The run's side ([`serve`], on a [`LiveSource`]; `Store::serve_readers` for a store that
//!   has one) answers until its [`LiveServer`] is dropped, which removes the socket file; a
//!   file a killed run left is replaced by the next run.
//! - The reader's side ([`connect`]) says whether a run answered ([`Connect::Served`]), nobody
//!   serves the directory ([`Connect::NotServed`]: no socket, or a stale one), or something
//!   listens but does not answer within [`ANSWER_DEADLINE`] ([`Connect::NoAnswer`]: a
//!   stopped run).
//! - Consistency: a session's `Hello` takes a snapshot (a redb read transaction), which its
//!   reads of bounds, stored offsets and the view share; each read of events has a transaction
//!   of its own, ended with its reply, and lets the session's snapshot go (events never change
//!   once written, so a later state holds the same ones); the client opens a new session per
//!   partition it reads. A check reads each partition's stored offset, view and PLog end from
//!   one committed state, then its events up to that end, whatever the run appends meanwhile,
//!   and no snapshot is held while it works through events or rests. A `Hold` holds the run's
//!   commits (at most [`MAX_HOLD`]) while the reader copies the database for redb's integrity
//!   check.
//! - Sharing the machine: a client rests after each read of events as long as it worked
//!   ([`REST_PER_WORK`], `pace.rs`), so a reader takes at most about half a core from the run;
//!   the run's side keeps one reply buffer per session, and a reply of events stops at
//!   [`protocol::REPLY_BUDGET`] (1 MiB), so serving a reader takes no new buffer of a reply's size per reply.
//! - The protocol: [`protocol`] (versioned, length-prefixed, bounded frames).
//!
//! On targets without Unix sockets nothing is served and [`connect`] finds nobody: readers fall
//! back to a private copy of the store.

#[cfg(unix)]
mod pace;
pub mod protocol;
mod source;

#[cfg(unix)]
mod client;
#[cfg(unix)]
mod server;

#[cfg(unix)]
pub use client::{Connect, LiveClient, REST_PER_WORK, connect};
#[cfg(unix)]
pub use server::{LiveServer, serve};
pub use source::{
    ANSWER_DEADLINE, Held, IDLE_DEADLINE, LiveSource, MAX_HOLD, MAX_SESSIONS, REPLY_DEADLINE,
    SOCKET_FILE, socket_path,
};

/// Where Unix sockets are missing: nothing is served.
#[cfg(not(unix))]
pub struct LiveServer {
    _none: (),
}

/// Where Unix sockets are missing: nothing is served (`Ok(None)`).
#[cfg(not(unix))]
pub fn serve(
    _dir: &std::path::Path, _source: std::sync::Arc<dyn LiveSource>,
) -> Result<Option<LiveServer>, crate::store::storage::StorageError> {
    Ok(None)
}
