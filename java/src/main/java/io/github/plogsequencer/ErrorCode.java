package io.github.plogsequencer;

/**
 * Why the sequencer refused a call: the cases of the WIT {@code error} variant (and of its
 * payload-less twin {@code refusal}), in WIT order. A refused call changes nothing, except
 * where its documentation says otherwise (the batch calls).
 */
public enum ErrorCode {
    /** The params were invalid (the detail says which rule). */
    INVALID_PARAMS("invalid-params"),
    /** The sequencer was cleaned up (or closed). */
    CLEANED_UP("cleaned-up"),
    /** {@code start} while a transaction is in progress. */
    TRANSACTION_IN_PROGRESS("transaction-in-progress"),
    /** {@code next} or {@code flush} without a transaction. */
    NO_TRANSACTION("no-transaction"),
    /** {@code start} for a kind the params do not define (the detail is the kind). */
    UNKNOWN_WS_KIND("unknown-ws-kind"),
    /** {@code next} for a sequence the transaction's kind does not define. */
    UNKNOWN_SEQ_ID("unknown-seq-id"),
    /** {@code actualize} while actualizing. */
    ALREADY_ACTUALIZING("already-actualizing"),
    /** A sequence reached the largest number there is. */
    SEQUENCE_EXHAUSTED("sequence-exhausted"),
    /** An outcome delivered for an operation the sequencer is not waiting for. */
    UNKNOWN_OPERATION("unknown-operation"),
    /** An outcome of the wrong kind for its operation. */
    WRONG_OUTCOME("wrong-outcome"),
    /** Storage returned a different count of numbers than asked for. */
    MALFORMED_NUMBERS("malformed-numbers"),
    /** A PLog page broke its contract. */
    MALFORMED_PLOG_PAGE("malformed-plog-page"),
    /** Reading numbers from storage failed during {@code start}; no transaction began. */
    STORAGE("storage");

    private static final ErrorCode[] BY_INDEX = values();

    private final String witName;

    ErrorCode(String witName) {
        this.witName = witName;
    }

    /** The case's name in the WIT, in kebab-case ({@code no-transaction}, ...). */
    public String witName() {
        return witName;
    }

    /** The case at {@code index} in WIT order; {@link IllegalArgumentException} past the end. */
    static ErrorCode ofIndex(int index) {
        if (index < 0 || index >= BY_INDEX.length) {
            throw new IllegalArgumentException("no error case " + index);
        }
        return BY_INDEX[index];
    }
}
