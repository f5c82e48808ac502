package io.github.plogsequencer;

import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The sequencer's parameters (the original's {@code Params}): per workspace kind its sequences
 * and their initial values, the limit of unflushed values, the cache size, and the delays of
 * the background tasks. Immutable; build with {@link #builder()}. The plugin checks them when a
 * sequencer is opened and refuses invalid ones with {@link ErrorCode#INVALID_PARAMS}
 * (docs/DESIGN.md §3.7); here only the Java types are checked.
 */
public final class Params {
    private final Map<Integer, Map<Integer, Long>> seqTypes;
    private final int maxNumUnflushedValues;
    private final int lruCacheSize;
    private final Duration batcherDelayOnToBeFlushedOverflow;
    private final Duration retryDelay;
    private final Duration maxRetryDelay;
    private final int retryJitterPercent;

    private Params(Builder b) {
        TreeMap<Integer, Map<Integer, Long>> kinds = new TreeMap<>();
        b.seqTypes.forEach((k, seqs) -> kinds.put(k, Collections.unmodifiableMap(new TreeMap<>(seqs))));
        this.seqTypes = Collections.unmodifiableMap(kinds);
        this.maxNumUnflushedValues = b.maxNumUnflushedValues;
        this.lruCacheSize = b.lruCacheSize;
        this.batcherDelayOnToBeFlushedOverflow = b.batcherDelay;
        this.retryDelay = b.retryDelay;
        this.maxRetryDelay = b.maxRetryDelay;
        this.retryJitterPercent = b.retryJitterPercent;
    }

    /** A builder with the defaults: no kinds, 500 unflushed values, a cache of 100,000, 5 ms, 500 ms, 10 s, 50 %. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from these params. */
    public Builder toBuilder() {
        Builder b = new Builder();
        seqTypes.forEach((k, seqs) -> b.seqTypes.put(k, new TreeMap<>(seqs)));
        b.maxNumUnflushedValues = maxNumUnflushedValues;
        b.lruCacheSize = lruCacheSize;
        b.batcherDelay = batcherDelayOnToBeFlushedOverflow;
        b.retryDelay = retryDelay;
        b.maxRetryDelay = maxRetryDelay;
        b.retryJitterPercent = retryJitterPercent;
        return b;
    }

    /** Per workspace kind, its sequences and the first number each hands out (sorted, unmodifiable). */
    public Map<Integer, Map<Integer, Long>> seqTypes() {
        return seqTypes;
    }

    /** Above this many unwritten values {@code start} says "not now" (the original's 500). */
    public int maxNumUnflushedValues() {
        return maxNumUnflushedValues;
    }

    /** How many numbers the cache holds (the original's 100,000). */
    public int lruCacheSize() {
        return lruCacheSize;
    }

    /** While the replay is held back, how often the plugin looks again (5 ms). */
    public Duration batcherDelayOnToBeFlushedOverflow() {
        return batcherDelayOnToBeFlushedOverflow;
    }

    /** The wait after a storage operation's first failure (500 ms). */
    public Duration retryDelay() {
        return retryDelay;
    }

    /** The cap of the doubling wait between retries (10 s). */
    public Duration maxRetryDelay() {
        return maxRetryDelay;
    }

    /** How much of each retry wait is drawn away at random, in percent (50; the original's 0). */
    public int retryJitterPercent() {
        return retryJitterPercent;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Params)) {
            return false;
        }
        Params p = (Params) o;
        return seqTypes.equals(p.seqTypes) && maxNumUnflushedValues == p.maxNumUnflushedValues
                && lruCacheSize == p.lruCacheSize
                && batcherDelayOnToBeFlushedOverflow.equals(p.batcherDelayOnToBeFlushedOverflow)
                && retryDelay.equals(p.retryDelay) && maxRetryDelay.equals(p.maxRetryDelay)
                && retryJitterPercent == p.retryJitterPercent;
    }

    @Override
    public int hashCode() {
        return Objects.hash(seqTypes, maxNumUnflushedValues, lruCacheSize, batcherDelayOnToBeFlushedOverflow,
                retryDelay, maxRetryDelay, retryJitterPercent);
    }

    @Override
    public String toString() {
        return "Params{seqTypes=" + seqTypes + ", maxNumUnflushedValues=" + maxNumUnflushedValues
                + ", lruCacheSize=" + lruCacheSize + ", batcherDelay=" + batcherDelayOnToBeFlushedOverflow
                + ", retryDelay=" + retryDelay + ", maxRetryDelay=" + maxRetryDelay
                + ", retryJitterPercent=" + retryJitterPercent + "}";
    }

    /** Builds {@link Params}; every setter checks that its value fits the plugin's type. */
    public static final class Builder {
        private final Map<Integer, Map<Integer, Long>> seqTypes = new TreeMap<>();
        private int maxNumUnflushedValues = 500;
        private int lruCacheSize = 100_000;
        private Duration batcherDelay = Duration.ofMillis(5);
        private Duration retryDelay = Duration.ofMillis(500);
        private Duration maxRetryDelay = Duration.ofSeconds(10);
        private int retryJitterPercent = 50;

        private Builder() {}

        /** Sequence {@code seq} of workspace kind {@code kind} hands out {@code initial} first. */
        public Builder seqType(int kind, int seq, long initial) {
            Args.u16("a kind", kind);
            Args.u16("a sequence", seq);
            seqTypes.computeIfAbsent(kind, k -> new TreeMap<>()).put(seq, initial);
            return this;
        }

        /** Workspace kind {@code kind}, with no sequence yet (a kind with none is invalid params). */
        public Builder kind(int kind) {
            seqTypes.computeIfAbsent(Args.u16("a kind", kind), k -> new TreeMap<>());
            return this;
        }

        /** Every kind of {@code types} with its sequences and initial values (added to any given before). */
        public Builder seqTypes(Map<Integer, Map<Integer, Long>> types) {
            types.forEach((kind, seqs) -> {
                kind(kind);
                seqs.forEach((seq, initial) -> seqType(kind, seq, initial));
            });
            return this;
        }

        /** The limit of values waiting to be written (a u32; the plugin refuses 0). */
        public Builder maxNumUnflushedValues(long n) {
            this.maxNumUnflushedValues = Args.u32("maxNumUnflushedValues", n);
            return this;
        }

        /** How many numbers the cache holds (a u32). */
        public Builder lruCacheSize(long n) {
            this.lruCacheSize = Args.u32("lruCacheSize", n);
            return this;
        }

        /** How often to look again while the replay is held back. */
        public Builder batcherDelayOnToBeFlushedOverflow(Duration d) {
            this.batcherDelay = duration("batcherDelayOnToBeFlushedOverflow", d);
            return this;
        }

        /** The wait after a first failure. */
        public Builder retryDelay(Duration d) {
            this.retryDelay = duration("retryDelay", d);
            return this;
        }

        /** The cap of the doubling wait. */
        public Builder maxRetryDelay(Duration d) {
            this.maxRetryDelay = duration("maxRetryDelay", d);
            return this;
        }

        /** The share of each wait drawn away at random, in percent (a u8; the plugin refuses above 100). */
        public Builder retryJitterPercent(int percent) {
            this.retryJitterPercent = Args.u8("retryJitterPercent", percent);
            return this;
        }

        /** The params. */
        public Params build() {
            return new Params(this);
        }

        private static Duration duration(String what, Duration d) {
            Objects.requireNonNull(d, what);
            if (d.isNegative()) {
                throw new IllegalArgumentException(what + " must not be negative, got " + d);
            }
            d.toNanos(); // ArithmeticException if it does not fit nanoseconds in a long
            return d;
        }
    }
}
