package io.github.plogsequencer;

import java.util.List;

/**
 * A profiling aid, not a test: W2's paths on a bare store (manual tasks: writes are begun and
 * never performed, nothing else runs), ns per transaction. Run with the test classpath:
 * {@code java -cp target/classes:target/test-classes:$(cat target/classpath.txt) io.github.plogsequencer.BareCalls}.
 */
public final class BareCalls {
    private BareCalls() {}

    public static void main(String[] args) {
        Params params = Params.builder().seqType(1, 1, 1).seqType(1, 2, 1).seqType(1, 3, 1).seqType(1, 4, 1)
                .maxNumUnflushedValues(1_000_000_000L).lruCacheSize(100_000).build();
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        String only = args.length > 1 ? args[1] : "";
        SeqQuad seqs = SeqQuad.of(1, 2, 3);
        for (int round = 0; round < 3; round++) {
            for (String path : List.of("quad", "batch", "step", "status")) {
                if (!only.isEmpty() && !only.contains(path)) {
                    continue;
                }
                MemoryStorage storage = new MemoryStorage();
                Sequencer seq = Plugin.load().open(params, storage,
                        SequencerOptions.builder().manualTasks().build());
                ManualTasks t = seq.manualTasks();
                while (!t.pending().isEmpty()) {
                    seq.perform(t.pending().get(0));
                }
                long[] numbers = new long[4];
                long[] ws = new long[64];
                java.util.Arrays.fill(ws, 7);
                BatchNumbers b = new BatchNumbers();
                long t0 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    if (path.equals("quad")) {
                        if (i == 0) {
                            seq.startNext(1, 7, seqs, numbers);
                        } else {
                            seq.flushStartNext(1, 7, seqs, numbers);
                        }
                    } else if (path.equals("batch")) {
                        if (i % 64 == 0) {
                            if (i == 0) {
                                seq.startBatch(1, ws, seqs, b);
                            } else {
                                seq.flushStartBatch(1, ws, seqs, b);
                            }
                        }
                    } else if (path.equals("step")) {
                        seq.start(1, 7);
                        seq.next(1);
                        seq.next(2);
                        seq.next(3);
                        seq.flush();
                    } else {
                        seq.status();
                    }
                    if (i % 4096 == 0) {
                        t.pending().clear(); // writes begun are never reported: a bare store
                    }
                }
                long ns = System.nanoTime() - t0;
                System.out.printf("round %d %-6s %8.1f ns/tx  (%d pending)%n", round, path, ns / (double) n,
                        t.pending().size());
            }
        }
    }
}
