//! The fuzz harness: arbitrary bytes decoded into a sequence of calls through the component
//! boundary — any params, transactions, deliveries under arbitrary (often wrong) operation ids
//! with arbitrary outcomes and malformed PLog pages, bad `read-numbers` answers, clock moves,
//! cleanup — run against the compiled component and the native core in lockstep.
//!
//! What must hold for every input: no trap, no panic, only typed refusals; a refused call
//! changes nothing (status and held numbers); and the two engines agree on every reply and
//! every request. The same function serves the cargo-fuzz target (`fuzz/`) and the CI smoke
//! test, so a crash input found by one replays in the other.

use sequencer::{SeqValue, Status, Work, WriteRequest};
use sequencer_host::runtime::GuestParams;
use sequencer_host::runtime::bindings::sequencer::plugin::types::KindSequences;

use super::calls::{Call, Delivery, Engine, Reply, Started};
use super::engine::{EngineKind, boot};
use super::io::{Effect, Io, NumbersAnswer};
use super::rng::Rng;

/// Reads the input front to back; past its end every read is 0.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bytes<'_> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        (u64::from(self.u32()) << 32) | u64::from(self.u32())
    }

    /// A number that is mostly small, sometimes anything.
    fn offset(&mut self) -> u64 {
        match self.u8() % 8 {
            0 => self.u64(),
            1 => u64::MAX - u64::from(self.u8()),
            _ => u64::from(self.u8() % 16),
        }
    }
}

/// What an input did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FuzzReport {
    /// Calls made (creation included).
    pub calls: usize,
    /// Calls refused with a typed error.
    pub refusals: usize,
    /// The sequencer was created (the params were valid).
    pub created: bool,
}

fn params(b: &mut Bytes<'_>) -> GuestParams {
    let mode = b.u8();
    if mode < 192 {
        // Valid kinds, limits from the input (an LRU smaller than a kind is refused).
        GuestParams {
            kinds: vec![
                KindSequences {
                    kind: 1,
                    sequences: vec![(1, 1), (2, 50), (3, 7)],
                },
                KindSequences {
                    kind: 2,
                    sequences: vec![(1, 1), (9, u64::MAX - 3)],
                },
            ],
            max_unflushed_values: u32::from(b.u8() % 8),
            lru_cache_size: u32::from(b.u8() % 12),
            batcher_delay_ns: u64::from(b.u8()) * 1_000,
            retry_delay_ns: u64::from(b.u8()) * 1_000,
            max_retry_delay_ns: u64::from(b.u16()) * 1_000,
            retry_jitter_percent: b.u8() % 101,
        }
    } else {
        let kinds = (0..b.u8() % 4)
            .map(|_| KindSequences {
                kind: u16::from(b.u8() % 4),
                sequences: (0..b.u8() % 4)
                    .map(|_| (u16::from(b.u8() % 12), b.offset()))
                    .collect(),
            })
            .collect();
        GuestParams {
            kinds,
            max_unflushed_values: b.u32(),
            lru_cache_size: b.u32(),
            batcher_delay_ns: b.u64(),
            retry_delay_ns: b.u64(),
            max_retry_delay_ns: b.u64(),
            retry_jitter_percent: b.u8(),
        }
    }
}

fn outcome(b: &mut Bytes<'_>) -> Delivery {
    match b.u8() % 4 {
        0 => Delivery::Written,
        1 => Delivery::NextOffset(b.offset()),
        2 => {
            let values = (0..b.u8() % 6)
                .map(|_| {
                    let offset = b.offset();
                    (
                        offset,
                        SeqValue::new(u64::from(b.u8() % 4), u16::from(b.u8() % 10), b.offset()),
                    )
                })
                .collect();
            Delivery::PlogPage {
                values,
                next: b.offset(),
                end: b.u8() & 1 == 1,
            }
        }
        _ => Delivery::Failed("fuzzed failure".into()),
    }
}

/// The harness's own world: the engines, their I/O, and what they began.
struct Harness {
    engine: Box<dyn Engine>,
    io: Io,
    outstanding: Vec<Work>,
    /// The transaction's offset and numbers, for committing it to the PLog.
    tx: Option<(u64, u64, Vec<SeqValue>)>,
    report: FuzzReport,
}

impl Harness {
    fn call(&mut self, call: Call) -> Result<Reply, String> {
        self.report.calls += 1;
        let reply = self
            .engine
            .call(&call, &mut self.io)
            .map_err(|e| format!("{e}"))?;
        for effect in std::mem::take(&mut self.io.effects) {
            if let Effect::Begin(b) = effect {
                self.outstanding.push(b);
            }
        }
        Ok(reply)
    }

    fn observe(&mut self) -> Result<(Status, String), String> {
        let status = match self.call(Call::Status)? {
            Reply::Status(s) => s,
            other => return Err(format!("status returned {other:?}")),
        };
        let held = format!("{:?}", self.call(Call::HeldNumbers)?);
        Ok((status, held))
    }

    /// One call that, if refused, must change nothing observable.
    fn checked(&mut self, call: Call) -> Result<Reply, String> {
        let before = self.observe()?;
        let reply = self.call(call.clone())?;
        let refused = matches!(
            reply,
            Reply::Start(Err(_)) | Reply::Number(Err(_)) | Reply::Done(Err(_))
        );
        if refused {
            self.report.refusals += 1;
            let after = self.observe()?;
            if after != before {
                return Err(format!(
                    "{call:?} was refused ({reply:?}) yet changed the sequencer: {before:?} -> {after:?}"
                ));
            }
        }
        Ok(reply)
    }

    /// Answers the oldest outstanding operation correctly from the harness's storage.
    fn serve(&mut self, max_events: usize) -> Result<(), String> {
        if self.outstanding.is_empty() {
            return Ok(());
        }
        let begun = self.outstanding.remove(0);
        let outcome = match &begun {
            Work::ReadNextOffset { .. } => Delivery::NextOffset(self.io.storage.mem.next_offset),
            Work::Write(WriteRequest {
                values,
                next_plog_offset: next_offset,
                ..
            }) => {
                let (values, next) = (values.clone(), *next_offset);
                self.io
                    .storage
                    .apply(super::storage::WriteHalf::Values, &values, next);
                self.io
                    .storage
                    .apply(super::storage::WriteHalf::Offset, &values, next);
                Delivery::Written
            }
            Work::ReadPlog { from, .. } => {
                let (values, next, end) = self.io.storage.mem.read_plog(*from, max_events);
                Delivery::PlogPage { values, next, end }
            }
        };
        self.checked(Call::Deliver {
            op: begun.ticket().0,
            outcome,
        })
        .map(drop)
    }
}

/// Runs one input through both engines; `Err` describes the first trap, panic, divergence or
/// refused-yet-changed call.
pub fn run_input(data: &[u8]) -> Result<FuzzReport, String> {
    let mut b = Bytes { data, pos: 0 };
    let params = params(&mut b);
    let mut io = Io {
        now: u64::from(b.u16()),
        ..Io::default()
    };
    let engine = match boot(EngineKind::Both, &params, &mut io).map_err(|e| format!("{e}"))? {
        Ok(engine) => engine,
        Err(_) => {
            return Ok(FuzzReport {
                calls: 1,
                refusals: 1,
                created: false,
            });
        }
    };
    let mut h = Harness {
        engine,
        io,
        outstanding: Vec::new(),
        tx: None,
        report: FuzzReport {
            calls: 1,
            refusals: 0,
            created: true,
        },
    };
    for effect in std::mem::take(&mut h.io.effects) {
        if let Effect::Begin(begun) = effect {
            h.outstanding.push(begun);
        }
    }
    let mut calls = 0;
    while !b.done() && calls < 400 {
        calls += 1;
        match b.u8() % 16 {
            0 => {
                let (kind, ws) = (u16::from(b.u8() % 4), u64::from(b.u8() % 4));
                let reply = h.checked(Call::Start { kind, ws })?;
                if let Reply::Start(Ok(Started::Offset(o))) = reply {
                    h.tx = Some((o, ws, Vec::new()));
                }
            }
            1 => {
                let seq = match b.u8() % 6 {
                    0 => 1,
                    1 => 2,
                    2 => 3,
                    3 => 9,
                    4 => 77,
                    _ => b.u16(),
                };
                if let Reply::Number(Ok(n)) = h.checked(Call::Next { seq })?
                    && let Some((_, ws, values)) = &mut h.tx
                {
                    values.push(SeqValue::new(*ws, seq, n));
                }
            }
            2 => {
                if let Reply::Done(Ok(())) = h.checked(Call::Flush)? {
                    h.tx = None;
                }
            }
            3 => {
                if let Reply::Done(Ok(())) = h.checked(Call::Actualize)? {
                    h.tx = None;
                }
            }
            4 | 14 | 15 => {
                let max_events = 1 + usize::from(b.u8() % 4);
                h.serve(max_events)?;
            }
            5 => {
                let op = match b.u8() % 4 {
                    0 => b.u64(),
                    _ if h.outstanding.is_empty() => u64::from(b.u8()),
                    _ => {
                        let i = usize::from(b.u8()) % h.outstanding.len();
                        h.outstanding[i].ticket().0
                    }
                };
                let outcome = outcome(&mut b);
                if let Reply::Done(Ok(())) = h.checked(Call::Deliver { op, outcome })? {
                    h.outstanding.retain(|o| o.ticket().0 != op);
                }
            }
            6 => {
                h.call(Call::Pump)?;
            }
            7 => {
                let d = if b.u8().is_multiple_of(8) {
                    b.u64()
                } else {
                    u64::from(b.u16()) * 10_000
                };
                h.io.now = h.io.now.saturating_add(d);
            }
            8 => {
                let (kind, ws) = (u16::from(b.u8() % 4), u64::from(b.u8() % 4));
                let seqs = (0..b.u8() % 6).map(|_| u16::from(b.u8() % 10)).collect();
                if let Reply::StartNext(Ok((Started::Offset(o), numbers))) =
                    h.call(Call::StartNext {
                        kind,
                        ws,
                        seqs: Vec::clone(&seqs),
                    })?
                {
                    let values = seqs
                        .iter()
                        .zip(numbers)
                        .map(|(&s, n)| SeqValue::new(ws, s, n))
                        .collect();
                    h.tx = Some((o, ws, values));
                }
            }
            9 => {
                h.io.numbers = match b.u8() % 3 {
                    0 => NumbersAnswer::FromStorage,
                    1 => NumbersAnswer::Fail("fuzzed read failure".into()),
                    _ => NumbersAnswer::Fixed((0..b.u8() % 5).map(|_| b.offset()).collect()),
                };
            }
            10 => {
                if b.u8().is_multiple_of(4) {
                    h.call(Call::Cleanup)?;
                    h.tx = None;
                }
            }
            11 => {
                // Commit the transaction: its event goes to the PLog, then flush.
                if let Some((offset, _, values)) = h.tx.take()
                    && offset == h.io.storage.mem.plog_next()
                {
                    h.io.storage.mem.plog.insert(offset, values);
                    h.checked(Call::Flush)?;
                }
            }
            12 => {
                h.observe()?;
            }
            _ => h.io.storage.mem.faults.down = !h.io.storage.down(),
        }
    }
    Ok(h.report)
}

/// A random input of up to `max_len` bytes, for smoke runs without a fuzzer.
pub fn random_input(rng: &mut Rng, max_len: usize) -> Vec<u8> {
    let len = rng.index(max_len + 1);
    (0..len).map(|_| rng.next_u64() as u8).collect()
}
