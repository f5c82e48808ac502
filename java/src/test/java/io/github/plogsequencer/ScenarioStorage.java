package io.github.plogsequencer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The conformance scenarios' storage (guest-tests/conformance/README.md, "The host every runner
 * models"): the PLog, the view, the stored offset, a count of applied writes, and fault
 * counters that make the next operations of a kind fail with nothing stored.
 */
final class ScenarioStorage implements Storage {
    final NavigableMap<Long, List<SeqValue>> plog = new TreeMap<>();
    final Map<List<Long>, Long> view = new HashMap<>();
    long nextOffset;
    long writes;
    int failWrites;
    int failReads;
    int failNumberReads;

    static final class Injected extends Exception {
        private static final long serialVersionUID = 1L;

        Injected(String what) {
            super("injected " + what + " failure");
        }
    }

    long plogNext() {
        return plog.isEmpty() ? 1 : plog.lastKey() + 1;
    }

    long number(long ws, long seq) {
        return view.getOrDefault(List.of(ws, seq), 0L);
    }

    @Override
    public long[] readNumbers(long ws, int[] seqs) throws Injected {
        if (failNumberReads > 0) {
            failNumberReads--;
            throw new Injected("read-numbers");
        }
        long[] n = new long[seqs.length];
        for (int i = 0; i < seqs.length; i++) {
            n[i] = number(ws, seqs[i]);
        }
        return n;
    }

    @Override
    public long[] readNumbersMany(long[] ws, int[] seqs) throws Injected {
        if (failNumberReads > 0) {
            failNumberReads--;
            throw new Injected("read-numbers");
        }
        long[] n = new long[ws.length * seqs.length];
        for (int w = 0; w < ws.length; w++) {
            for (int i = 0; i < seqs.length; i++) {
                n[w * seqs.length + i] = number(ws[w], seqs[i]);
            }
        }
        return n;
    }

    @Override
    public long readNextPLogOffset() throws Injected {
        if (failReads > 0) {
            failReads--;
            throw new Injected("read-next-offset");
        }
        return nextOffset;
    }

    @Override
    public void writeValuesAndNextPLogOffset(List<SeqValue> batch, long nextPLogOffset) throws Injected {
        if (failWrites > 0) {
            failWrites--;
            throw new Injected("write");
        }
        for (SeqValue v : batch) {
            view.put(List.of(v.ws(), (long) v.seq()), v.value());
        }
        nextOffset = nextPLogOffset;
        writes++;
    }

    @Override
    public void actualizeSequencesFromPLog(long offset, Batcher batcher) throws Injected {
        if (failReads > 0) {
            failReads--;
            throw new Injected("read-plog");
        }
        for (Map.Entry<Long, List<SeqValue>> e : new ArrayList<>(plog.tailMap(offset, true).entrySet())) {
            if (!batcher.batch(e.getValue(), e.getKey())) {
                return;
            }
        }
    }
}
