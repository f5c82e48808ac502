package io.github.plogsequencer;

import java.util.Arrays;

/**
 * Up to four sequences of one kind, named without a list (the WIT {@code seq-quad}): what the
 * batched calls take a number of, per event, in order. Immutable; make one per call site and
 * reuse it, so the fast paths allocate nothing.
 */
public final class SeqQuad {
    /** No sequence. */
    public static final SeqQuad NONE = new SeqQuad(new int[0]);

    private final int[] seqs;

    private SeqQuad(int[] seqs) {
        this.seqs = seqs;
    }

    /**
     * The sequences {@code seqs}, in order (repeats allowed: each takes its own number);
     * {@link IllegalArgumentException} for more than four or one that is not a u16.
     */
    public static SeqQuad of(int... seqs) {
        if (seqs.length > 4) {
            throw new IllegalArgumentException("at most four sequences, got " + seqs.length);
        }
        for (int s : seqs) {
            Args.u16("a sequence", s);
        }
        return new SeqQuad(seqs.clone());
    }

    /** How many sequences (0..4). */
    public int count() {
        return seqs.length;
    }

    /** The {@code i}-th sequence (0-based, below {@link #count()}). */
    public int seq(int i) {
        return seqs[i];
    }

    /** The {@code i}-th sequence, or 0 past the count (the WIT's unused places). */
    int slot(int i) {
        return i < seqs.length ? seqs[i] : 0;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SeqQuad && Arrays.equals(seqs, ((SeqQuad) o).seqs);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(seqs);
    }

    @Override
    public String toString() {
        return "SeqQuad" + Arrays.toString(seqs);
    }
}
