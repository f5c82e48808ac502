package io.github.plogsequencer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * A {@link Storage} in memory, with the command processor's side: the PLog (events by offset,
 * appended densely by {@link #append}), the sequences view and the stored PLog offset. Nothing
 * survives the process: for examples, tests and as a model for a real storage. Thread-safe.
 */
public final class MemoryStorage implements Storage {
    private final NavigableMap<Long, List<SeqValue>> plog = new TreeMap<>();
    private final Map<Key, Long> view = new HashMap<>();
    private long nextOffset;
    private long writes;

    private record Key(long ws, int seq) {}

    /** An empty storage. */
    public MemoryStorage() {}

    // ---- the command processor's side -------------------------------------------------------

    /**
     * Appends the event at {@code offset} with its sequence values, as a command processor
     * does before it flushes: {@code offset} must be the PLog's next ({@link #plogNext()}), else
     * {@link IllegalArgumentException} and nothing changes (the PLog stays dense).
     */
    public synchronized void append(long offset, List<SeqValue> values) {
        long expected = plogNext();
        if (offset != expected) {
            throw new IllegalArgumentException("append at offset " + offset + ": the PLog's next offset is " + expected);
        }
        plog.put(offset, List.copyOf(values));
    }

    /**
     * Puts an event at {@code offset} as if the PLog already held it, at any offset above the
     * last (for examples and tests that start from a PLog's tail); {@link IllegalArgumentException}
     * at or below the last event.
     */
    public synchronized void seedEvent(long offset, List<SeqValue> values) {
        if (offset < plogNext()) {
            throw new IllegalArgumentException("seed at offset " + offset + ": the PLog already reaches " + (plogNext() - 1));
        }
        plog.put(offset, List.copyOf(values));
    }

    /** The offset the next appended event must have: the last event's plus one, or 1. */
    public synchronized long plogNext() {
        return plog.isEmpty() ? 1 : plog.lastKey() + 1;
    }

    /** The stored last number of sequence {@code seq} of workspace {@code ws} (0 if none). */
    public synchronized long number(long ws, int seq) {
        return view.getOrDefault(new Key(ws, seq), 0L);
    }

    /** Every row of the view. */
    public synchronized List<SeqValue> viewRows() {
        List<SeqValue> rows = new ArrayList<>();
        view.forEach((k, v) -> rows.add(new SeqValue(k.ws, k.seq, v)));
        return rows;
    }

    /** Sets a row of the view (to seed a test). */
    public synchronized void putNumber(long ws, int seq, long last) {
        view.put(new Key(ws, seq), last);
    }

    /** Sets the stored PLog offset (to seed a test). */
    public synchronized void putNextPLogOffset(long offset) {
        nextOffset = offset;
    }

    /** The events of the PLog, by offset (a copy). */
    public synchronized NavigableMap<Long, List<SeqValue>> plog() {
        return new TreeMap<>(plog);
    }

    /** How many writes completed. */
    public synchronized long writes() {
        return writes;
    }

    // ---- Storage ----------------------------------------------------------------------------

    @Override
    public synchronized long[] readNumbers(long ws, int[] seqs) {
        long[] numbers = new long[seqs.length];
        for (int i = 0; i < seqs.length; i++) {
            numbers[i] = view.getOrDefault(new Key(ws, seqs[i]), 0L);
        }
        return numbers;
    }

    @Override
    public synchronized long readNextPLogOffset() {
        return nextOffset;
    }

    @Override
    public synchronized void writeValuesAndNextPLogOffset(List<SeqValue> batch, long nextPLogOffset) {
        for (SeqValue v : batch) {
            view.put(new Key(v.ws(), v.seq()), v.value());
        }
        nextOffset = nextPLogOffset;
        writes++;
    }

    @Override
    public void actualizeSequencesFromPLog(long offset, Batcher batcher) {
        Map.Entry<Long, List<SeqValue>> e;
        synchronized (this) {
            e = plog.ceilingEntry(offset);
        }
        while (e != null) {
            if (!batcher.batch(e.getValue(), e.getKey())) {
                return;
            }
            synchronized (this) {
                e = plog.higherEntry(e.getKey());
            }
        }
    }
}
