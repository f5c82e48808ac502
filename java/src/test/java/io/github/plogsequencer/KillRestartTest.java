package io.github.plogsequencer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real child JVM numbering events over a durable file storage is killed (SIGKILL) mid-run,
 * twice, then restarted to finish: the PLog's offsets are dense and no number was issued twice.
 */
class KillRestartTest {
    @TempDir
    Path dir;

    /** Runs the child until it has printed {@code killAfter} offsets (then kills it), or to its end. */
    private int runChild(int count, int killAfter) throws Exception {
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                KillRestartChild.class.getName(), dir.toString(), Integer.toString(count))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        int printed = 0;
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            while (out.readLine() != null) {
                if (++printed == killAfter) {
                    p.destroyForcibly(); // SIGKILL: no shutdown hook, no close
                    break;
                }
            }
        }
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child did not end");
        if (killAfter > 0) {
            assertTrue(p.exitValue() != 0, "the child was killed");
        } else {
            assertEquals(0, p.exitValue(), "the last run finishes");
        }
        return printed;
    }

    @Test
    void aChildKilledMidRunAndRestartedLeavesDenseOffsetsAndNoNumberTwice() throws Exception {
        runChild(100_000, 300);
        runChild(100_000, 450);
        runChild(400, 0);
        Map<List<Long>, TreeSet<Long>> seen = new HashMap<>();
        long events;
        try (FileStorage storage = new FileStorage(dir)) {
            var plog = storage.events();
            events = plog.size();
            long expected = 1;
            for (var e : plog.entrySet()) {
                assertEquals(expected++, e.getKey(), "PLog offsets are dense");
                for (SeqValue v : e.getValue()) {
                    boolean fresh = seen.computeIfAbsent(List.of(v.ws(), (long) v.seq()), k -> new TreeSet<>()).add(v.value());
                    assertTrue(fresh, "number " + v.value() + " of " + v + " issued twice");
                }
            }
            // Every key's numbers are dense too: a number never reaching the PLog was handed out again.
            seen.forEach((key, values) -> {
                long first = key.get(1) == 1 ? 1 : 1000;
                assertEquals(first, values.first(), "the first number of " + key);
                assertEquals(first + values.size() - 1, values.last(), "the numbers of " + key + " are dense");
            });
            assertEquals(storage.plogNext() - 1, events);
        }
        assertTrue(events > 700, "the runs numbered " + events + " events");
        assertTrue(Files.size(dir.resolve("view.log")) > 0);
    }
}
