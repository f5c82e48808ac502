package io.github.plogsequencer;

/** The facade's {@code SequenceStatus} (docs/DESIGN.md §5.3), in WIT order. */
public enum SequenceStatus {
    /** Not created. */
    NONE,
    /** Actualizing: recovering from storage and the PLog. */
    RECOVER,
    /** Ready for an event. */
    READY,
    /** An event (a transaction) is open. */
    EVENTING,
    /** Closed. */
    FINISHED;

    private static final SequenceStatus[] BY_INDEX = values();

    static SequenceStatus ofIndex(int index) {
        if (index < 0 || index >= BY_INDEX.length) {
            throw new IllegalArgumentException("no sequence status " + index);
        }
        return BY_INDEX[index];
    }
}
