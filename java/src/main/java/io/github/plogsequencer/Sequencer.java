package io.github.plogsequencer;

import java.time.Duration;

/**
 * One partition's sequencer (the original's {@code ISequencer}), in a plugin instance of its
 * own: dense, monotonic PLog offsets and numbers per workspace, recovered from the PLog.
 *
 * <p>A transaction is {@link #start}, any number of {@link #next}, then {@link #flush} (its
 * event is in the PLog) or {@link #actualize} (it failed: the same numbers are handed out
 * again). The batched calls ({@link #flushStartNext}, {@link #flushStartBatch}) do the same in
 * fewer crossings into the plugin, and the facade ({@link #startEvent}, {@link #nextRecId},
 * ...) speaks a command processor's words over {@link Plugin#systemParams}.
 *
 * <p>The flusher and the actualizer run on the sequencer's task thread, which performs the
 * storage work the plugin begins and keeps its timer; {@link #close()} stops it, after the
 * flusher's writes land. Calls are serialised (one call into the plugin at a time); any
 * thread may make them, though a transaction's calls belong to one caller. Every rule of
 * sequencing is the plugin's: a refusal is a {@link SequencerException} with the WIT error
 * case, a trap a {@link TrappedException} after which the next call works (the sequencer made
 * a new instance that actualizes from the PLog, so no number is reused).
 */
public final class Sequencer implements AutoCloseable {
    static final System.Logger LOG = System.getLogger(Sequencer.class.getName());

    /** What {@link #start} returns for "not now" (PLog offsets start at 1). */
    public static final long NOT_NOW = 0;

    private static final long MAX_WAIT_STEP_NANOS = 5_000_000;

    private final Plugin plugin;
    private final Params params;
    private final Storage storage;
    private final SequencerOptions options;
    private final Clock clock;
    private final Tasks tasks;
    private final Performer performer;

    /** Guards the instance: every call into the plugin holds it. */
    private final Object lock = new Object();
    private final Ahead ahead = new Ahead();
    private Guest guest;
    private HostLink link;
    private long generation;
    private boolean closed;
    /** True during a call into the plugin: a call made then (from inside an import) is refused. */
    private boolean inCall;
    private volatile Status status = Status.ACTUALIZING;
    private volatile NotNowReason notNow;
    private long traps;
    private long calls;

    /** Waiters for a status change ({@link #awaitReady}, {@link #startWithin}). */
    private final Object statusSignal = new Object();
    private volatile int waiters;

    Sequencer(Plugin plugin, Params params, Storage storage, SequencerOptions options) {
        this.plugin = plugin;
        this.params = params;
        this.storage = storage;
        this.options = options;
        this.clock = options.clock;
        this.performer = new Performer(storage, options.pageEvents);
        synchronized (lock) {
            instantiate(); // invalid params throw here, before any thread starts
        }
        if (options.manualTasks) {
            this.tasks = new ManualTasks();
        } else {
            this.tasks = new BackgroundTasks(new Target(), performer, clock, options.settleAfterNanos);
        }
        synchronized (lock) {
            forward();
        }
    }

    // ---- transactions --------------------------------------------------------------------------

    /**
     * Begins a transaction for workspace {@code ws} of kind {@code kind} (the original's
     * {@code Start}): the PLog offset its event takes, or {@link #NOT_NOW} (0) while the
     * sequencer actualizes or too many values wait to be written ({@link #notNowReason()} says
     * which). Refused ({@link SequencerException}) while a transaction is open, for a kind the
     * params do not define, and after close.
     */
    public long start(int kind, long ws) {
        Args.u16("kind", kind);
        synchronized (lock) {
            Guest g = guest();
            try {
                long offset;
                if (ahead.end() == Ahead.Report.FLUSH) {
                    offset = g.takeFlushStartAhead(ahead.report, kind, ws, ahead.question());
                    calls++;
                } else {
                    reportTaken(g);
                    offset = g.startAhead(kind, ws, ahead.question());
                }
                calls++;
                ahead.started(g.numbers, offset != 0);
                status = g.status;
                notNow = g.notNow;
                return offset;
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    /**
     * {@link #start}, waiting out "not now" for up to {@code wait} (woken as the tasks move
     * on, never busy): the offset, or {@link #NOT_NOW} if the sequencer still says "not now"
     * once {@code wait} has passed.
     */
    public long startWithin(Duration wait, int kind, long ws) {
        long deadline = System.nanoTime() + wait.toNanos();
        long step = 50_000;
        while (true) {
            long offset = start(kind, ws);
            if (offset != NOT_NOW) {
                return offset;
            }
            step = waitForChange(deadline, step);
            if (step < 0) {
                return NOT_NOW;
            }
        }
    }

    /** Why the last {@link #start} (or {@link #startEvent}) on this sequencer said "not now". */
    public NotNowReason notNowReason() {
        return notNow;
    }

    /**
     * The next number of sequence {@code seq} in the transaction (the original's {@code Next}):
     * the last one plus one, from its initial value. Refused without a transaction and for a
     * sequence the transaction's kind does not define ({@link ErrorCode#UNKNOWN_SEQ_ID}).
     */
    public long next(int seq) {
        Args.u16("seq", seq);
        synchronized (lock) {
            long n = ahead.next(seq);
            if (n != 0) {
                return n;
            }
            Guest g = guest();
            try {
                if (ahead.flushDeferred()) {
                    ahead.end();
                    status = g.takeFlush(ahead.report);
                    calls++;
                }
                calls++;
                return g.takeNext(ahead.reportWithNext(seq), seq);
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    /**
     * Completes the transaction: its event is in the PLog (the original's {@code Flush}; call
     * it only once the append is durable). The flusher writes its numbers in the background.
     * Refused without a transaction.
     *
     * <p>The flush of a transaction {@link #start} opened, with no other call since, cannot be
     * refused and makes no call: the next call carries it, or the task thread after
     * {@link SequencerOptions.Builder#settleAfter} (numbers ahead, docs/PLUGIN.md).
     */
    public void flush() {
        synchronized (lock) {
            if (!closed && guest != null && options.settleAfterNanos > 0 && ahead.deferFlush()) {
                status = Status.READY;
                tasks.armSettle();
                return;
            }
            Guest g = guest();
            try {
                if (ahead.end() == Ahead.Report.FLUSH) {
                    g.takeFlush(ahead.report);
                    calls++;
                    ahead.report.count = 0;
                }
                status = g.takeFlush(ahead.report);
                calls++;
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    /**
     * Drops the transaction, if any, and everything not yet written, and recovers from storage
     * and the PLog (the original's {@code Actualize}): until that ends {@link #start} says "not
     * now"; afterwards it hands out the dropped transaction's offset and numbers again.
     * Refused while already actualizing.
     */
    public void actualize() {
        synchronized (lock) {
            Guest g = guest();
            try {
                report(g);
                calls++;
                g.actualize();
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    // ---- batched calls -------------------------------------------------------------------------

    /**
     * {@link #start}, then {@link #next} of each of {@code seqs}, in one call: the offset (or
     * {@link #NOT_NOW}, with no transaction begun) and the numbers in {@code numbers[0..count)}.
     */
    public long startNext(int kind, long ws, SeqQuad seqs, long[] numbers) {
        return quadCall(false, kind, ws, seqs, numbers);
    }

    /**
     * {@link #flush}, then {@link #startNext}, in one call (one crossing per event). A refusal
     * {@code no-transaction} or {@code cleaned-up} comes from the flush (nothing was done); any
     * other comes from the start: the flush is done and no transaction is open.
     */
    public long flushStartNext(int kind, long ws, SeqQuad seqs, long[] numbers) {
        return quadCall(true, kind, ws, seqs, numbers);
    }

    private long quadCall(boolean flushFirst, int kind, long ws, SeqQuad seqs, long[] numbers) {
        Args.u16("kind", kind);
        if (numbers.length < seqs.count()) {
            throw new IllegalArgumentException("room for " + numbers.length + " numbers, " + seqs.count() + " asked");
        }
        synchronized (lock) {
            Guest g = guest();
            try {
                report(g);
                calls++;
                long offset = g.startNextQuad(flushFirst, kind, ws, seqs);
                System.arraycopy(g.numbers, 0, numbers, 0, seqs.count());
                notNow = g.notNow;
                return offset;
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    /**
     * Ends the open event but not the transaction: the next {@link #start} numbers another event
     * of it; {@link #flush} completes them all, {@link #actualize} drops them all.
     */
    public void stage() {
        synchronized (lock) {
            Guest g = guest();
            try {
                report(g);
                calls++;
                g.stage();
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    /**
     * Numbers and stages one event per workspace of {@code ws} (all of kind {@code kind}), each
     * taking a number of each of {@code seqs}, in one call, into {@code into} (reused; also
     * returned). Stops at the first "not now". Append the events to the PLog, then
     * {@link #flush} or {@link #flushStartBatch}; or {@link #actualize} to drop them.
     */
    public BatchNumbers startBatch(int kind, long[] ws, SeqQuad seqs, BatchNumbers into) {
        return batchCall(false, kind, ws, seqs, into);
    }

    /** {@link #flush}, then {@link #startBatch}, in one call (one crossing per batch). */
    public BatchNumbers flushStartBatch(int kind, long[] ws, SeqQuad seqs, BatchNumbers into) {
        return batchCall(true, kind, ws, seqs, into);
    }

    private BatchNumbers batchCall(boolean flushFirst, int kind, long[] ws, SeqQuad seqs, BatchNumbers into) {
        Args.u16("kind", kind);
        synchronized (lock) {
            Guest g = guest();
            try {
                report(g);
                calls++;
                g.startBatch(flushFirst, kind, ws, ws.length, seqs, into);
                notNow = into.notNow();
                return into;
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    // ---- the facade (docs/DESIGN.md §5) --------------------------------------------------------

    /**
     * {@code StartEvent}: begins an event in workspace {@code ws} (the sequencer must have been
     * opened with {@link Plugin#systemParams}): its PLog and WLog offsets, or null while the
     * sequencer says "not now" ({@link #notNowReason()}).
     */
    public EventOffsets startEvent(long ws) {
        synchronized (lock) {
            Guest g = guest();
            try {
                long plog;
                if (ahead.end() == Ahead.Report.FLUSH) {
                    plog = g.takeFlushStartEventAhead(ahead.report, ws, ahead.question());
                    calls++;
                } else {
                    reportTaken(g);
                    plog = g.startEventAhead(ws, ahead.question());
                }
                calls++;
                ahead.started(g.numbers, plog != 0);
                notNow = g.notNow;
                return plog == 0 ? null : new EventOffsets(plog, g.wlogOffset);
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    /** {@link #startEvent(long)}, waiting out "not now" for up to {@code wait}; null if it still says so. */
    public EventOffsets startEvent(Duration wait, long ws) {
        long deadline = System.nanoTime() + wait.toNanos();
        long step = 50_000;
        while (true) {
            EventOffsets started = startEvent(ws);
            if (started != null) {
                return started;
            }
            step = waitForChange(deadline, step);
            if (step < 0) {
                return null;
            }
        }
    }

    /** {@code NextRecID}: the next O/W document or record id of the event's workspace. */
    public long nextRecId() {
        return next(2);
    }

    /** {@code NextCRecID}: the next C document or record id of the event's workspace. */
    public long nextCRecId() {
        return next(3);
    }

    /** {@code FinishEvent}: the event is in the PLog ({@link #flush}). */
    public void finishEvent() {
        flush();
    }

    /**
     * {@code CancelEvent}: the event failed; the sequencer recovers, then the same offsets and
     * ids are handed out again. Refused without an event.
     */
    public void cancelEvent() {
        synchronized (lock) {
            Guest g = guest();
            try {
                report(g);
                calls++;
                g.cancelEvent();
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    /** The facade's {@code Status}, from any thread at any time, without a call. */
    public SequenceStatus eventStatus() {
        return status.toSequenceStatus();
    }

    // ---- state ---------------------------------------------------------------------------------

    /** What the sequencer is doing, asked of the plugin ({@link Status#CLEANED_UP} once closed). */
    public Status status() {
        synchronized (lock) {
            if (closed) {
                return Status.CLEANED_UP;
            }
            Guest g = guest();
            try {
                report(g);
                calls++;
                Status s = g.guestStatus();
                status = s;
                return s;
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    /** How many numbers the sequencer holds in memory, by where. */
    public HeldNumbers heldNumbers() {
        synchronized (lock) {
            Guest g = guest();
            try {
                report(g);
                calls++;
                return g.heldNumbers();
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    /**
     * Waits until the sequencer is ready to number events (it has actualized), for up to
     * {@code within}: true when ready (or in a transaction), false if {@code within} passed.
     * {@link SequencerException} ({@code cleaned-up}) once closed.
     */
    public boolean awaitReady(Duration within) {
        long deadline = System.nanoTime() + within.toNanos();
        long step = 50_000;
        while (true) {
            Status s = status;
            if (s == Status.READY || s == Status.IN_TRANSACTION) {
                return true;
            }
            if (s == Status.CLEANED_UP) {
                throw new SequencerException(ErrorCode.CLEANED_UP, null);
            }
            step = waitForChange(deadline, step);
            if (step < 0) {
                return false;
            }
        }
    }

    /** How many times the plugin trapped and its instance was replaced. */
    public long traps() {
        synchronized (lock) {
            return traps;
        }
    }

    /** How many calls the caller's methods made into the plugin (the crossings a benchmark counts). */
    public long guestCalls() {
        synchronized (lock) {
            return calls;
        }
    }

    /**
     * Closes the sequencer: a flush waiting for a call is reported, the flusher's writes (the
     * one in flight and those waiting) land, for up to the options' close timeout, reads are
     * abandoned, then the plugin is cleaned up and the task thread stops. Numbers not yet in
     * the view are not lost: their events are in the PLog, which the next sequencer replays.
     * Later calls are refused with {@code cleaned-up}. Idempotent.
     */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            if (guest != null && ahead.flushDeferred()) {
                settleLocked();
            }
        }
        tasks.drainWrites(options.closeTimeout.toNanos());
        synchronized (lock) {
            closed = true;
            if (guest != null) {
                try {
                    guest.cleanup();
                    guest.drop();
                } catch (RuntimeException | StackOverflowError e) {
                    LOG.log(System.Logger.Level.WARNING, "the plugin trapped in cleanup: " + e);
                }
                guest = null;
                link = null;
            }
            status = Status.CLEANED_UP;
        }
        tasks.stop();
        signalStatus();
    }

    // ---- the tasks (package-private: the task thread, and tests driving them by hand) ----------

    /** Delivers {@code outcome} of {@code op}, if its instance is still the current one. */
    void deliver(Operation op, Outcome outcome) {
        synchronized (lock) {
            if (closed || guest == null || op.generation != generation) {
                return; // abandoned with its instance
            }
            try {
                deliverLocked(op.op, outcome);
            } catch (SequencerException e) {
                LOG.log(System.Logger.Level.WARNING, "the plugin refused the outcome of " + op + ": " + e.getMessage());
            } catch (RuntimeException | StackOverflowError e) {
                LOG.log(System.Logger.Level.WARNING, trapped(e).getMessage());
            } finally {
                forward();
            }
        }
        signalStatus();
    }

    /** For tests: delivers {@code outcome} under id {@code op} as given (a refusal is thrown). */
    void deliverByHand(long op, Outcome outcome) {
        synchronized (lock) {
            Guest g = guest();
            try {
                deliverLocked(op, outcome);
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    private void deliverLocked(long op, Outcome o) {
        Guest g = guest;
        switch (o.kind) {
            case WRITTEN:
                g.deliverWritten(op);
                break;
            case NEXT_OFFSET:
                g.deliverNextOffset(op, o.offset);
                break;
            case FAILED:
                g.deliverFailed(op, o.message);
                break;
            default:
                g.deliverPlogWords(op, o.words, o.len, o.next, o.end);
        }
    }

    /** For tests: delivers a page through the generic {@code deliver} (values as records). */
    void deliverPageByHand(long op, long[] words, long next, boolean end) {
        synchronized (lock) {
            Guest g = guest();
            try {
                g.deliverPlogPage(op, words, words.length, next, end);
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
    }

    /** The wake-up came: lets the plugin begin what is due. */
    void pump() {
        synchronized (lock) {
            if (closed || guest == null) {
                return;
            }
            try {
                guest.pump();
            } catch (RuntimeException | StackOverflowError e) {
                LOG.log(System.Logger.Level.WARNING, trapped(e).getMessage());
            } finally {
                forward();
            }
        }
        signalStatus();
    }

    /** Performs {@code op} through the storage and delivers its outcome (tests driving tasks by hand). */
    Outcome perform(Operation op) {
        if (tasks instanceof ManualTasks) {
            ((ManualTasks) tasks).pending().remove(op);
        }
        Outcome outcome = performer.perform(op);
        synchronized (lock) {
            Guest g = guest();
            try {
                deliverLocked(op.op, outcome);
            } catch (SequencerException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
        }
        return outcome;
    }

    /** The manual tasks (tests only; null on the task thread's sequencer). */
    ManualTasks manualTasks() {
        return tasks instanceof ManualTasks ? (ManualTasks) tasks : null;
    }

    /** For tests: cleans up the plugin's sequencer without closing the Java side (the WIT's {@code cleanup}). */
    void cleanupByHand() {
        synchronized (lock) {
            Guest g = guest();
            try {
                report(g);
                g.cleanup();
            } catch (RuntimeException | StackOverflowError e) {
                throw trapped(e);
            } finally {
                forward();
            }
            if (tasks instanceof ManualTasks) {
                ((ManualTasks) tasks).clear();
            }
        }
    }

    /** The task thread's view of this sequencer. */
    private final class Target implements TaskTarget {
        @Override
        public void deliver(Operation op, Outcome outcome) {
            Sequencer.this.deliver(op, outcome);
        }

        @Override
        public void pump() {
            Sequencer.this.pump();
        }

        @Override
        public void settle() {
            synchronized (lock) {
                if (!closed && guest != null && ahead.flushDeferred()) {
                    settleLocked();
                }
            }
        }
    }

    // ---- the instance --------------------------------------------------------------------------

    /** The current instance; a new one if a trap left none; refused once closed. */
    private Guest guest() {
        if (inCall) {
            throw new IllegalStateException("a call into the sequencer from inside one of its own calls"
                    + " (a Storage method may not call its sequencer)");
        }
        if (closed) {
            throw new SequencerException(ErrorCode.CLEANED_UP, null);
        }
        if (guest == null) {
            instantiate();
        }
        inCall = true;
        return guest;
    }

    /** Reports a deferred flush (holding the lock). */
    private void settleLocked() {
        try {
            ahead.end();
            status = guest.takeFlush(ahead.report);
        } catch (SequencerException e) {
            LOG.log(System.Logger.Level.WARNING, "a deferred flush was refused: " + e.getMessage());
        } catch (RuntimeException | StackOverflowError e) {
            trapped(e);
        } finally {
            forward();
        }
    }

    /** Reports numbers handed out ahead and a deferred flush, before a call other than next/start. */
    private void report(Guest g) {
        switch (ahead.end()) {
            case FLUSH:
                status = g.takeFlush(ahead.report);
                calls++;
                break;
            case TAKE:
                g.take(ahead.report);
                calls++;
                break;
            default:
        }
    }

    /** Reports numbers handed out ahead ({@code take}), after {@link Ahead#end} answered other than FLUSH. */
    private void reportTaken(Guest g) {
        if (!ahead.report.isEmpty()) {
            g.take(ahead.report);
            calls++;
        }
    }

    /** Makes a new instance and its sequencer, which begins actualizing (holding the lock). */
    private void instantiate() {
        generation++;
        HostLink l = new HostLink(storage, clock, generation);
        Guest g = plugin.instantiate(l, options.maxMemoryBytes);
        try {
            g.create(params);
        } catch (SequencerException e) {
            throw e;
        } catch (RuntimeException | StackOverflowError e) {
            traps++;
            throw new TrappedException("the plugin trapped creating its sequencer: " + HostLink.describe(e), e);
        }
        guest = g;
        link = l;
        ahead.reset();
        if (l.reported != null) {
            status = l.reported;
        }
    }

    /** Hands what the last call began to the tasks and takes in the status it reported (holding the lock). */
    private void forward() {
        inCall = false;
        HostLink l = link;
        if (l == null || tasks == null) {
            return;
        }
        Status s = l.reported;
        if (s != null) {
            l.reported = null;
            status = s;
        }
        if (l.hasOutbox()) {
            tasks.submit(l.takeOutbox());
        }
        if (l.wakeChanged) {
            l.wakeChanged = false;
            tasks.wake(l.wakeAt);
        }
    }

    /**
     * A call trapped: the instance is dropped (its queued work abandoned; a write in flight
     * still lands, in order) and a new one made, which actualizes from the PLog.
     */
    private TrappedException trapped(Throwable e) {
        traps++;
        String what = HostLink.describe(e);
        boolean interrupted = Thread.interrupted(); // the new instance's create must not see it
        guest = null;
        link = null;
        status = Status.ACTUALIZING;
        String after;
        try {
            if (!closed) {
                instantiate();
                tasks.abandonBefore(generation);
                forward();
                after = "a new instance actualizes from the PLog";
            } else {
                after = "the sequencer is closed";
            }
        } catch (RuntimeException ce) {
            after = "a new instance could not be made yet (" + ce.getMessage() + "); the next call tries again";
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        return new TrappedException("the plugin trapped: " + what + "; " + after, e);
    }

    // ---- waiting -------------------------------------------------------------------------------

    /**
     * Waits for the next task step (a delivery or a pump may change the status) or a step of
     * capped, doubling length, until {@code deadline}; the next step, or -1 once past it.
     */
    private long waitForChange(long deadline, long step) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            return -1;
        }
        long nanos = Math.min(left, step);
        synchronized (statusSignal) {
            waiters++;
            try {
                statusSignal.wait(nanos / 1_000_000, (int) (nanos % 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return -1;
            } finally {
                waiters--;
            }
        }
        return Math.min(step * 2, MAX_WAIT_STEP_NANOS);
    }

    private void signalStatus() {
        if (waiters > 0) {
            synchronized (statusSignal) {
                statusSignal.notifyAll();
            }
        }
    }

    /** The params this sequencer was opened with. */
    public Params params() {
        return params;
    }
}
