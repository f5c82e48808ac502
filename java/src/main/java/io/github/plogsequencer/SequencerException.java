package io.github.plogsequencer;

/**
 * A call the sequencer refused, with the WIT error case as {@link #code()} and its payload as
 * {@link #detail()}. The sequencer's state is unchanged by a refused call (the batch calls say
 * where a later refusal drops their transaction) and the next call works as usual.
 */
public final class SequencerException extends PlogSequencerException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;
    private final transient Object detail;

    /** A refusal with {@code code} and its payload {@code detail} (null if the case has none). */
    public SequencerException(ErrorCode code, Object detail) {
        super(detail == null ? code.witName() : code.witName() + ": " + detail, null);
        this.code = code;
        this.detail = detail;
    }

    /** The WIT error case. */
    public ErrorCode code() {
        return code;
    }

    /**
     * The case's payload: a message ({@code String}: invalid-params, malformed-numbers,
     * malformed-plog-page, storage), a kind ({@code Integer}: unknown-ws-kind), a {@link SeqRef}
     * (unknown-seq-id, sequence-exhausted), an operation id ({@code Long}: unknown-operation,
     * wrong-outcome), or null.
     */
    public Object detail() {
        return detail;
    }
}
