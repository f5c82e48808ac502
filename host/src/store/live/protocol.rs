//! The live socket's protocol, version [`VERSION`]: length-prefixed binary frames, one request
//! then one reply, in order, on one connection (a *session*).
//!
//! A frame is a little-endian `u32` length, then that many bytes: a tag byte and the fields,
//! integers little-endian, a string or a byte string as a `u32` length and its bytes, a list
//! as a `u32` count and its items, an option as a byte 0 or 1 and the item. Requests are at
//! most [`MAX_REQUEST`] bytes, replies at most [`MAX_REPLY`]; a reply of events stops at
//! [`REPLY_BUDGET`] bytes (always at least one event), of view rows at [`MAX_VIEW_ROWS`].
//!
//! | request (tag) | fields | reply (tag) |
//! |---|---|---|
//! | `Hello` (1) | version `u16` | `Hello` (1): version `u16`, pid `u32`, description, statistics as (name, value) pairs |
//! | `Partitions` (2) | | `Partitions` (2): `u32`s |
//! | `Bounds` (3) | partition `u32` | `Bounds` (3): an option of (first, last) `u64`s |
//! | `Events` (4) | partition `u32`, from `u64`, max `u32` | `Events` (4): events: offset `u64`, values (ws `u64`, seq `u16`, value `u64`), payload |
//! | `StoredNext` (5) | partition `u32` | `Offset` (5): `u64` |
//! | `View` (6) | partition `u32`, after: an option of (ws `u64`, seq `u16`), max `u32` | `View` (6): rows (ws `u64`, seq `u16`, last `u64`) |
//! | `Hold` (7) | | `Held` (7) |
//! | `Release` (8) | | `Released` (8) |
//!
//! Any request may be answered `Error` (255): a message. A session begins with `Hello`, which
//! takes its snapshot; every read after it comes from that snapshot.

use std::io::{self, Read, Write};

use sequencer::SeqValue;

use crate::store::codec::{Checksum, StoredEvent};

/// The protocol's version: a `Hello` naming another is refused.
pub const VERSION: u16 = 1;
/// The largest request frame, in bytes.
pub const MAX_REQUEST: usize = 4096;
/// The largest reply frame, in bytes.
pub const MAX_REPLY: usize = 64 << 20;
/// Where a reply of events stops adding events, in bytes.
pub const REPLY_BUDGET: usize = 1 << 20;
/// The most events one reply holds.
pub const MAX_EVENTS: u32 = 16_384;
/// The most view rows one reply holds.
pub const MAX_VIEW_ROWS: u32 = 65_536;

/// What a client asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Opens the session and takes its snapshot.
    Hello {
        /// The protocol version the client speaks.
        version: u16,
    },
    /// The partitions with a PLog or a stored next offset.
    Partitions,
    /// A partition's first and last PLog offsets.
    Bounds {
        /// The partition.
        partition: u32,
    },
    /// Events of a partition's PLog from `from` on.
    Events {
        /// The partition.
        partition: u32,
        /// The first offset wanted.
        from: u64,
        /// The most events wanted.
        max: u32,
    },
    /// A partition's stored next offset.
    StoredNext {
        /// The partition.
        partition: u32,
    },
    /// A page of a partition's sequences view, in key order.
    View {
        /// The partition.
        partition: u32,
        /// The key the page starts after (`None`: from the first).
        after: Option<(u64, u16)>,
        /// The most rows wanted.
        max: u32,
    },
    /// Holds the store's commits (the file stays still) until `Release`.
    Hold,
    /// Ends a hold.
    Release,
}

/// What the run answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The session is open and its snapshot taken.
    Hello {
        /// The version the run speaks.
        version: u16,
        /// The run's process id.
        pid: u32,
        /// The store, in one line.
        describe: String,
        /// Figures about the store.
        statistics: Vec<(String, String)>,
    },
    /// Partitions.
    Partitions(Vec<u32>),
    /// PLog bounds.
    Bounds(Option<(u64, u64)>),
    /// Events, in offset order.
    Events(Vec<StoredEvent>),
    /// An offset.
    Offset(u64),
    /// View rows (workspace, sequence, last), in key order.
    View(Vec<(u64, u16, u64)>),
    /// Commits are held.
    Held,
    /// The hold ended, and lasted until the `Release`.
    Released,
    /// The request was refused or failed.
    Error(String),
}

const ERROR: u8 = 255;

/// A frame's body that is not a message of this protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

struct Out(Vec<u8>);

impl Out {
    fn new(tag: u8) -> Self {
        Self::reusing(Vec::new(), tag)
    }
    /// A message in `buffer`, emptied first: a sender that keeps one buffer for all its
    /// messages allocates no new memory per message once it is large enough.
    fn reusing(mut buffer: Vec<u8>, tag: u8) -> Self {
        buffer.clear();
        buffer.push(tag);
        Self(buffer)
    }
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn len(&mut self, n: usize) -> &mut Self {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX))
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.len(b.len());
        self.0.extend_from_slice(b);
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }
    fn done(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

struct In<'a> {
    rest: &'a [u8],
}

impl<'a> In<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.rest.len() < n {
            return Err(Malformed(format!(
                "the message ends early ({} bytes left, {n} wanted)",
                self.rest.len()
            )));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.array::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, Malformed> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// A count of items at least `each` bytes long, checked against what is left so that a
    /// bad count never allocates.
    fn count(&mut self, each: usize) -> Result<usize, Malformed> {
        let n = usize::try_from(self.u32()?).unwrap_or(usize::MAX);
        if n.saturating_mul(each) > self.rest.len() {
            return Err(Malformed(format!(
                "a count of {n} does not fit in the message"
            )));
        }
        Ok(n)
    }
    fn bytes(&mut self) -> Result<&'a [u8], Malformed> {
        let n = self.count(1)?;
        self.take(n)
    }
    fn str(&mut self) -> Result<String, Malformed> {
        String::from_utf8(self.bytes()?.to_vec())
            .map_err(|_| Malformed("a string is not UTF-8".into()))
    }
    fn option(&mut self) -> Result<bool, Malformed> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(Malformed(format!("an option's flag is {b}, not 0 or 1"))),
        }
    }
    fn end(&self) -> Result<(), Malformed> {
        match self.rest.len() {
            0 => Ok(()),
            n => Err(Malformed(format!("{n} bytes follow the message"))),
        }
    }
}

impl Request {
    /// The frame's body.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Self::Hello { version } => Out::new(1).u16(*version).done(),
            Self::Partitions => Out::new(2).0,
            Self::Bounds { partition } => Out::new(3).u32(*partition).done(),
            Self::Events {
                partition,
                from,
                max,
            } => Out::new(4).u32(*partition).u64(*from).u32(*max).done(),
            Self::StoredNext { partition } => Out::new(5).u32(*partition).done(),
            Self::View {
                partition,
                after,
                max,
            } => {
                let mut o = Out::new(6);
                o.u32(*partition);
                match after {
                    Some((ws, seq)) => o.u8(1).u64(*ws).u16(*seq),
                    None => o.u8(0),
                };
                o.u32(*max);
                o.0
            }
            Self::Hold => Out::new(7).0,
            Self::Release => Out::new(8).0,
        }
    }

    /// The request a frame's body holds.
    pub fn decode(body: &[u8]) -> Result<Self, Malformed> {
        let mut i = In { rest: body };
        let request = match i.u8()? {
            1 => Self::Hello { version: i.u16()? },
            2 => Self::Partitions,
            3 => Self::Bounds {
                partition: i.u32()?,
            },
            4 => Self::Events {
                partition: i.u32()?,
                from: i.u64()?,
                max: i.u32()?,
            },
            5 => Self::StoredNext {
                partition: i.u32()?,
            },
            6 => Self::View {
                partition: i.u32()?,
                after: match i.option()? {
                    true => Some((i.u64()?, i.u16()?)),
                    false => None,
                },
                max: i.u32()?,
            },
            7 => Self::Hold,
            8 => Self::Release,
            tag => return Err(Malformed(format!("unknown request {tag}"))),
        };
        i.end()?;
        Ok(request)
    }
}

/// An event's [`Checksum`] on the wire: 0 verified, 1 absent (written before checksums), 2 a
/// mismatch (the reader reports the damage; the values travel as stored).
fn checksum_tag(checksum: Checksum) -> u8 {
    match checksum {
        Checksum::Verified => 0,
        Checksum::Absent => 1,
        Checksum::Mismatch => 2,
    }
}

/// The [`Checksum`] a tag of [`checksum_tag`] stands for.
fn checksum_from_tag(tag: u8) -> Result<Checksum, Malformed> {
    match tag {
        0 => Ok(Checksum::Verified),
        1 => Ok(Checksum::Absent),
        2 => Ok(Checksum::Mismatch),
        t => Err(Malformed(format!(
            "an event's checksum state is {t}, not 0, 1 or 2"
        ))),
    }
}

/// The encoded size of an event in a reply.
pub fn event_len(e: &StoredEvent) -> usize {
    8 + 1 + 4 + e.values.len() * 18 + 4 + e.payload.len()
}

impl Reply {
    /// The frame's body.
    pub fn encode(&self) -> Vec<u8> {
        self.encode_into(Vec::new())
    }

    /// The frame's body, written over `buffer` (emptied first; its memory kept): the run's
    /// side keeps one per session, so that a reply of up to [`REPLY_BUDGET`] bytes does not
    /// take and give back that much new memory each time.
    pub fn encode_into(&self, buffer: Vec<u8>) -> Vec<u8> {
        let out = |tag| Out::reusing(buffer, tag);
        match self {
            Self::Hello {
                version,
                pid,
                describe,
                statistics,
            } => {
                let mut o = out(1);
                o.u16(*version)
                    .u32(*pid)
                    .str(describe)
                    .len(statistics.len());
                for (name, value) in statistics {
                    o.str(name).str(value);
                }
                o.0
            }
            Self::Partitions(ps) => {
                let mut o = out(2);
                o.len(ps.len());
                for p in ps {
                    o.u32(*p);
                }
                o.0
            }
            Self::Bounds(b) => {
                let mut o = out(3);
                match b {
                    Some((first, last)) => o.u8(1).u64(*first).u64(*last),
                    None => o.u8(0),
                };
                o.0
            }
            Self::Events(events) => {
                let mut o = out(4);
                o.0.reserve(events.iter().map(event_len).sum::<usize>() + 4);
                o.len(events.len());
                for e in events {
                    o.u64(e.offset)
                        .u8(checksum_tag(e.checksum))
                        .len(e.values.len());
                    for v in &e.values {
                        o.u64(v.key.ws).u16(v.key.seq).u64(v.value);
                    }
                    o.bytes(&e.payload);
                }
                o.0
            }
            Self::Offset(offset) => out(5).u64(*offset).done(),
            Self::View(rows) => {
                let mut o = out(6);
                o.len(rows.len());
                for (ws, seq, last) in rows {
                    o.u64(*ws).u16(*seq).u64(*last);
                }
                o.0
            }
            Self::Held => out(7).0,
            Self::Released => out(8).0,
            Self::Error(message) => out(ERROR).str(message).done(),
        }
    }

    /// The reply a frame's body holds.
    pub fn decode(body: &[u8]) -> Result<Self, Malformed> {
        let mut i = In { rest: body };
        let reply = match i.u8()? {
            1 => {
                let (version, pid, describe) = (i.u16()?, i.u32()?, i.str()?);
                let n = i.count(8)?;
                let statistics = (0..n)
                    .map(|_| Ok((i.str()?, i.str()?)))
                    .collect::<Result<_, Malformed>>()?;
                Self::Hello {
                    version,
                    pid,
                    describe,
                    statistics,
                }
            }
            2 => {
                let n = i.count(4)?;
                Self::Partitions((0..n).map(|_| i.u32()).collect::<Result<_, _>>()?)
            }
            3 => Self::Bounds(match i.option()? {
                true => Some((i.u64()?, i.u64()?)),
                false => None,
            }),
            4 => {
                let n = i.count(16)?;
                let mut events = Vec::with_capacity(n);
                for _ in 0..n {
                    let offset = i.u64()?;
                    let checksum = checksum_from_tag(i.u8()?)?;
                    let k = i.count(18)?;
                    let values = (0..k)
                        .map(|_| Ok(SeqValue::new(i.u64()?, i.u16()?, i.u64()?)))
                        .collect::<Result<_, Malformed>>()?;
                    let payload = i.bytes()?.to_vec();
                    events.push(StoredEvent {
                        offset,
                        values,
                        payload,
                        checksum,
                    });
                }
                Self::Events(events)
            }
            5 => Self::Offset(i.u64()?),
            6 => {
                let n = i.count(18)?;
                Self::View(
                    (0..n)
                        .map(|_| Ok((i.u64()?, i.u16()?, i.u64()?)))
                        .collect::<Result<_, Malformed>>()?,
                )
            }
            7 => Self::Held,
            8 => Self::Released,
            ERROR => Self::Error(i.str()?),
            tag => return Err(Malformed(format!("unknown reply {tag}"))),
        };
        i.end()?;
        Ok(reply)
    }
}

/// Why a frame could not be read.
#[derive(Debug)]
pub enum FrameError {
    /// The peer closed the connection before a frame began.
    Closed,
    /// The frame is longer than the reader takes (its length; the body was not read).
    TooLarge(u64),
    /// Reading failed (a timeout included).
    Io(io::Error),
}

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    // The length and the body in two writes, not one copy of a body of up to MAX_REPLY bytes.
    w.write_all(&len.to_le_bytes())?;
    w.write_all(body)?;
    w.flush()
}

/// Reads one frame of at most `max` bytes.
pub fn read_frame(r: &mut impl Read, max: usize) -> Result<Vec<u8>, FrameError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < len.len() {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Err(FrameError::Closed),
            Ok(0) => return Err(FrameError::Io(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    let len = u32::from_le_bytes(len);
    let n = usize::try_from(len).unwrap_or(usize::MAX);
    if n > max {
        return Err(FrameError::TooLarge(u64::from(len)));
    }
    let mut body = vec![0; n];
    r.read_exact(&mut body).map_err(FrameError::Io)?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_reads_back_as_written() {
        let requests = [
            Request::Hello { version: VERSION },
            Request::Partitions,
            Request::Bounds { partition: 7 },
            Request::Events {
                partition: 1,
                from: 42,
                max: 9,
            },
            Request::StoredNext { partition: 3 },
            Request::View {
                partition: 2,
                after: Some((5, 3)),
                max: 10,
            },
            Request::View {
                partition: 2,
                after: None,
                max: 10,
            },
            Request::Hold,
            Request::Release,
        ];
        for r in requests {
            assert_eq!(Request::decode(&r.encode()), Ok(r));
        }
        let replies = [
            Reply::Hello {
                version: 1,
                pid: 9,
                describe: "d".into(),
                statistics: vec![("a".into(), "b".into())],
            },
            Reply::Partitions(vec![0, 3]),
            Reply::Bounds(Some((1, 9))),
            Reply::Bounds(None),
            Reply::Events(vec![
                StoredEvent {
                    offset: 4,
                    values: vec![SeqValue::new(1, 2, 3)],
                    payload: b"xyz".to_vec(),
                    checksum: Checksum::Verified,
                },
                StoredEvent {
                    offset: 5,
                    values: vec![],
                    payload: vec![],
                    checksum: Checksum::Absent,
                },
                StoredEvent {
                    offset: 6,
                    values: vec![SeqValue::new(1, 2, 4)],
                    payload: b"!".to_vec(),
                    checksum: Checksum::Mismatch,
                },
            ]),
            Reply::Offset(12),
            Reply::View(vec![(1, 2, 3)]),
            Reply::Held,
            Reply::Released,
            Reply::Error("no".into()),
        ];
        // Encoded over one kept buffer that first held the largest, each reply is the bytes it
        // encodes to alone, written in that buffer's memory.
        let largest = replies
            .iter()
            .max_by_key(|r| r.encode().len())
            .expect("replies");
        let mut kept = largest.encode_into(Vec::new());
        let at = kept.as_ptr();
        for r in &replies {
            kept = r.encode_into(kept);
            assert_eq!(kept, r.encode());
            assert_eq!(kept.as_ptr(), at, "{r:?} took new memory");
        }
        for r in replies {
            assert_eq!(Reply::decode(&r.encode()), Ok(r));
        }
    }

    #[test]
    fn malformed_bodies_are_refused_without_allocating_what_they_claim() {
        assert!(Request::decode(&[]).is_err());
        assert!(Request::decode(&[99]).is_err());
        assert!(Request::decode(&[3, 1]).is_err());
        assert!(Request::decode(&[2, 0]).is_err(), "trailing bytes");
        // A count of 4 billion events in a 5-byte body.
        assert!(Reply::decode(&[4, 255, 255, 255, 255]).is_err());
    }

    #[test]
    fn a_frame_longer_than_allowed_is_refused_before_its_body_is_read() {
        let mut bytes: &[u8] = &[0, 0, 1, 0, 1, 2, 3];
        assert!(matches!(
            read_frame(&mut bytes, 16),
            Err(FrameError::TooLarge(65536))
        ));
        let mut empty: &[u8] = &[];
        assert!(matches!(
            read_frame(&mut empty, 16),
            Err(FrameError::Closed)
        ));
    }
}
