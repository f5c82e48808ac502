package io.github.plogsequencer;

/** The outcome of an {@link Operation} (the WIT {@code outcome}), to deliver to the plugin. */
final class Outcome {
    /** Which case. */
    enum Kind {
        WRITTEN,
        NEXT_OFFSET,
        PLOG_PAGE,
        FAILED
    }

    final Kind kind;
    /** {@code next-offset}'s offset. */
    final long offset;
    /** {@code failed}'s message. */
    final String message;
    /** A page's values, four words each (offset, ws, seq, value), in {@code words[0..len)}. */
    final long[] words;
    final int len;
    /** A page's next offset and end. */
    final long next;
    final boolean end;

    private Outcome(Kind kind, long offset, String message, long[] words, int len, long next, boolean end) {
        this.kind = kind;
        this.offset = offset;
        this.message = message;
        this.words = words;
        this.len = len;
        this.next = next;
        this.end = end;
    }

    static final Outcome WRITTEN = new Outcome(Kind.WRITTEN, 0, null, null, 0, 0, false);

    static Outcome nextOffset(long offset) {
        return new Outcome(Kind.NEXT_OFFSET, offset, null, null, 0, 0, false);
    }

    static Outcome failed(String message) {
        return new Outcome(Kind.FAILED, 0, message, null, 0, 0, false);
    }

    static Outcome plogPage(long[] words, int len, long next, boolean end) {
        return new Outcome(Kind.PLOG_PAGE, 0, null, words, len, next, end);
    }

    @Override
    public String toString() {
        switch (kind) {
            case WRITTEN:
                return "written";
            case NEXT_OFFSET:
                return "next-offset(" + offset + ")";
            case FAILED:
                return "failed(" + message + ")";
            default:
                return "plog-page(" + len / 4 + " values, next " + next + ", end " + end + ")";
        }
    }
}
