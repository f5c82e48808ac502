package io.github.plogsequencer;

import java.util.Arrays;

/**
 * The reply of the batch calls ({@link Sequencer#startBatch}, {@link Sequencer#flushStartBatch}):
 * the events numbered and staged, in the order asked. A holder the caller may reuse from call
 * to call, so a batch allocates nothing once its array is large enough; each call overwrites
 * it.
 */
public final class BatchNumbers {
    private long firstOffset;
    private int started;
    private int perEvent;
    private NotNowReason notNow;
    private long[] numbers = new long[0];

    /** An empty holder. */
    public BatchNumbers() {}

    /** The PLog offset of the first event started (the others follow it one by one). */
    public long firstOffset() {
        return firstOffset;
    }

    /** How many events were started and staged, from the first asked for on. */
    public int started() {
        return started;
    }

    /** Why the next event asked for was not started, or null if every one was. */
    public NotNowReason notNow() {
        return notNow;
    }

    /** The number of the {@code i}-th sequence of the batch's {@link SeqQuad} for event {@code event}. */
    public long number(int event, int i) {
        if (event < 0 || event >= started || i < 0 || i >= perEvent) {
            throw new IndexOutOfBoundsException("event " + event + " of " + started + ", number " + i + " of " + perEvent);
        }
        return numbers[event * perEvent + i];
    }

    /** A copy of every number, event after event, {@code seqs.count()} per event. */
    public long[] numbers() {
        return Arrays.copyOf(numbers, started * perEvent);
    }

    /** Room for {@code count} numbers; the array to fill (from index 0). */
    long[] reset(long firstOffset, int started, int perEvent, NotNowReason notNow, int count) {
        this.firstOffset = firstOffset;
        this.started = started;
        this.perEvent = perEvent;
        this.notNow = notNow;
        if (numbers.length < count) {
            numbers = new long[Math.max(count, numbers.length * 2)];
        }
        return numbers;
    }

    @Override
    public String toString() {
        return "BatchNumbers{firstOffset=" + firstOffset + ", started=" + started + ", notNow=" + notNow
                + ", numbers=" + Arrays.toString(numbers()) + "}";
    }
}
