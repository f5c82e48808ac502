package io.github.plogsequencer;

import java.util.List;

/**
 * Storage of one partition: the PLog, the sequences view and the stored PLog offset (the
 * original's {@code ISeqStorage}). The sequencer calls {@link #readNumbers} on the caller's
 * thread inside {@code start}; every other method on its task thread, one call at a time.
 *
 * <p>A method that throws makes its operation fail: the plugin retries it after a delay
 * (jittered, doubling up to {@link Params#maxRetryDelay()}), or refuses that {@code start} with
 * {@link ErrorCode#STORAGE} for a failed {@link #readNumbers}. Nothing is lost either way.
 *
 * <p>Promises storage keeps (docs/DESIGN.md §2.3): a write makes its values durable before its
 * offset; writes are applied in the order called; a read sees every write that completed
 * before it; the view never holds a number that is not in the PLog.
 */
public interface Storage {
    /**
     * The stored last numbers of {@code seqs} in workspace {@code ws}, in that order, 0 for a
     * key never stored. Called inside {@code start} when the numbers are not in memory: answer
     * promptly.
     */
    long[] readNumbers(long ws, int[] seqs) throws Exception;

    /**
     * {@link #readNumbers} for several workspaces at once: {@code seqs.length} numbers per
     * workspace, workspace after workspace. Called inside the batch calls for their cold
     * workspaces. The default asks {@link #readNumbers} once per workspace.
     */
    default long[] readNumbersMany(long[] ws, int[] seqs) throws Exception {
        long[] all = new long[ws.length * seqs.length];
        for (int i = 0; i < ws.length; i++) {
            long[] one = readNumbers(ws[i], seqs);
            if (one.length != seqs.length) {
                return one; // the plugin refuses the count, as it would refuse readNumbers'
            }
            System.arraycopy(one, 0, all, i * seqs.length, seqs.length);
        }
        return all;
    }

    /** The stored PLog offset: the {@code nextPLogOffset} of the last completed write, 0 if none. */
    long readNextPLogOffset() throws Exception;

    /**
     * Makes {@code batch} durable (keys unique, possibly none), then {@code nextPLogOffset} as
     * the stored PLog offset: the values must be durable before the offset is. Return only once
     * both are.
     */
    void writeValuesAndNextPLogOffset(List<SeqValue> batch, long nextPLogOffset) throws Exception;

    /**
     * Scans the PLog from {@code offset} on (that event included) and hands each event to
     * {@code batcher}, in offset order, until the PLog ends or the batcher returns false;
     * then returns. An event with no values is handed over too.
     */
    void actualizeSequencesFromPLog(long offset, Batcher batcher) throws Exception;
}
