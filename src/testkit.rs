//! A reference driver over in-memory storage: runs the sequencer's work synchronously, with
//! switches to hold or fail storage operations. For tests, examples and simulations; a real host
//! drives the same calls against real storage.

use core::time::Duration;
use std::collections::BTreeMap;

use hashbrown::HashMap;

use std::collections::VecDeque;

use crate::shell::{Host, Read, Shell};
use crate::{
    Error, Instant, Number, NumberKey, Outcome, PLogOffset, Params, PlogPage, SeqId, SeqValue,
    Sequencer, Start, Status, Work, WriteRequest, WsId, WsKind,
};

/// A PLog in memory: events by offset.
pub type Plog = BTreeMap<PLogOffset, Vec<SeqValue>>;

/// The offset `plog` accepts next: after its last event, or 1 when it is empty.
pub fn plog_next(plog: &Plog) -> PLogOffset {
    plog.last_key_value().map_or(1, |(o, _)| o + 1)
}

/// Up to `max_events` events of `plog` from `from` on, flattened as a [`PlogPage`] wants them:
/// the values, the offset after the last event read, and whether the PLog ends there.
pub fn plog_page(
    plog: &Plog, from: PLogOffset, max_events: usize,
) -> (Vec<(PLogOffset, SeqValue)>, PLogOffset, bool) {
    let mut values = Vec::new();
    let mut next = from;
    let mut events = plog.range(from..);
    for (&offset, event) in events.by_ref().take(max_events) {
        values.extend(event.iter().map(|v| (offset, *v)));
        next = offset + 1;
    }
    let end = events.next().is_none();
    (values, next, end)
}

/// The first event of `plog` below `next_offset` with a number the view (`stored`: the view's
/// number of a key, 0 if none) lacks, if any: a restart would skip replaying it and hand its
/// numbers out again.
pub fn offset_ahead_of_values(
    plog: &Plog, next_offset: PLogOffset, stored: impl Fn(&NumberKey) -> Number,
) -> Option<(PLogOffset, SeqValue)> {
    plog.range(..next_offset).find_map(|(&offset, event)| {
        event
            .iter()
            .find(|v| stored(&v.key) < v.value)
            .map(|v| (offset, *v))
    })
}

/// An append at an offset other than the PLog's next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongOffset {
    /// The offset the PLog accepts next.
    pub expected: PLogOffset,
    /// The offset that was offered.
    pub offered: PLogOffset,
}

/// One write storage received, recorded in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StorageOp {
    /// A sequence value was written.
    Value(SeqValue),
    /// The next PLog offset was written.
    Offset(PLogOffset),
}

/// The PLog, the sequences view and the stored next PLog offset of one partition, in memory,
/// with switches to make it misbehave: the one storage model of the tests, the simulator and
/// the conformance suite's Rust runners.
#[derive(Clone, Debug, Default)]
pub struct MemStorage {
    /// The sequences view: last number per key.
    pub numbers: HashMap<NumberKey, Number>,
    /// The stored next PLog offset (0: none stored).
    pub next_offset: PLogOffset,
    /// PLog events by offset.
    pub plog: Plog,
    /// Every write, in the order storage received it.
    pub ops: Vec<StorageOp>,
    /// Misbehaviour to inject (the drivers over this storage honour it).
    pub faults: Faults,
}

impl MemStorage {
    /// Empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    /// Places an event at any offset, as a test's starting state.
    pub fn seed_event(&mut self, offset: PLogOffset, values: &[SeqValue]) {
        self.plog.insert(offset, values.to_vec());
    }

    /// The offset the PLog accepts next: after its last event, or 1 when it is empty.
    pub fn plog_next(&self) -> PLogOffset {
        plog_next(&self.plog)
    }

    /// Appends an event at exactly `offset`, refusing any other offset.
    pub fn append(&mut self, offset: PLogOffset, values: &[SeqValue]) -> Result<(), WrongOffset> {
        let expected = self.plog_next();
        if offset != expected {
            return Err(WrongOffset {
                expected,
                offered: offset,
            });
        }
        self.plog.insert(offset, values.to_vec());
        Ok(())
    }

    /// The stored numbers of `seqs` in workspace `ws`, 0 for a key never stored.
    pub fn read_numbers(&self, ws: WsId, seqs: &[SeqId]) -> Vec<Number> {
        seqs.iter()
            .map(|&seq| {
                self.numbers
                    .get(&NumberKey { ws, seq })
                    .copied()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// A numbers read as a host answers it: the stored numbers, or a failure when one is due
    /// (see [`Faults`]).
    pub fn answer_numbers(&mut self, ws: WsId, seqs: &[SeqId]) -> Read {
        if self.faults.numbers_read_fails() {
            return Read::Failed("injected numbers read failure".into());
        }
        Read::Numbers(self.read_numbers(ws, seqs))
    }

    /// [`answer_numbers`](Self::answer_numbers) for several workspaces: `seqs.len()` numbers
    /// per workspace of `ws`, in order.
    pub fn answer_numbers_many(&mut self, ws: &[WsId], seqs: &[SeqId]) -> Read {
        if self.faults.numbers_read_fails() {
            return Read::Failed("injected numbers read failure".into());
        }
        Read::Numbers(
            ws.iter()
                .flat_map(|&w| self.read_numbers(w, seqs))
                .collect(),
        )
    }

    /// Writes the values, then the offset.
    pub fn write(&mut self, values: &[SeqValue], next_offset: PLogOffset) {
        self.write_values(values);
        self.write_offset(next_offset);
    }

    /// The first half of a write: the values only.
    pub fn write_values(&mut self, values: &[SeqValue]) {
        for v in values {
            self.numbers.insert(v.key, v.value);
            self.ops.push(StorageOp::Value(*v));
        }
    }

    /// The second half of a write: the offset only.
    pub fn write_offset(&mut self, next_offset: PLogOffset) {
        self.next_offset = next_offset;
        self.ops.push(StorageOp::Offset(next_offset));
    }

    /// Up to `max_events` events from `from` on, flattened as a [`PlogPage`] wants them:
    /// the values, the offset after the last event read, and whether the PLog ends there.
    pub fn read_plog(
        &self, from: PLogOffset, max_events: usize,
    ) -> (Vec<(PLogOffset, SeqValue)>, PLogOffset, bool) {
        plog_page(&self.plog, from, max_events)
    }

    /// Checks that the stored offset is not ahead of its values: every event below the stored
    /// next offset has its numbers (or larger) in the view. Returns the first violation.
    pub fn offset_ahead_of_values(&self) -> Option<(PLogOffset, SeqValue)> {
        offset_ahead_of_values(&self.plog, self.next_offset, |k| {
            self.numbers.get(k).copied().unwrap_or(0)
        })
    }
}

/// Switches that make a [`MemStorage`] misbehave. Counters count down one per failed
/// operation.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Fail this many of the next writes (nothing written).
    pub fail_writes: u32,
    /// Fail this many of the next PLog or offset reads.
    pub fail_reads: u32,
    /// Fail this many of the next numbers reads.
    pub fail_number_reads: u32,
    /// Keep writes outstanding until [`Driver::release_writes`].
    pub hold_writes: bool,
    /// Storage is down: every operation fails until this is cleared.
    pub down: bool,
}

impl Faults {
    /// Takes one failure of a write, if one is due.
    pub fn write_fails(&mut self) -> bool {
        Self::take(&mut self.fail_writes) || self.down
    }

    /// Takes one failure of an offset or PLog read, if one is due.
    pub fn read_fails(&mut self) -> bool {
        Self::take(&mut self.fail_reads) || self.down
    }

    /// Takes one failure of a numbers read, if one is due.
    pub fn numbers_read_fails(&mut self) -> bool {
        Self::take(&mut self.fail_number_reads) || self.down
    }

    fn take(counter: &mut u32) -> bool {
        let due = *counter > 0;
        *counter = counter.saturating_sub(1);
        due
    }
}

/// Runs a [`Sequencer`] against a [`MemStorage`] on a manual clock.
pub struct Driver {
    /// The sequencer being driven.
    pub seq: Sequencer,
    /// Its storage.
    pub storage: MemStorage,
    /// The manual clock.
    pub now: Instant,
    /// How many events a PLog read returns at most.
    pub page_events: usize,
    held: Vec<WriteRequest>,
}

impl Driver {
    /// A driver for a new sequencer over `storage`, at time 0, reading pages of 64 events.
    pub fn new(params: Params, storage: MemStorage) -> Result<Self, Error> {
        Ok(Self {
            seq: Sequencer::new(params)?,
            storage,
            now: Instant::default(),
            page_events: 64,
            held: Vec::new(),
        })
    }

    /// Replaces the sequencer with a new one over the same storage, as after a crash: all
    /// memory is lost, held writes included (they never reach storage).
    pub fn restart(&mut self, params: Params) -> Result<(), Error> {
        self.seq = Sequencer::new(params)?;
        self.held.clear();
        Ok(())
    }

    /// Performs work until none is due at the current time; returns how many items ran.
    /// An error means the sequencer refused a report of its own work: a bug.
    pub fn run(&mut self) -> Result<usize, Error> {
        let mut ran = 0;
        loop {
            let hinted = self.seq.may_have_work();
            let Some(work) = self.seq.poll_work(self.now) else {
                break;
            };
            // Every test driven through here checks the hint a shell skips polling on.
            assert!(
                hinted,
                "`may_have_work` said no work, `poll_work` gave {work:?}"
            );
            ran += 1;
            self.perform(work)?;
        }
        Ok(ran)
    }

    /// Advances the clock by `d`, then runs what is due.
    pub fn advance(&mut self, d: Duration) -> Result<usize, Error> {
        self.now = self.now.saturating_add(d);
        self.run()
    }

    /// Writes held by [`Faults::hold_writes`], oldest first.
    pub fn held_writes(&self) -> &[WriteRequest] {
        &self.held
    }

    /// Completes every held write, then runs what is due.
    pub fn release_writes(&mut self) -> Result<usize, Error> {
        for w in core::mem::take(&mut self.held) {
            self.storage.write(&w.values, w.next_plog_offset);
            self.seq.complete_write(w.ticket)?;
        }
        self.run()
    }

    /// Reports every held write failed (none reaches storage), then runs what is due.
    pub fn fail_held_writes(&mut self) -> Result<usize, Error> {
        for w in core::mem::take(&mut self.held) {
            self.seq.fail(w.ticket, self.now)?;
        }
        self.run()
    }

    /// Writes only the values of the oldest held write (as a crash between values and offset
    /// would), dropping the write.
    pub fn tear_held_write(&mut self) -> bool {
        if self.held.is_empty() {
            return false;
        }
        let w = self.held.remove(0);
        self.storage.write_values(&w.values);
        true
    }

    /// `start`, performing the numbers read it may need on the spot.
    pub fn start(&mut self, kind: WsKind, ws: WsId) -> Result<Start, Error> {
        match self.seq.start(kind, ws)? {
            Start::Load(read) => {
                if self.storage.faults.numbers_read_fails() {
                    self.seq.fail(read.ticket, self.now)?;
                    return Ok(Start::Load(read));
                }
                let numbers = self.storage.read_numbers(read.ws, &read.seqs);
                self.seq.complete_numbers(read.ticket, &numbers)
            }
            other => Ok(other),
        }
    }

    /// A whole command: start, one number per entry of `seqs`, append the event to the PLog,
    /// flush. `Ok(None)` when start said "not now".
    pub fn event(
        &mut self, kind: WsKind, ws: WsId, seqs: &[SeqId],
    ) -> Result<Option<(PLogOffset, Vec<Number>)>, Error> {
        let Start::Started(offset) = self.start(kind, ws)? else {
            return Ok(None);
        };
        let mut numbers = Vec::with_capacity(seqs.len());
        let mut values = Vec::with_capacity(seqs.len());
        for &seq in seqs {
            let n = self.seq.next(seq)?;
            numbers.push(n);
            values.push(SeqValue::new(ws, seq, n));
        }
        if self.storage.append(offset, &values).is_err() {
            self.seq.actualize()?;
            return Ok(None);
        }
        self.seq.flush()?;
        Ok(Some((offset, numbers)))
    }

    fn perform(&mut self, work: Work) -> Result<(), Error> {
        let now = self.now;
        match work {
            Work::Write(w) => {
                if self.storage.faults.write_fails() {
                    self.seq.fail(w.ticket, now)
                } else if self.storage.faults.hold_writes {
                    self.held.push(w);
                    Ok(())
                } else {
                    self.storage.write(&w.values, w.next_plog_offset);
                    self.seq.complete_write(w.ticket)
                }
            }
            Work::ReadNextOffset { ticket } => {
                if self.storage.faults.read_fails() {
                    return self.seq.fail(ticket, now);
                }
                self.seq
                    .complete_next_offset(ticket, self.storage.next_offset)
            }
            Work::ReadPlog { ticket, from } => {
                if self.storage.faults.read_fails() {
                    return self.seq.fail(ticket, now);
                }
                let (values, next, end) = self.storage.read_plog(from, self.page_events);
                let page = PlogPage {
                    values: &values,
                    next,
                    end,
                };
                self.seq.complete_plog_read(ticket, page, now).map(|_| ())
            }
        }
    }
}

/// The [`Shell`]'s host over a [`MemStorage`] on a manual clock: numbers reads are answered at
/// once from storage (or fail, with [`Faults::fail_number_reads`]); the storage work the shell
/// begins waits in [`MemHost::queue`] until [`MemHost::run`] performs it.
#[derive(Debug, Default)]
pub struct MemHost {
    /// The storage.
    pub storage: MemStorage,
    /// The manual clock.
    pub now: Instant,
    /// How many events a PLog read returns at most.
    pub page_events: usize,
    /// Storage work begun and not yet performed, oldest first.
    pub queue: VecDeque<Work>,
    /// The wake-up last asked for.
    pub wake: Option<Instant>,
    /// The status last reported.
    pub status: Option<Status>,
}

impl MemHost {
    /// A host over `storage`, at time 0, reading pages of 64 events.
    pub fn new(storage: MemStorage) -> Self {
        Self {
            storage,
            page_events: 64,
            ..Self::default()
        }
    }

    /// Performs queued work (and the work it leads to) until none is left; returns how many
    /// items ran. An error means the shell refused a report of its own work: a bug.
    pub fn run(&mut self, shell: &mut Shell) -> Result<usize, Error> {
        let mut ran = 0;
        while let Some(work) = self.queue.pop_front() {
            ran += 1;
            let ticket = work.ticket();
            match work {
                Work::Write(_) if self.storage.faults.write_fails() => {
                    shell.deliver(ticket, Outcome::Failed, self)?;
                }
                Work::Write(w) => {
                    self.storage.write(&w.values, w.next_plog_offset);
                    shell.deliver(ticket, Outcome::Written, self)?;
                }
                _ if self.storage.faults.read_fails() => {
                    shell.deliver(ticket, Outcome::Failed, self)?;
                }
                Work::ReadNextOffset { .. } => {
                    let offset = self.storage.next_offset;
                    shell.deliver(ticket, Outcome::NextOffset(offset), self)?;
                }
                Work::ReadPlog { from, .. } => {
                    let (values, next, end) = self.storage.read_plog(from, self.page_events);
                    let page = PlogPage {
                        values: &values,
                        next,
                        end,
                    };
                    shell.deliver(ticket, Outcome::PlogPage(page), self)?;
                }
            }
        }
        Ok(ran)
    }

    /// Advances the clock by `d`; if the wake-up asked for has come, pumps, then runs.
    pub fn advance(&mut self, d: Duration, shell: &mut Shell) -> Result<usize, Error> {
        self.now = self.now.saturating_add(d);
        if self.wake.is_some_and(|at| at <= self.now) {
            self.wake = None;
            shell.pump(self);
        }
        self.run(shell)
    }
}

impl Host for MemHost {
    fn now(&mut self) -> Instant {
        self.now
    }

    fn read_numbers(&mut self, ws: WsId, seqs: &[SeqId]) -> Read {
        self.storage.answer_numbers(ws, seqs)
    }

    fn read_numbers_many(&mut self, ws: &[WsId], seqs: &[SeqId]) -> Read {
        self.storage.answer_numbers_many(ws, seqs)
    }

    fn begin(&mut self, work: Work) {
        self.queue.push_back(work);
    }

    fn set_wake(&mut self, at: Option<Instant>) {
        self.wake = at;
    }

    fn status_changed(&mut self, status: Status) {
        self.status = Some(status);
    }
}

/// Platform events for testing recovery through the facade: workspace 5 gets a C document, an
/// O record, then a W record with an argument tree; workspace 6 a C record. After them the next
/// ids are: ws 5 — PLog 4, WLog 3, record `FIRST_REC_ID + 6`, C record `FIRST_CREC_ID + 1`;
/// ws 6 — WLog 2, C record `FIRST_CREC_ID + 10`, record `FIRST_REC_ID`.
pub fn facade_sample_events() -> Vec<crate::facade::PlatformEvent> {
    use crate::facade::{ArgObject, FIRST_CREC_ID, FIRST_REC_ID, PlatformEvent, RecordKind};
    let leaf = |id| ArgObject {
        id,
        children: Vec::new(),
    };
    vec![
        PlatformEvent {
            ws: 5,
            wlog_offset: 1,
            new_records: vec![
                (RecordKind::CDoc, FIRST_CREC_ID),
                (RecordKind::ORecord, FIRST_REC_ID),
            ],
            argument: None,
        },
        PlatformEvent {
            ws: 5,
            wlog_offset: 2,
            new_records: vec![(RecordKind::WRecord, FIRST_REC_ID + 1)],
            argument: Some(ArgObject {
                id: FIRST_REC_ID + 2,
                children: vec![leaf(FIRST_REC_ID + 5), leaf(FIRST_REC_ID + 3)],
            }),
        },
        PlatformEvent {
            ws: 6,
            wlog_offset: 1,
            new_records: vec![(RecordKind::CRecord, FIRST_CREC_ID + 9)],
            argument: None,
        },
    ]
}

/// The project's one seeded random number generator (SplitMix64), for tests, simulations and
/// workloads: fast, statistically sound for scheduling decisions, and stable across platforms
/// and releases (unlike `std`'s hashers or any external crate's default generator), so a seed
/// alone determines a run.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Multiply-shift: unbiased enough for a scheduler and free of division.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// An index into a collection of `len` items; `len` must not be 0.
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// True with probability `per_mille` / 1000.
    pub fn chance_per_mille(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// One of `items`, which must not be empty.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.index(items.len())]
    }

    /// A number in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An index chosen with probability proportional to its weight; `None` if all are 0.
    pub fn weighted(&mut self, weights: &[u64]) -> Option<usize> {
        let total: u64 = weights.iter().sum();
        if total == 0 {
            return None;
        }
        let mut roll = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if roll < w {
                return Some(i);
            }
            roll -= w;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn the_same_seed_gives_the_same_stream_and_others_differ() {
        let a: Vec<u64> = (0..8)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..8)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..8)
            .scan(Rng::new(8), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn bounded_draws_stay_in_range_and_weights_are_honoured() {
        let mut r = Rng::new(1);
        for _ in 0..10_000 {
            assert!(r.below(7) < 7);
            let x = r.range(3, 5);
            assert!((3..=5).contains(&x));
        }
        assert_eq!(r.weighted(&[0, 0]), None);
        for _ in 0..100 {
            assert_eq!(r.weighted(&[0, 5, 0]), Some(1));
        }
    }
}
