package io.github.plogsequencer;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The flusher and the actualizer of one sequencer, on a thread of its own: a small event loop
 * (docs/DESIGN.md §7) that performs the storage work the plugin began, one operation at a
 * time in the order begun (so writes land in order, and a read never overtakes a write),
 * delivers each outcome, and pumps the plugin when the wake-up it asked for comes. It never
 * retries on its own: the plugin decides when (its waits are capped and jittered), this thread
 * only keeps the timer.
 */
final class BackgroundTasks implements Tasks {
    private static final AtomicInteger THREADS = new AtomicInteger();

    private final TaskTarget target;
    private final Performer performer;
    private final Clock clock;
    private final long settleAfter;
    private final Thread thread;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final ArrayDeque<Operation> queue = new ArrayDeque<>();
    private Operation inFlight;
    private long wakeAt = -1;
    private long settleAt = -1;
    private volatile boolean settleArmed;
    private boolean draining;
    private boolean stopped;

    BackgroundTasks(TaskTarget target, Performer performer, Clock clock, long settleAfterNanos) {
        this.target = target;
        this.performer = performer;
        this.clock = clock;
        this.settleAfter = settleAfterNanos;
        this.thread = new Thread(this::run, "plog-sequencer-tasks-" + THREADS.incrementAndGet());
        this.thread.setDaemon(true);
        this.thread.start();
    }

    @Override
    public void submit(List<Operation> ops) {
        lock.lock();
        try {
            queue.addAll(ops);
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void wake(long at) {
        lock.lock();
        try {
            wakeAt = at;
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void armSettle() {
        if (settleArmed) {
            return; // asked already: one settle per delay, not one per transaction
        }
        settleArmed = true;
        lock.lock();
        try {
            settleAt = clock.nanos() + settleAfter;
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void abandonBefore(long generation) {
        lock.lock();
        try {
            queue.removeIf(op -> op.generation < generation);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean drainWrites(long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        lock.lock();
        try {
            draining = true;
            changed.signalAll();
            while (hasWrite()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                changed.awaitNanos(left);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !hasWrite();
        } finally {
            lock.unlock();
        }
    }

    private boolean hasWrite() {
        if (inFlight != null && inFlight.kind == Operation.Kind.WRITE) {
            return true;
        }
        for (Operation op : queue) {
            if (op.kind == Operation.Kind.WRITE) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void stop() {
        lock.lock();
        try {
            stopped = true;
            queue.clear();
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        if (Thread.currentThread() != thread) {
            try {
                thread.join(TimeUnit.SECONDS.toMillis(30));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The loop: the next thing to do, done outside the queue's lock. */
    private void run() {
        while (true) {
            Operation op = null;
            boolean pump = false;
            boolean settle = false;
            lock.lock();
            try {
                inFlight = null;
                changed.signalAll(); // a drain waits for the operation in flight
                while (true) {
                    if (stopped) {
                        return;
                    }
                    op = queue.poll();
                    if (op != null) {
                        if (draining && op.kind != Operation.Kind.WRITE) {
                            continue; // closing: reads are abandoned
                        }
                        inFlight = op;
                        break;
                    }
                    long now = clock.nanos();
                    if (!draining && wakeAt >= 0 && now - wakeAt >= 0) {
                        wakeAt = -1;
                        pump = true;
                        break;
                    }
                    if (!draining && settleAt >= 0 && now - settleAt >= 0) {
                        settleAt = -1;
                        settleArmed = false;
                        settle = true;
                        break;
                    }
                    long until = Long.MAX_VALUE;
                    if (!draining && wakeAt >= 0) {
                        until = wakeAt - now;
                    }
                    if (!draining && settleAt >= 0) {
                        until = Math.min(until, settleAt - now);
                    }
                    if (draining) {
                        changed.signalAll();
                    }
                    if (until == Long.MAX_VALUE) {
                        changed.await();
                    } else {
                        changed.awaitNanos(until);
                    }
                }
            } catch (InterruptedException e) {
                // Nothing of ours interrupts this thread: an interrupt from outside is ignored
                // (stop() ends it), so the flusher never dies silently.
                Sequencer.LOG.log(System.Logger.Level.WARNING, "the sequencer's task thread was interrupted; going on");
                continue;
            } finally {
                lock.unlock();
            }
            try {
                if (op != null) {
                    target.deliver(op, performer.perform(op));
                } else if (pump) {
                    target.pump();
                } else if (settle) {
                    target.settle();
                }
            } catch (RuntimeException | Error e) {
                Sequencer.LOG.log(System.Logger.Level.ERROR, "the sequencer's task thread: " + e, e);
            }
        }
    }
}
