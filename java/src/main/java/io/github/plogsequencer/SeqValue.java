package io.github.plogsequencer;

/**
 * One number of one sequence in one workspace: a row of the sequences view, or one value of a
 * PLog event (the original's {@code SeqValue}: {@code Key{WSID, SeqID}} and {@code Value}).
 *
 * @param ws the workspace (u64, as a Java long)
 * @param seq the sequence (u16)
 * @param value the number (u64, as a Java long)
 */
public record SeqValue(long ws, int seq, long value) {
    /** Checks that {@code seq} is a u16. */
    public SeqValue {
        if (seq < 0 || seq > 0xFFFF) {
            throw new IllegalArgumentException("a sequence is a u16, got " + seq);
        }
    }
}
