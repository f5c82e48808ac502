package io.github.plogsequencer;

import java.nio.file.Paths;
import java.time.Duration;
import java.util.List;

/**
 * The command processor the kill-and-restart test runs in a child JVM: over {@link FileStorage}
 * in the directory given, it numbers events (sequences 1 and 2 of kind 1, seven workspaces),
 * appends each durably and flushes, printing each event's offset, until it has numbered the
 * count given (then it closes and exits 0), or is killed.
 */
public final class KillRestartChild {
    private KillRestartChild() {}

    public static void main(String[] args) throws Exception {
        int count = Integer.parseInt(args[1]);
        Params params = Params.builder().seqType(1, 1, 1).seqType(1, 2, 1000).build();
        try (FileStorage storage = new FileStorage(Paths.get(args[0]));
                Sequencer seq = Plugin.load().open(params, storage)) {
            for (int i = 0; i < count; i++) {
                long ws = i % 7;
                long offset = seq.startWithin(Duration.ofSeconds(30), 1, ws);
                if (offset == Sequencer.NOT_NOW) {
                    throw new IllegalStateException("not ready within 30 s");
                }
                long a = seq.next(1);
                long b = seq.next(2);
                if (i % 50 == 49) {
                    seq.actualize(); // a failed command: its numbers are handed out again
                    continue;
                }
                storage.appendEvent(offset, List.of(new SeqValue(ws, 1, a), new SeqValue(ws, 2, b)));
                seq.flush();
                System.out.println(offset);
                System.out.flush();
            }
        }
    }
}
