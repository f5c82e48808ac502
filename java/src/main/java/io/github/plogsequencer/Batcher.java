package io.github.plogsequencer;

import java.util.List;

/**
 * What {@link Storage#actualizeSequencesFromPLog} hands the PLog's events to (the original's
 * {@code batcher}): once per event, in offset order.
 */
@FunctionalInterface
public interface Batcher {
    /**
     * Takes the event at {@code offset} with its sequence values (unordered, keys may repeat,
     * possibly none). Returns true to be given the next event, false to stop the scan: the
     * storage then returns at once, without calling again.
     */
    boolean batch(List<SeqValue> values, long offset);
}
