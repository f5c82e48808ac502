package io.github.plogsequencer;

/** What the task thread calls on its sequencer, each under the sequencer's instance lock. */
interface TaskTarget {
    /** Delivers {@code outcome} of {@code op} to the instance that began it, if it is still current. */
    void deliver(Operation op, Outcome outcome);

    /** The wake-up the plugin asked for has come. */
    void pump();

    /** Reports a flush that waited for a call, if one still waits. */
    void settle();
}
