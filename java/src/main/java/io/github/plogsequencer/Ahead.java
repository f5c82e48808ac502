package io.github.plogsequencer;

/**
 * Numbers handed out ahead (a port of the core's {@code src/ahead.rs}, docs/PLUGIN.md "Numbers
 * ahead"): the bookkeeping of a host that hands out {@code next} numbers without a call. The
 * plugin decides every number; this only remembers which of the numbers it gave ahead were
 * handed out, to report them with the next call:
 *
 * <ul>
 *   <li>a number ahead is handed out at most once, for the {@code next} of its sequence (a
 *       sequence asked about twice has the numbers of its first two {@code next}s);
 *   <li>a {@code next} with no number ahead goes to the plugin as {@code take-next}, with the
 *       ones handed out before it; the other numbers ahead stay good;
 *   <li>any other call first reports what was handed out ({@link #end}) and ends the numbers ahead;
 *   <li>the sequences asked about at a start are those of the last transaction's first four
 *       {@code next}s ({@link #question});
 *   <li>a {@code flush} of a transaction the last start opened, with no call since, makes no
 *       call ({@link #deferFlush}): the next call reports it ({@code take-flush-start-ahead}).
 * </ul>
 */
final class Ahead {
    /** Sequences handed out ahead, in question order: the first {@code count} of s0..s3. */
    static final class Taken {
        int count;
        int s0;
        int s1;
        int s2;
        int s3;

        void add(int seq) {
            switch (count++) {
                case 0:
                    s0 = seq;
                    break;
                case 1:
                    s1 = seq;
                    break;
                case 2:
                    s2 = seq;
                    break;
                default:
                    s3 = seq;
            }
        }

        boolean isEmpty() {
            return count == 0;
        }
    }

    /** What {@link #end} says to report before a call other than {@code next}. */
    enum Report {
        /** Nothing was handed out and no flush waits. */
        NOTHING,
        /** Numbers handed out: {@code take(taken)}. */
        TAKE,
        /** A deferred flush, with the numbers handed out before it: {@code take-flush(taken)}. */
        FLUSH
    }

    private final int[] seqs = new int[4];
    private int len;
    private final long[] numbers = new long[4];
    private int taken;
    private int spent;
    private final int[] asked = new int[4];
    private int askedLen;
    private boolean open;
    private boolean flushDeferred;

    /** The sequences reported by the last {@link #end} or {@link #reportWithNext} (reused). */
    final Taken report = new Taken();

    private SeqQuad lastQuestion = SeqQuad.NONE;

    /**
     * The sequences to ask about at the next start: those of the last transaction's first four
     * {@code next}s (in order, repeats included), else those asked about last time.
     */
    SeqQuad question() {
        int[] from = askedLen > 0 ? asked : seqs;
        int n = askedLen > 0 ? askedLen : len;
        SeqQuad q = lastQuestion;
        if (!same(q, from, n)) {
            int[] copy = new int[n];
            System.arraycopy(from, 0, copy, 0, n);
            q = SeqQuad.of(copy);
            lastQuestion = q;
        }
        return q;
    }

    private static boolean same(SeqQuad q, int[] seqs, int n) {
        if (q.count() != n) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            if (q.seq(i) != seqs[i]) {
                return false;
            }
        }
        return true;
    }

    /**
     * A start asked about {@link #question()} was answered: {@code n[i]} is what the first
     * {@code next} of its i-th sequence gets (0 for none); {@code open}: it opened a transaction.
     */
    void started(long[] n, boolean open) {
        this.open = open;
        if (askedLen > 0) {
            System.arraycopy(asked, 0, seqs, 0, askedLen);
            len = askedLen;
        }
        for (int i = 0; i < 4; i++) {
            numbers[i] = i < len ? n[i] : 0;
        }
        taken = 0;
        spent = 0;
        askedLen = 0;
    }

    /** {@code next(seq)} without a call: the first good number ahead for {@code seq}, or 0 (ask the plugin). */
    long next(int seq) {
        if (askedLen < 4) {
            asked[askedLen++] = seq;
        }
        for (int i = 0; i < len; i++) {
            int bit = 1 << i;
            if (seqs[i] == seq && (spent & bit) == 0) {
                if (numbers[i] == 0) {
                    return 0;
                }
                spent |= bit;
                taken |= bit;
                return numbers[i];
            }
        }
        return 0;
    }

    /**
     * What to report with a {@code take-next(.., seq)} (after {@link #next} answered 0): the
     * numbers handed out so far, in {@link #report}; {@code seq}'s numbers ahead are spent.
     */
    Taken reportWithNext(int seq) {
        for (int i = 0; i < len; i++) {
            if (seqs[i] == seq) {
                spent |= 1 << i;
            }
        }
        return reported();
    }

    /**
     * What to report before any call other than {@code next} (its sequences in {@link #report});
     * nothing is ahead afterwards.
     */
    Report end() {
        if (flushDeferred) {
            flushDeferred = false;
            return Report.FLUSH;
        }
        close();
        return report.isEmpty() ? Report.NOTHING : Report.TAKE;
    }

    /**
     * {@code flush} without a call, if it can be: true when the last start opened a transaction
     * and no call since could have ended it; the flush then waits, with what was handed out,
     * in {@link #report} for the next call.
     */
    boolean deferFlush() {
        if (!open) {
            return false;
        }
        close();
        flushDeferred = true;
        return true;
    }

    /** True while a deferred flush waits to be reported. */
    boolean flushDeferred() {
        return flushDeferred;
    }

    /** Forgets everything (a new instance knows nothing of the old one's numbers). */
    void reset() {
        len = 0;
        taken = 0;
        spent = 0;
        askedLen = 0;
        open = false;
        flushDeferred = false;
        report.count = 0;
    }

    private void close() {
        reported();
        java.util.Arrays.fill(numbers, 0);
        spent = 0;
        open = false;
    }

    private Taken reported() {
        Taken t = report;
        t.count = 0;
        for (int i = 0; i < len; i++) {
            if ((taken & (1 << i)) != 0) {
                t.add(seqs[i]);
            }
        }
        taken = 0;
        return t;
    }
}
