package io.github.plogsequencer;

/** The host's monotonic clock, in nanoseconds (the plugin's retry and replay timing reads it). */
@FunctionalInterface
public interface Clock {
    /** Nanoseconds since an arbitrary point, never negative and never going backwards. */
    long nanos();

    /** The system's monotonic clock ({@link System#nanoTime()}), from 0 at its first use. */
    static Clock system() {
        return SystemClock.INSTANCE;
    }
}

/** {@link Clock#system()}. */
final class SystemClock implements Clock {
    static final SystemClock INSTANCE = new SystemClock();
    private final long origin = System.nanoTime();

    private SystemClock() {}

    @Override
    public long nanos() {
        return System.nanoTime() - origin;
    }
}
