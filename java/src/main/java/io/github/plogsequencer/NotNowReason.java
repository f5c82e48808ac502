package io.github.plogsequencer;

/** Why {@code start} said "not now": no transaction began; try again later. */
public enum NotNowReason {
    /** The sequencer is actualizing (recovering from storage and the PLog). */
    ACTUALIZING,
    /** More values wait to be written than {@link Params#maxNumUnflushedValues()} allows. */
    TOO_MANY_UNFLUSHED;

    static NotNowReason ofIndex(int index) {
        if (index == 0) {
            return ACTUALIZING;
        }
        if (index == 1) {
            return TOO_MANY_UNFLUSHED;
        }
        throw new IllegalArgumentException("no not-now reason " + index);
    }
}
