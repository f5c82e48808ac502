// The Java package's workloads (docs/BENCHMARKS.md "Method" and "Beside the Go original"):
// W1, W2 and W4 through io.github.plogsequencer on Chicory, per step (start, 3 next, flush),
// one event per call (flush-start-next-quad) and batches of 64 (flush-start-batch), plus the
// empty call, on the build-time compiled engine and the interpreter; one markdown table.
// Run by scripts/bench-java.sh:
//   java -cp "target/plog-sequencer-0.1.0.jar:$(cat target/classpath.txt)" bench/Workloads.java
// Knobs (environment): BENCH_SCALE (1), BENCH_RUNS (3, the median is reported), BENCH_ONLY
// (e.g. W1,empty), BENCH_ENGINES (compiled,interpreter), BENCH_PATHS (substrings of the path
// names), RUST_TSV (the Rust bench's rows as its BENCH_OUT writes them: its component rows are
// the comparison; without it, the figures of docs/BENCHMARKS.md "Latest figures").
import io.github.plogsequencer.BatchNumbers;
import io.github.plogsequencer.Batcher;
import io.github.plogsequencer.Engine;
import io.github.plogsequencer.Params;
import io.github.plogsequencer.Plugin;
import io.github.plogsequencer.SeqQuad;
import io.github.plogsequencer.SeqValue;
import io.github.plogsequencer.Sequencer;
import io.github.plogsequencer.Storage;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

public class Workloads {
    static final double SCALE = Double.parseDouble(env("BENCH_SCALE", "1"));
    static final int RUNS = Integer.parseInt(env("BENCH_RUNS", "3"));
    static final List<String> ONLY = list(env("BENCH_ONLY", "W1,W2,W4,empty"));
    static final List<String> ENGINES = list(env("BENCH_ENGINES", "compiled,interpreter"));
    static final List<String> PATHS = list(env("BENCH_PATHS", ""));
    static final SeqQuad SEQS = SeqQuad.of(1, 2, 3);
    static final String PER_STEP = "per step (start, 3 next, flush)";
    static final String ONE_EVENT = "1 event/call (flush-start-next-quad)";
    static final String BATCHES = "batches of 64 (flush-start-batch)";
    static final String EMPTY = "status() through the package";
    /** docs/BENCHMARKS.md "Latest figures" (component, with fuel, group commit; fa7c653), ns per tx. */
    static final Map<String, Double> DOCS = Map.of(
            "W1|" + PER_STEP, 989.7, "W1|" + ONE_EVENT, 385.9, "W1|" + BATCHES, 170.1,
            "W2|" + PER_STEP, 892.5, "W2|" + ONE_EVENT, 318.7, "W2|" + BATCHES, 97.3,
            "W4|" + PER_STEP, 2487.2, "W4|" + ONE_EVENT, 1717.6, "W4|" + BATCHES, 804.3,
            "empty|" + EMPTY, 114.4);

    static String env(String k, String d) {
        String v = System.getenv(k);
        return v == null || v.isEmpty() ? d : v;
    }

    static List<String> list(String s) {
        return s.isEmpty() ? List.of() : Arrays.asList(s.split(","));
    }

    /** The bench's storage: the view in a map, no PLog; a write completes no sooner than 100 µs after it began. */
    static final class BenchStorage implements Storage {
        final Map<Long, Long> view = new ConcurrentHashMap<>();
        volatile long next;

        static long key(long ws, int seq) {
            return ws * 8 + seq;
        }

        @Override
        public long[] readNumbers(long ws, int[] seqs) {
            long[] n = new long[seqs.length];
            for (int i = 0; i < seqs.length; i++) {
                n[i] = view.getOrDefault(key(ws, seqs[i]), 0L);
            }
            return n;
        }

        @Override
        public long readNextPLogOffset() {
            return next;
        }

        @Override
        public void writeValuesAndNextPLogOffset(List<SeqValue> batch, long nextPLogOffset) {
            long began = System.nanoTime();
            for (SeqValue v : batch) {
                view.put(key(v.ws(), v.seq()), v.value());
            }
            next = nextPLogOffset;
            long left;
            while ((left = 100_000 - (System.nanoTime() - began)) > 0) {
                LockSupport.parkNanos(left);
            }
        }

        @Override
        public void actualizeSequencesFromPLog(long offset, Batcher batcher) {}
    }

    interface Workload {
        /** Workspace of transaction i. */
        long ws(long i);
    }

    static final Params PARAMS = Params.builder().seqType(1, 1, 1).seqType(1, 2, 1).seqType(1, 3, 1).seqType(1, 4, 1)
            .maxNumUnflushedValues(1_000_000).lruCacheSize(100_000).build();

    static Sequencer open(Plugin plugin, BenchStorage storage) {
        Sequencer seq = plugin.open(PARAMS, storage);
        if (!seq.awaitReady(Duration.ofSeconds(30))) {
            throw new IllegalStateException("not ready");
        }
        return seq;
    }

    /** Runs {@code n} transactions of {@code path} from transaction {@code from} on; returns ns. */
    static long run(Sequencer seq, String path, Workload w, long from, long n, long[] ws64, BatchNumbers batch) {
        long[] numbers = new long[4];
        long t0 = System.nanoTime();
        if (path.equals(PER_STEP)) {
            for (long i = from; i < from + n; i++) {
                long ws = w.ws(i);
                while (seq.start(1, ws) == 0) {
                    Thread.onSpinWait();
                }
                seq.next(1);
                seq.next(2);
                seq.next(3);
                seq.flush();
            }
        } else if (path.equals(ONE_EVENT)) {
            boolean open = from > 0;
            for (long i = from; i < from + n; i++) {
                long ws = w.ws(i);
                long offset = open ? seq.flushStartNext(1, ws, SEQS, numbers) : seq.startNext(1, ws, SEQS, numbers);
                while (offset == 0) {
                    Thread.onSpinWait();
                    offset = seq.startNext(1, ws, SEQS, numbers);
                }
                open = true;
            }
        } else if (path.equals(BATCHES)) {
            boolean open = from > 0;
            for (long i = from; i < from + n; i += 64) {
                for (int j = 0; j < 64; j++) {
                    ws64[j] = w.ws(i + j);
                }
                BatchNumbers b = open ? seq.flushStartBatch(1, ws64, SEQS, batch) : seq.startBatch(1, ws64, SEQS, batch);
                if (b.started() != 64) {
                    throw new IllegalStateException("batch started " + b.started() + ": " + b.notNow());
                }
                open = true;
            }
        } else {
            for (long i = from; i < from + n; i++) {
                seq.status();
            }
        }
        return System.nanoTime() - t0;
    }

    record Row(String workload, String engine, String path, long ops, double ns, double rust, String rustFrom,
            double target) {}

    public static void main(String[] args) throws Exception {
        Map<String, Double> rust = new HashMap<>(DOCS);
        String rustFrom = "docs";
        String rustTsv = System.getenv("RUST_TSV");
        if (rustTsv != null && !rustTsv.isEmpty()) {
            // The Rust bench's rows (BENCH_OUT): workload, engine, path, ops, unit, ns, bound, ...
            rustFrom = "this run";
            rust.clear();
            for (String line : Files.readAllLines(Paths.get(rustTsv))) {
                String[] c = line.split("\t");
                if (c.length < 6 || !c[1].equals("component")) {
                    continue;
                }
                String key;
                if (c[0].equals("empty call")) {
                    if (!c[2].startsWith("status(), bare store") || !c[2].contains("fuel on")) {
                        continue;
                    }
                    key = "empty|" + EMPTY;
                } else {
                    key = c[0].split(" ")[0] + "|" + c[2];
                }
                rust.put(key, Double.parseDouble(c[5]));
            }
        }
        List<Row> rows = new ArrayList<>();
        for (String engineName : ENGINES) {
            Engine engine = Engine.valueOf(engineName.toUpperCase(Locale.ROOT));
            Plugin plugin = Plugin.load(engine);
            double scale = SCALE * (engine == Engine.INTERPRETER ? 0.05 : 1);
            for (String wl : List.of("W1", "W2", "W4", "empty")) {
                if (!ONLY.contains(wl)) {
                    continue;
                }
                Workload w = wl.equals("W1") ? i -> i % 1000 : wl.equals("W2") ? i -> 7 : i -> i % 100_000;
                List<String> paths = wl.equals("empty") ? List.of(EMPTY) : List.of(PER_STEP, ONE_EVENT, BATCHES);
                for (String path : paths) {
                    if (!PATHS.isEmpty() && PATHS.stream().noneMatch(path::contains)) {
                        continue;
                    }
                    long n = wl.equals("W4") ? Math.max(640, (long) (100_000 * Math.min(1, scale))) / 64 * 64
                            : Math.max(6400, (long) (600_000 * scale)) / 64 * 64;
                    long warm = wl.equals("W4") ? 0 : Math.max(6400, (long) (300_000 * scale)) / 64 * 64;
                    double[] ns = new double[RUNS];
                    for (int r = 0; r < RUNS; r++) {
                        BenchStorage storage = new BenchStorage();
                        if (wl.equals("W4")) {
                            for (long ws = 0; ws < 100_000; ws++) {
                                for (int s = 1; s <= 4; s++) {
                                    storage.view.put(BenchStorage.key(ws, s), 10L);
                                }
                            }
                        }
                        try (Sequencer seq = open(plugin, storage)) {
                            long[] ws64 = new long[64];
                            BatchNumbers batch = new BatchNumbers();
                            long from = 0;
                            if (!wl.equals("W4")) {
                                run(seq, path, w, from, 1024, ws64, batch); // the 1,000 warm-up transactions
                                from += 1024;
                                run(seq, path, w, from, warm, ws64, batch); // JIT warm-up
                                from += warm;
                            } else {
                                // W4: warm the JIT on other workspaces' numbers first, then time the cold ones
                                BenchStorage other = new BenchStorage();
                                try (Sequencer jit = open(plugin, other)) {
                                    run(jit, path, i -> 1_000_000 + i, 0, Math.max(6400, (long) (200_000 * scale)) / 64 * 64, ws64, batch);
                                }
                            }
                            ns[r] = run(seq, path, w, from, n, ws64, batch) / (double) n;
                        }
                    }
                    Arrays.sort(ns);
                    String key = wl + "|" + path;
                    double target = path.equals(PER_STEP) ? 3 : path.equals(BATCHES) ? 2 : 0;
                    rows.add(new Row(wl, engine.name().toLowerCase(Locale.ROOT), path, n, ns[RUNS / 2],
                            rust.getOrDefault(key, Double.NaN), rustFrom, target));
                    System.err.printf(Locale.ROOT, "%s %s %s: %.1f ns/op (runs %s)%n", wl, engine, path, ns[RUNS / 2],
                            Arrays.toString(Arrays.stream(ns).map(x -> Math.round(x * 10) / 10.0).toArray()));
                }
            }
        }
        System.out.println("| workload | engine | path | ops | ns/op | ops/s | Rust host ns/op (" + rustFrom
                + ") | x Rust | target | met |");
        System.out.println("|---|---|---|---:|---:|---:|---:|---:|---|---|");
        for (Row r : rows) {
            double x = r.ns / r.rust;
            String target = r.target == 0 ? "" : "<= " + (int) r.target + "x Rust";
            String met = r.target == 0 || Double.isNaN(x) ? "" : x <= r.target ? "met" : "MISSED";
            System.out.printf(Locale.ROOT, "| %s | %s | %s | %d | %.1f | %s | %s | %s | %s | %s |%n", r.workload, r.engine,
                    r.path, r.ops, r.ns, human(1e9 / r.ns), Double.isNaN(r.rust) ? "" : String.format(Locale.ROOT, "%.1f", r.rust),
                    Double.isNaN(x) ? "" : String.format(Locale.ROOT, "%.2f", x), target, met);
        }
    }

    static String human(double v) {
        return v >= 1e6 ? String.format(Locale.ROOT, "%.2fM", v / 1e6) : String.format(Locale.ROOT, "%.1fk", v / 1e3);
    }
}
