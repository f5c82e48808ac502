package io.github.plogsequencer;

import java.util.List;

/** A profiling aid: W2's per-step transaction at the Guest level, numbers ahead against plain calls (ns per tx). */
public final class BareGuest {
    private BareGuest() {}

    public static void main(String[] args) {
        Params params = Params.builder().seqType(1, 1, 1).seqType(1, 2, 1).seqType(1, 3, 1).seqType(1, 4, 1)
                .maxNumUnflushedValues(1_000_000_000L).lruCacheSize(100_000).build();
        Plugin plugin = Plugin.load();
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        long wsMod = args.length > 1 ? Long.parseLong(args[1]) : 1;
        SeqQuad seqs = SeqQuad.of(1, 2, 3);
        Ahead.Taken taken = new Ahead.Taken();
        taken.count = 3;
        taken.s0 = 1;
        taken.s1 = 2;
        taken.s2 = 3;
        for (int round = 0; round < 4; round++) {
            for (String path : List.of("ahead", "plain", "quad")) {
                HostLink link = new HostLink(new MemoryStorage(), Clock.system(), 1);
                Guest g = plugin.instantiate(link, 256L << 20);
                g.create(params);
                for (Operation op : link.takeOutbox()) {
                    g.deliverNextOffset(op.op, 0);
                }
                for (Operation op : link.takeOutbox()) {
                    g.deliverPlogWords(op.op, new long[0], 0, 1, true);
                }
                g.startNextQuad(false, 1, 7, seqs);
                g.flush();
                if (path.equals("ahead")) {
                    g.startAhead(1, 7, seqs);
                }
                long t0 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    long ws = i % wsMod;
                    if (path.equals("ahead")) {
                        g.takeFlushStartAhead(taken, 1, ws, seqs);
                    } else if (path.equals("plain")) {
                        g.start(1, ws);
                        g.next(1);
                        g.next(2);
                        g.next(3);
                        g.flushStatus();
                    } else {
                        g.startNextQuad(i > 0, 1, ws, seqs);
                    }
                    if ((i & 1023) == 0) {
                        link.takeOutbox();
                    }
                }
                System.out.printf("round %d %-6s %8.1f ns/tx%n", round, path, (System.nanoTime() - t0) / (double) n);
            }
        }
    }
}
