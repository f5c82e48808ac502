package io.github.plogsequencer;

import java.util.List;

/**
 * Who performs the storage work a sequencer's plugin begins, and keeps its timer: the task
 * thread ({@link BackgroundTasks}) or, in tests, the caller ({@link ManualTasks}). The
 * sequencer hands over what each call began while it holds its instance.
 */
interface Tasks {
    /** Operations begun by the instance of their generation, in the order begun. */
    void submit(List<Operation> ops);

    /** The plugin asked to be pumped at {@code at} nanoseconds on the clock (-1: no wake-up). */
    void wake(long at);

    /** A flush waits to be reported: report it after the settle delay unless a call does first. */
    void armSettle();

    /** Drops the queued operations of instances older than {@code generation} (a trap replaced one). */
    void abandonBefore(long generation);

    /**
     * Lets the writes queued or in flight land (and those their outcomes begin), dropping
     * reads, for up to {@code timeoutNanos}; true if none is left.
     */
    boolean drainWrites(long timeoutNanos);

    /** Stops: nothing more is performed; waits for an operation in progress to return. */
    void stop();
}
