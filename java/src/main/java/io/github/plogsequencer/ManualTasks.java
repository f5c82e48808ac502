package io.github.plogsequencer;

import java.util.ArrayList;
import java.util.List;

/**
 * Tasks performed by the caller, for tests that order storage work themselves (the
 * conformance runner): the operations wait in {@link #pending()} until {@link Sequencer#perform}
 * or a hand-made delivery; the wake-up waits in {@link #wakeAt()} until the caller pumps.
 */
final class ManualTasks implements Tasks {
    private final List<Operation> pending = new ArrayList<>();
    private long wakeAt = -1;

    /** The operations begun and not yet performed or delivered, in the order begun. */
    List<Operation> pending() {
        return pending;
    }

    /** When the plugin asked to be pumped, or -1. */
    long wakeAt() {
        return wakeAt;
    }

    void clear() {
        pending.clear();
        wakeAt = -1;
    }

    @Override
    public void submit(List<Operation> ops) {
        pending.addAll(ops);
    }

    @Override
    public void wake(long at) {
        wakeAt = at;
    }

    @Override
    public void armSettle() {}

    @Override
    public void abandonBefore(long generation) {
        pending.removeIf(op -> op.generation < generation);
    }

    @Override
    public boolean drainWrites(long timeoutNanos) {
        return true;
    }

    @Override
    public void stop() {
        clear();
    }
}
