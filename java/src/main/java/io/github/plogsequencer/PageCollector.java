package io.github.plogsequencer;

import java.util.List;

/**
 * Maps one {@code begin-read-plog(first)} onto {@link Storage#actualizeSequencesFromPLog}: the
 * batcher takes up to {@code pageEvents} events and stops the scan at the next one, so a page
 * ends the PLog ({@code end}) exactly when the scan ran out of events. Checks what the contract
 * promises (offsets from {@code first} on, rising) so that a storage that breaks it fails the
 * read (retried later) instead of having its page refused.
 */
final class PageCollector implements Batcher {
    private final long first;
    private final int pageEvents;
    private long[] words = new long[64];
    private int len;
    private int events;
    private long last;
    private boolean stopped;
    private String broken;

    PageCollector(long first, int pageEvents) {
        this.first = first;
        this.pageEvents = pageEvents;
    }

    @Override
    public boolean batch(List<SeqValue> values, long offset) {
        if (stopped || broken != null) {
            return false;
        }
        if (events == pageEvents) {
            stopped = true;
            return false;
        }
        if (Long.compareUnsigned(offset, first) < 0 || (events > 0 && Long.compareUnsigned(offset, last) <= 0)) {
            broken = "the PLog scan from " + Long.toUnsignedString(first) + " handed over offset "
                    + Long.toUnsignedString(offset) + (events > 0 ? " after " + Long.toUnsignedString(last) : "");
            return false;
        }
        int need = len + values.size() * 4;
        if (need > words.length) {
            long[] grown = new long[Math.max(need, words.length * 2)];
            System.arraycopy(words, 0, grown, 0, len);
            words = grown;
        }
        for (SeqValue v : values) {
            words[len++] = offset;
            words[len++] = v.ws();
            words[len++] = v.seq();
            words[len++] = v.value();
        }
        events++;
        last = offset;
        return true;
    }

    /** The page read, or a failure if the storage broke the scan's contract. */
    Outcome outcome() {
        if (broken != null) {
            return Outcome.failed("storage broke the PLog contract: " + broken);
        }
        long next = events == 0 ? first : last + 1;
        return Outcome.plogPage(words, len, next, !stopped);
    }
}
