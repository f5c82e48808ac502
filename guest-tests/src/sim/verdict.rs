//! What a run checks and counts: the invariants, a broken one with its detail, and the stats
//! that show which interleavings the runs exercised.

use core::fmt;

/// How far the component's linear memory may grow during a simulation (it holds a handful
/// of numbers; growth beyond this would be a leak).
pub const GUEST_MEMORY_BOUND: usize = 4 << 20;

/// The property a run broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invariant {
    /// A number that reached the PLog is never issued again for its (workspace, sequence).
    NumberNeverReissued,
    /// Numbers per key strictly increase within a life (between crashes and actualizations).
    NumbersIncrease,
    /// `next` gives exactly the PLog's last number + 1 (or the initial value): no gaps.
    NumbersDense,
    /// `start` gives exactly the PLog's next offset.
    OffsetsDense,
    /// `start` says "not now (actualizing)" while actualization runs.
    StartRefusesDuringActualization,
    /// Storage never holds a next PLog offset ahead of its values (or beyond the PLog).
    OffsetNotAheadOfValues,
    /// A write carries only numbers the PLog holds and no offset beyond it: the numbers of
    /// staged events wait for their flush.
    WritesOnlyPlogNumbers,
    /// Held numbers stay within the params' bounds; the component's memory within its bound.
    MemoryBounds,
    /// Calls return what the contract says (typed refusals for misuse, success otherwise).
    ExpectedReply,
    /// The guest keeps the host contract: one write at a time, no read overtaking a write,
    /// unique operation ids.
    HostContract,
    /// No trap, no panic.
    NoTrapNoPanic,
    /// The native core and the component agree on every reply and every request.
    EnginesAgree,
    /// Once faults stop, everything reaches storage and the sequencer is ready.
    Liveness,
}

/// A broken invariant, with what exactly happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant.
    pub invariant: Invariant,
    /// What happened.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.invariant, self.detail)
    }
}

/// Counts of what the runs exercised, to show that every kind of interleaving happens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Seeds run.
    pub seeds: u64,
    /// Scheduler steps, settling included.
    pub steps: u64,
    /// Transactions begun.
    pub transactions: u64,
    /// Transactions flushed.
    pub flushed: u64,
    /// Numbers issued and checked.
    pub numbers: u64,
    /// Actualizations (failed events, caller requests, refused start-next).
    pub actualizations: u64,
    /// PLog appends that failed (the transaction then actualizes).
    pub appends_failed: u64,
    /// ... of which the event landed in the PLog all the same.
    pub appends_failed_but_written: u64,
    /// `start` said not-now(actualizing).
    pub not_now_actualizing: u64,
    /// `start` said not-now(too-many-unflushed).
    pub not_now_unflushed: u64,
    /// `read-numbers` calls.
    pub numbers_reads: u64,
    /// `start` refused because `read-numbers` failed.
    pub numbers_read_failures: u64,
    /// Storage reads that failed.
    pub failed_reads: u64,
    /// Storage writes that failed (before or after their first half).
    pub failed_writes: u64,
    /// Writes that landed but were reported failed.
    pub ambiguous_writes: u64,
    /// Failures delivered.
    pub failures_delivered: u64,
    /// Outcomes delivered while an earlier-finished one still waited.
    pub reordered_deliveries: u64,
    /// Operations given a long latency (100 ms to 2 s).
    pub long_latencies: u64,
    /// Storage outages.
    pub outages: u64,
    /// Crashes.
    pub crashes: u64,
    /// ... of which between the two halves of a write.
    pub torn_crashes: u64,
    /// Graceful shutdowns (cleanup) and restarts.
    pub shutdowns: u64,
    /// Clock jumps (hours to a month, or to the end of time).
    pub clock_jumps: u64,
    /// Misuse probes, each refused with its typed error and changing nothing.
    pub probes: u64,
    /// Offset reads begun outside an actualization: the sequencer probing storage while a
    /// write waits out a long retry delay (docs/DESIGN.md §4.4).
    pub storage_probes: u64,
    /// `sequence-exhausted` refusals checked.
    pub exhausted: u64,
    /// Events staged (by `stage` or a batch call).
    pub stages: u64,
    /// Batch calls that staged at least one event.
    pub batches: u64,
    /// Batches cut short by not-now(too-many-unflushed) after staging some events.
    pub partial_batches: u64,
    /// Transactions with staged events dropped by a refusal in a batch (exhausted sequence,
    /// failed numbers read).
    pub dropped_batches: u64,
    /// `read-numbers-many` calls.
    pub numbers_many_reads: u64,
    /// Quad calls (`start-next-quad`, `flush-start-next-quad`).
    pub quad_calls: u64,
    /// Flushing calls that also started (`flush-start-next`, its quad form, `flush-start-batch`).
    pub flush_starts: u64,
    /// Crashes and shutdowns while events were staged.
    pub staged_crashes: u64,
    /// The most unflushed values seen.
    pub max_unflushed_seen: u64,
    /// The component's largest linear memory, in bytes.
    pub peak_guest_memory: u64,
}

impl Stats {
    /// Adds `o`'s counts to these (the maxima stay maxima).
    pub(super) fn add(&mut self, o: &Stats) {
        macro_rules! sum {
            ($($f:ident),*) => { $(self.$f += o.$f;)* };
        }
        sum!(
            seeds,
            steps,
            transactions,
            flushed,
            numbers,
            actualizations,
            appends_failed,
            appends_failed_but_written,
            not_now_actualizing,
            not_now_unflushed,
            numbers_reads,
            numbers_read_failures,
            failed_reads,
            failed_writes,
            ambiguous_writes,
            failures_delivered,
            reordered_deliveries,
            long_latencies,
            outages,
            crashes,
            torn_crashes,
            shutdowns,
            clock_jumps,
            probes,
            storage_probes,
            exhausted,
            stages,
            batches,
            partial_batches,
            dropped_batches,
            numbers_many_reads,
            quad_calls,
            flush_starts,
            staged_crashes
        );
        self.max_unflushed_seen = self.max_unflushed_seen.max(o.max_unflushed_seen);
        self.peak_guest_memory = self.peak_guest_memory.max(o.peak_guest_memory);
    }

    /// The counters that stayed at zero: interleavings the runs never exercised.
    pub fn never_exercised(&self) -> Vec<&'static str> {
        let all = [
            ("transactions", self.transactions),
            ("flushed", self.flushed),
            ("numbers", self.numbers),
            ("actualizations", self.actualizations),
            ("appends_failed", self.appends_failed),
            (
                "appends_failed_but_written",
                self.appends_failed_but_written,
            ),
            ("not_now_actualizing", self.not_now_actualizing),
            ("not_now_unflushed", self.not_now_unflushed),
            ("numbers_read_failures", self.numbers_read_failures),
            ("failed_reads", self.failed_reads),
            ("failed_writes", self.failed_writes),
            ("ambiguous_writes", self.ambiguous_writes),
            ("reordered_deliveries", self.reordered_deliveries),
            ("long_latencies", self.long_latencies),
            ("outages", self.outages),
            ("crashes", self.crashes),
            ("torn_crashes", self.torn_crashes),
            ("shutdowns", self.shutdowns),
            ("clock_jumps", self.clock_jumps),
            ("probes", self.probes),
            ("storage_probes", self.storage_probes),
            ("exhausted", self.exhausted),
            ("stages", self.stages),
            ("batches", self.batches),
            ("partial_batches", self.partial_batches),
            ("dropped_batches", self.dropped_batches),
            ("numbers_many_reads", self.numbers_many_reads),
            ("quad_calls", self.quad_calls),
            ("flush_starts", self.flush_starts),
            ("staged_crashes", self.staged_crashes),
        ];
        all.iter()
            .filter(|(_, n)| *n == 0)
            .map(|(name, _)| *name)
            .collect()
    }
}
