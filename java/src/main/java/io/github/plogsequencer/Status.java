package io.github.plogsequencer;

/** What the sequencer is doing (the WIT {@code status}). */
public enum Status {
    /** Recovering from storage and the PLog: {@code start} answers "not now". */
    ACTUALIZING,
    /** Ready for a transaction. */
    READY,
    /** A transaction is open. */
    IN_TRANSACTION,
    /** Cleaned up (closed): every call is refused. */
    CLEANED_UP;

    private static final Status[] BY_INDEX = values();

    static Status ofIndex(int index) {
        if (index < 0 || index >= BY_INDEX.length) {
            throw new IllegalArgumentException("no status " + index);
        }
        return BY_INDEX[index];
    }

    /** The facade's name for this status (docs/DESIGN.md §5.3). */
    SequenceStatus toSequenceStatus() {
        switch (this) {
            case ACTUALIZING:
                return SequenceStatus.RECOVER;
            case READY:
                return SequenceStatus.READY;
            case IN_TRANSACTION:
                return SequenceStatus.EVENTING;
            default:
                return SequenceStatus.FINISHED;
        }
    }
}
