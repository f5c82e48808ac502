package io.github.plogsequencer;

import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wasm.Parser;
import java.util.List;

/** A profiling aid: wasm operators per transaction of W2's paths (the interpreter's listener). */
public final class CountOps {
    private CountOps() {}

    static long ops;

    public static void main(String[] args) throws Exception {
        Params params = Params.builder().seqType(1, 1, 1).seqType(1, 2, 1).seqType(1, 3, 1).seqType(1, 4, 1)
                .maxNumUnflushedValues(1_000_000_000L).lruCacheSize(100_000).build();
        var module = Parser.parse(Plugin.class.getResourceAsStream("sequencer-core.wasm"));
        for (String path : List.of("quad", "batch", "ahead", "plain")) {
            HostLink link = new HostLink(new MemoryStorage(), Clock.system(), 1);
            Instance inst = Instance.builder(module).withImportValues(link.imports())
                    .withUnsafeExecutionListener((i, s) -> ops++).build();
            Guest g = new Guest(inst, link);
            link.attach(g);
            g.create(params);
            for (Operation op : link.takeOutbox()) {
                g.deliverNextOffset(op.op, 0);
            }
            for (Operation op : link.takeOutbox()) {
                g.deliverPlogWords(op.op, new long[0], 0, 1, true);
            }
            SeqQuad seqs = SeqQuad.of(1, 2, 3);
            long[] ws = new long[64];
            java.util.Arrays.fill(ws, 7);
            BatchNumbers b = new BatchNumbers();
            int n = 6400;
            Ahead.Taken taken = new Ahead.Taken();
            taken.count = 3;
            taken.s0 = 1;
            taken.s1 = 2;
            taken.s2 = 3;
            // warm: one of each
            if (path.equals("quad")) {
                g.startNextQuad(false, 1, 7, seqs);
            } else if (path.equals("batch")) {
                g.startBatch(false, 1, ws, 64, seqs, b);
            } else if (path.equals("ahead")) {
                g.startAhead(1, 7, seqs);
            }
            link.takeOutbox();
            ops = 0;
            for (int i = 0; i < n; i++) {
                if (path.equals("quad")) {
                    g.startNextQuad(true, 1, 7, seqs);
                } else if (path.equals("batch")) {
                    if (i % 64 == 0) {
                        g.startBatch(true, 1, ws, 64, seqs, b);
                    }
                } else if (path.equals("ahead")) {
                    g.takeFlushStartAhead(taken, 1, 7, seqs);
                } else {
                    g.start(1, 7);
                    g.next(1);
                    g.next(2);
                    g.next(3);
                    g.flushStatus();
                }
                link.takeOutbox();
            }
            System.out.printf("%-6s %8.1f wasm operators per tx%n", path, ops / (double) n);
        }
    }
}
