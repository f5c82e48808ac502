//! How to open a store: [`OpenOptions`], and what to do with its archive ([`ArchiveUse`]).

use std::path::PathBuf;
use std::time::Duration;

use crate::store::layout::Layout;

/// The default data directory (relative to the working directory).
pub const DEFAULT_DATA_DIR: &str = "sequencer-data";
/// How to open a store. [`OpenOptions::new`] opens an existing store or creates one, with no
/// layout to settle and no archive asked for.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    pub(crate) data: PathBuf,
    pub(crate) layout: Option<Layout>,
    pub(crate) create: bool,
    pub(crate) bundle_events: Option<u64>,
    pub(crate) store_wait: Duration,
    pub(crate) largest_event: Option<usize>,
    pub(crate) archive: ArchiveUse,
    pub(crate) own_tail: bool,
    pub(crate) hold_live_run: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenOptions {
    /// Open or create; the data directory [`DEFAULT_DATA_DIR`]; no layout; wait 60 s for a
    /// store that lost its majority (etcd) or answers nothing (S3); actualizations served
    /// from the host's own tail where the store can prove it ([`own_tail`](Self::own_tail)).
    pub fn new() -> Self {
        Self {
            data: PathBuf::from(DEFAULT_DATA_DIR),
            layout: None,
            create: true,
            bundle_events: None,
            store_wait: Duration::from_secs(60),
            largest_event: None,
            archive: ArchiveUse::default(),
            own_tail: true,
            hold_live_run: false,
        }
    }

    /// The data directory: the redb store's (`redb`), the object store's (`objects`), or the
    /// view's of a PLog on S3.
    pub fn data(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data = dir.into();
        self
    }

    /// The numbering layout the opener numbers by: recorded in a store that has none, and
    /// compared with the recorded one otherwise (a difference is refused before anything is
    /// written). Without it the store's own record stands and nothing is recorded.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Only an existing store: a missing one is refused instead of created.
    pub fn existing(mut self) -> Self {
        self.create = false;
        self
    }

    /// Events per bundle of a new object store (an existing one keeps its own).
    pub fn bundle_events(mut self, n: u64) -> Self {
        self.bundle_events = Some(n);
        self
    }

    /// How long to wait for a store that lost its majority (etcd), or a PLog on S3 that
    /// answers nothing, before the store reports a failure that stops its users.
    pub fn store_wait(mut self, wait: Duration) -> Self {
        self.store_wait = wait;
        self
    }

    /// The largest event (encoded, [`encoded_len`](crate::store::codec::encoded_len)) the
    /// opener will append: a store that cannot take it in one write is refused at open.
    pub fn largest_event(mut self, bytes: usize) -> Self {
        self.largest_event = Some(bytes);
        self
    }

    /// Whether [`Store::storage`](crate::store::Store::storage) serves actualizations from
    /// what this host appended ([`OwnTail`](crate::store::layers::OwnTail)) on a store that
    /// proves its PLog's end in one cheap read (etcd); on by default. Off, every
    /// actualization reads the store (for comparisons).
    pub fn own_tail(mut self, on: bool) -> Self {
        self.own_tail = on;
        self
    }

    /// Reading a redb data directory beside the live run that holds it: whether redb's
    /// integrity check also runs, on a copy taken while the run holds its commits (every
    /// command processor of the run waits for that copy, seconds for a large store). Off by
    /// default: a reader then reads the run's snapshot only, which never holds its commits,
    /// and every event's checksum is still verified as it is read.
    pub fn hold_live_run(mut self, on: bool) -> Self {
        self.hold_live_run = on;
        self
    }

    /// The store's archive of old PLog events: the recorded one is always used; see
    /// [`ArchiveUse`] to name one or write to it.
    pub fn archive(mut self, archive: ArchiveUse) -> Self {
        self.archive = archive;
        self
    }
}

/// What an open does with the store's archive of old PLog events (see
/// [`sequencer-host archive`](crate::store::layers::archive)). The recorded archive is always
/// used, read-only, unless [`writable`](Self::writable).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchiveUse {
    pub(super) asked: Option<PathBuf>,
    pub(super) writes: bool,
    pub(super) bundle_events: Option<u64>,
}

impl ArchiveUse {
    /// Use the archive at `root` (a local directory of bundles): recorded with the store if it
    /// records none (created if missing), refused if it records another.
    pub fn named(mut self, root: impl Into<PathBuf>) -> Self {
        self.asked = Some(root.into());
        self
    }

    /// Open the archive for writing (archive passes); the store must record one or
    /// [`named`](Self::named) one.
    pub fn writable(mut self) -> Self {
        self.writes = true;
        self
    }

    /// Events per bundle of a new archive (default
    /// [`DEFAULT_ARCHIVE_BUNDLE_EVENTS`](crate::store::layers::archive::DEFAULT_ARCHIVE_BUNDLE_EVENTS));
    /// an existing one keeps its own.
    pub fn bundle_events(mut self, n: u64) -> Self {
        self.bundle_events = Some(n);
        self
    }

    /// Whether the opener asked for an archive (named one, or wants to write).
    pub(super) fn wanted(&self) -> bool {
        self.asked.is_some() || self.writes
    }
}
