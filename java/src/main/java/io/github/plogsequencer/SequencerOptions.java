package io.github.plogsequencer;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link Sequencer} runs, beside its {@link Params}: its clock, how many PLog events one
 * read hands the plugin, how long {@link Sequencer#close()} waits for the flusher's writes, the
 * plugin's memory cap, and how long a flush may wait for the next call. Immutable; build with
 * {@link #builder()}; {@link #defaults()} has the defaults.
 */
public final class SequencerOptions {
    private static final SequencerOptions DEFAULTS = builder().build();

    final Clock clock;
    final int pageEvents;
    final Duration closeTimeout;
    final long maxMemoryBytes;
    final long settleAfterNanos;
    final boolean manualTasks;

    private SequencerOptions(Builder b) {
        this.clock = b.clock;
        this.pageEvents = b.pageEvents;
        this.closeTimeout = b.closeTimeout;
        this.maxMemoryBytes = b.maxMemoryBytes;
        this.settleAfterNanos = b.settleAfter.toNanos();
        this.manualTasks = b.manualTasks;
    }

    /** The defaults: the system clock, pages of 4,096 events, 10 s, 256 MiB, 200 µs. */
    public static SequencerOptions defaults() {
        return DEFAULTS;
    }

    /** A builder with the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link SequencerOptions}. */
    public static final class Builder {
        private Clock clock = Clock.system();
        private int pageEvents = 4096;
        private Duration closeTimeout = Duration.ofSeconds(10);
        private long maxMemoryBytes = 256L << 20;
        private Duration settleAfter = Duration.ofNanos(200_000);
        private boolean manualTasks;

        private Builder() {}

        /** The clock the plugin's retry and replay timing reads (default {@link Clock#system()}). */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** At most this many PLog events per page handed to the plugin during a replay (at least 1). */
        public Builder pageEvents(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("pageEvents must be at least 1, got " + n);
            }
            this.pageEvents = n;
            return this;
        }

        /** How long {@link Sequencer#close()} waits for the flusher's writes to land. */
        public Builder closeTimeout(Duration d) {
            this.closeTimeout = nonNegative("closeTimeout", d);
            return this;
        }

        /** The plugin's linear-memory cap (at least 64 KiB): a call needing more traps. */
        public Builder maxMemoryBytes(long bytes) {
            if (bytes < 65536) {
                throw new IllegalArgumentException("maxMemoryBytes must be at least one 64 KiB page, got " + bytes);
            }
            this.maxMemoryBytes = bytes;
            return this;
        }

        /**
         * How long the flush of a transaction {@link Sequencer#start} opened may wait for the
         * next call to carry it (the numbers-ahead protocol: one crossing per transaction on
         * the per-step path) before the task thread reports it. Zero: every flush is its own
         * call.
         */
        public Builder settleAfter(Duration d) {
            this.settleAfter = nonNegative("settleAfter", d);
            return this;
        }

        /** For tests: no task thread; the caller performs the storage work (see {@link ManualTasks}). */
        Builder manualTasks() {
            this.manualTasks = true;
            this.settleAfter = Duration.ZERO;
            return this;
        }

        /** The options. */
        public SequencerOptions build() {
            return new SequencerOptions(this);
        }

        private static Duration nonNegative(String what, Duration d) {
            Objects.requireNonNull(d, what);
            if (d.isNegative()) {
                throw new IllegalArgumentException(what + " must not be negative, got " + d);
            }
            return d;
        }
    }
}
