package io.github.plogsequencer;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs one conformance scenario (guest-tests/conformance/README.md) through this package: a
 * sequencer whose storage work waits in its manual tasks until a step performs it, over the
 * scenarios' storage and a manual clock. Throws {@link StepFailed} naming the runner, the
 * scenario and the step.
 */
final class ScenarioRunner {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final long MS = 1_000_000;
    private static final Map<String, Object> DEFAULTS = Map.of("max_unflushed_values", 500, "lru_cache_size", 100000,
            "batcher_delay_ms", 5, "retry_delay_ms", 500, "max_retry_delay_ms", 500, "retry_jitter_percent", 0);
    private static final Pattern DOLLAR_I = Pattern.compile("^\\$i([+-]\\d+)?$");
    private static final Map<String, Integer> SEQ_OF_RECORD = Map.of("CDoc", 3, "CRecord", 3, "ODoc", 2, "ORecord", 2,
            "WDoc", 2, "WRecord", 2);

    /** A failed step, or a broken scenario. */
    static final class StepFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        StepFailed(String message) {
            super(message);
        }
    }

    private final String runner;
    private final Plugin plugin;
    private final String name;
    private final Map<String, Object> scenario;
    private final ScenarioStorage storage = new ScenarioStorage();
    private long now;
    private boolean hold;
    private Sequencer seq;
    private final int pageEvents;

    @SuppressWarnings("unchecked")
    ScenarioRunner(String runner, Plugin plugin, Path file) throws IOException {
        this.runner = runner;
        this.plugin = plugin;
        String fileName = file.getFileName().toString();
        this.name = fileName.substring(0, fileName.length() - ".json".length());
        this.scenario = JSON.readValue(Files.readString(file), LinkedHashMap.class);
        Map<String, Object> st = map(scenario.getOrDefault("storage", Map.of()));
        for (Object e : list(st.getOrDefault("plog", List.of()))) {
            List<Object> ev = list(e);
            storage.plog.put(num(ev.get(0)), values(ev.get(1)));
        }
        for (Object e : list(st.getOrDefault("plog_events", List.of()))) {
            Map.Entry<Long, List<SeqValue>> ev = eventValues(map(e));
            if (storage.plog.containsKey(ev.getKey())) {
                throw new StepFailed(where() + ": two PLog events at offset " + ev.getKey());
            }
            storage.plog.put(ev.getKey(), ev.getValue());
        }
        for (Object r : list(st.getOrDefault("view", List.of()))) {
            List<Object> row = list(r);
            storage.view.put(List.of(num(row.get(0)), num(row.get(1))), num(row.get(2)));
        }
        storage.nextOffset = num(st.getOrDefault("next_offset", 0));
        this.pageEvents = (int) num(scenario.getOrDefault("page_events", 100));
    }

    private String where() {
        return "[" + runner + "] scenario " + name;
    }

    void run() {
        List<Object> steps = list(scenario.get("steps"));
        for (int i = 0; i < steps.size(); i++) {
            step(map(steps.get(i)), "steps[" + i + "]");
        }
    }

    private void step(Map<String, Object> step, String at) {
        if (step.containsKey("repeat")) {
            long n = num(step.get("repeat"));
            List<Object> inner = list(step.get("steps"));
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < inner.size(); j++) {
                    step(map(subst(inner.get(j), i)), at + "[i=" + i + "].steps[" + j + "]");
                }
            }
            return;
        }
        try {
            doStep(step);
        } catch (StepFailed e) {
            throw new StepFailed(where() + ", " + at + " " + compact(step) + ": " + e.getMessage());
        } catch (RuntimeException e) {
            StepFailed f = new StepFailed(where() + ", " + at + " " + compact(step) + ": " + e);
            f.initCause(e);
            throw f;
        }
    }

    private void doStep(Map<String, Object> step) {
        if (step.containsKey("call")) {
            Object got;
            try {
                got = call(step);
            } catch (SequencerException e) {
                if (!step.containsKey("expect_error")) {
                    throw new StepFailed("refused: " + e.getMessage());
                }
                if (!e.code().witName().equals(step.get("expect_error"))) {
                    throw new StepFailed("expected error " + step.get("expect_error") + ", got " + e.getMessage());
                }
                return;
            }
            if (step.containsKey("expect_error")) {
                throw new StepFailed("expected error " + step.get("expect_error") + ", got success " + compact(got));
            }
            if (step.containsKey("expect")) {
                Object want = step.get("expect");
                String call = (String) step.get("call");
                if (call.equals("held_numbers") || call.equals("system_params")) {
                    Map<String, Object> all = map(got);
                    Map<String, Object> picked = new LinkedHashMap<>();
                    for (String k : map(want).keySet()) {
                        picked.put(k, all.get(k));
                    }
                    got = picked;
                }
                if (!same(want, got)) {
                    throw new StepFailed("expected " + compact(want) + ", got " + compact(got));
                }
            }
        } else if (step.containsKey("run")) {
            if (!"tasks".equals(step.get("run"))) {
                throw new StepFailed("unknown run " + step.get("run"));
            }
            runTasks(step);
        } else if (step.containsKey("advance_ms")) {
            now += num(step.get("advance_ms")) * MS;
            ManualTasks t = seq == null ? null : seq.manualTasks();
            if (t != null && t.wakeAt() >= 0 && now >= t.wakeAt()) {
                t.wake(-1);
                seq.pump();
            }
        } else if (step.containsKey("hold_writes")) {
            hold = Boolean.TRUE.equals(step.get("hold_writes"));
        } else if (step.containsKey("fault")) {
            map(step.get("fault")).forEach((k, v) -> {
                int n = (int) num(v);
                switch (k) {
                    case "fail_writes":
                        storage.failWrites = n;
                        break;
                    case "fail_reads":
                        storage.failReads = n;
                        break;
                    case "fail_number_reads":
                        storage.failNumberReads = n;
                        break;
                    default:
                        throw new StepFailed("unknown fault " + k);
                }
            });
        } else if (step.containsKey("append") || step.containsKey("append_event")) {
            Map.Entry<Long, List<SeqValue>> ev;
            if (step.containsKey("append")) {
                List<Object> a = list(step.get("append"));
                ev = Map.entry(num(a.get(0)), values(a.get(1)));
            } else {
                ev = eventValues(map(step.get("append_event")));
            }
            if (ev.getKey() != storage.plogNext()) {
                throw new StepFailed("append at " + ev.getKey() + ": the PLog's next offset is " + storage.plogNext());
            }
            storage.plog.put(ev.getKey(), ev.getValue());
        } else if (step.containsKey("expect_storage")) {
            expectStorage(map(step.get("expect_storage")));
        } else if (step.containsKey("expect_pending")) {
            expectPending(list(step.get("expect_pending")));
        } else if (step.containsKey("expect_wake_ms")) {
            Object got = wakeMs();
            Object want = step.get("expect_wake_ms");
            if (!same(want, got)) {
                throw new StepFailed("expected wake at " + want + " ms, got " + got);
            }
        } else if (step.containsKey("expect_wake_within_ms")) {
            List<Object> r = list(step.get("expect_wake_within_ms"));
            Double got = wakeMs();
            double lo = ((Number) r.get(0)).doubleValue();
            double hi = ((Number) r.get(1)).doubleValue();
            if (got == null || got < lo || got > hi) {
                throw new StepFailed("expected a wake-up within [" + lo + ", " + hi + "] ms, got " + got);
            }
        } else {
            throw new StepFailed("unknown step");
        }
    }

    private Double wakeMs() {
        ManualTasks t = seq == null ? null : seq.manualTasks();
        return t == null || t.wakeAt() < 0 ? null : t.wakeAt() / (double) MS;
    }

    // ---- calls ---------------------------------------------------------------------------------

    private Object call(Map<String, Object> step) {
        String call = (String) step.get("call");
        if (call.equals("create")) {
            seq = null;
            Map<String, Object> p = map(step.containsKey("params") ? step.get("params")
                    : scenario.getOrDefault("params", Map.of()));
            Params params = params(p);
            if (Boolean.TRUE.equals(p.get("system"))) {
                params = plugin.systemParams(params);
            }
            SequencerOptions options = SequencerOptions.builder().manualTasks().clock(() -> now).pageEvents(pageEvents)
                    .build();
            seq = plugin.open(params, storage, options);
            return null;
        }
        if (call.equals("system_params")) {
            return scenarioParams(plugin.systemParams(params(map(step.get("params")))));
        }
        if (seq == null) {
            throw new StepFailed("no sequencer: a successful `create` step must come first");
        }
        switch (call) {
            case "start": {
                long offset = seq.start(kind(step), num(step.get("ws")));
                return offset == Sequencer.NOT_NOW ? Map.of("not_now", reason(seq.notNowReason()))
                        : Map.of("started", offset);
            }
            case "start_next": {
                List<Object> seqs = list(step.get("seqs"));
                int[] s = new int[seqs.size()];
                for (int i = 0; i < s.length; i++) {
                    s[i] = (int) num(seqs.get(i));
                }
                long[] numbers = new long[4];
                long offset = seq.startNext(kind(step), num(step.get("ws")), SeqQuad.of(s), numbers);
                Map<String, Object> r = new LinkedHashMap<>();
                List<Long> ns = new ArrayList<>();
                if (offset == Sequencer.NOT_NOW) {
                    r.put("not_now", reason(seq.notNowReason()));
                } else {
                    r.put("started", offset);
                    for (int i = 0; i < s.length; i++) {
                        ns.add(numbers[i]);
                    }
                }
                r.put("numbers", ns);
                return r;
            }
            case "next":
                return seq.next((int) num(step.get("seq")));
            case "flush":
                seq.flush();
                return null;
            case "actualize":
                seq.actualize();
                return null;
            case "cleanup":
                seq.cleanupByHand();
                return null;
            case "pump":
                seq.manualTasks().wake(-1);
                seq.pump();
                return null;
            case "status":
                return seq.status().name().toLowerCase().replace('_', '-');
            case "held_numbers": {
                HeldNumbers h = seq.heldNumbers();
                return Map.of("cached", h.cached(), "unflushed", h.unflushed(), "transaction", h.transaction());
            }
            case "deliver":
                deliver(num(step.get("op")), step.get("outcome"));
                return null;
            case "start_event": {
                EventOffsets e = seq.startEvent(num(step.get("ws")));
                return e == null ? Map.of("not_now", reason(seq.notNowReason()))
                        : Map.of("started", Map.of("plog", e.plogOffset(), "wlog", e.wlogOffset()));
            }
            case "next_rec_id":
                return seq.nextRecId();
            case "next_c_rec_id":
                return seq.nextCRecId();
            case "finish_event":
                seq.finishEvent();
                return null;
            case "cancel_event":
                seq.cancelEvent();
                return null;
            case "event_status":
                return seq.eventStatus().name().toLowerCase();
            default:
                throw new StepFailed("unknown call \"" + call + "\"");
        }
    }

    private void deliver(long op, Object outcome) {
        seq.manualTasks().pending().removeIf(o -> o.op == op);
        if ("written".equals(outcome)) {
            seq.deliverByHand(op, Outcome.WRITTEN);
            return;
        }
        Map<String, Object> o = map(outcome);
        if (o.containsKey("next_offset")) {
            seq.deliverByHand(op, Outcome.nextOffset(num(o.get("next_offset"))));
        } else if (o.containsKey("failed")) {
            seq.deliverByHand(op, Outcome.failed((String) o.get("failed")));
        } else if (o.containsKey("plog_page")) {
            Map<String, Object> page = map(o.get("plog_page"));
            List<Object> values = list(page.get("values"));
            long[] words = new long[values.size() * 4];
            for (int i = 0; i < values.size(); i++) {
                List<Object> v = list(values.get(i));
                for (int j = 0; j < 4; j++) {
                    words[i * 4 + j] = num(v.get(j));
                }
            }
            seq.deliverPageByHand(op, words, num(page.get("next")), Boolean.TRUE.equals(page.get("end")));
        } else {
            throw new StepFailed("unknown outcome " + compact(outcome));
        }
    }

    private static String reason(NotNowReason r) {
        return r == NotNowReason.ACTUALIZING ? "actualizing" : "too-many-unflushed";
    }

    private static int kind(Map<String, Object> step) {
        return (int) num(step.get("kind"));
    }

    // ---- the tasks -----------------------------------------------------------------------------

    /** The first queued operation that may run: writes wait while held, and a read-next-offset never overtakes a queued write. */
    private Operation runnable(List<Operation> queue) {
        for (int i = 0; i < queue.size(); i++) {
            Operation op = queue.get(i);
            if (op.kind == Operation.Kind.WRITE && hold) {
                continue;
            }
            if (op.kind == Operation.Kind.READ_NEXT_OFFSET
                    && queue.subList(0, i).stream().anyMatch(q -> q.kind == Operation.Kind.WRITE)) {
                continue;
            }
            return op;
        }
        return null;
    }

    private void runTasks(Map<String, Object> step) {
        long max = step.containsKey("max") ? num(step.get("max")) : Long.MAX_VALUE;
        long performed = 0;
        while (seq != null && performed < max) {
            Operation op = runnable(seq.manualTasks().pending());
            if (op == null) {
                break;
            }
            try {
                seq.perform(op);
            } catch (SequencerException e) {
                throw new StepFailed("deliver of " + op.kind.witName + " op " + op.op + " was refused: " + e.getMessage());
            }
            performed++;
        }
        if (step.containsKey("expect_performed") && performed != num(step.get("expect_performed"))) {
            throw new StepFailed("expected " + step.get("expect_performed") + " operations performed, got " + performed);
        }
    }

    // ---- checks --------------------------------------------------------------------------------

    private void expectStorage(Map<String, Object> want) {
        for (Map.Entry<String, Object> e : want.entrySet()) {
            Object got;
            Object value = e.getValue();
            switch (e.getKey()) {
                case "view": {
                    List<List<Long>> rows = new ArrayList<>();
                    storage.view.forEach((k, v) -> rows.add(List.of(k.get(0), k.get(1), v)));
                    got = sortRows(rows);
                    value = sortRows(rowsOf(value));
                    break;
                }
                case "next_offset":
                    got = storage.nextOffset;
                    break;
                case "writes":
                    got = storage.writes;
                    break;
                case "plog_next":
                    got = storage.plogNext();
                    break;
                case "consistent": {
                    boolean ok = true;
                    for (Map.Entry<Long, List<SeqValue>> ev : storage.plog.entrySet()) {
                        if (ev.getKey() >= storage.nextOffset) {
                            continue;
                        }
                        for (SeqValue v : ev.getValue()) {
                            ok &= storage.number(v.ws(), v.seq()) >= v.value();
                        }
                    }
                    got = ok;
                    break;
                }
                default:
                    throw new StepFailed("unknown storage check " + e.getKey());
            }
            if (!same(value, got)) {
                throw new StepFailed("storage " + e.getKey() + ": expected " + compact(value) + ", got " + compact(got));
            }
        }
    }

    private void expectPending(List<Object> want) {
        List<Map<String, Object>> got = new ArrayList<>();
        if (seq != null) {
            for (Operation op : seq.manualTasks().pending()) {
                Map<String, Object> e = new LinkedHashMap<>();
                e.put("kind", op.kind.witName);
                e.put("op", op.op);
                if (op.kind == Operation.Kind.WRITE) {
                    List<List<Long>> rows = new ArrayList<>();
                    for (SeqValue v : op.values) {
                        rows.add(List.of(v.ws(), (long) v.seq(), v.value()));
                    }
                    e.put("values", sortRows(rows));
                    e.put("next_offset", op.nextOffset);
                } else if (op.kind == Operation.Kind.READ_PLOG) {
                    e.put("first", op.first);
                }
                got.add(e);
            }
        }
        boolean ok = got.size() == want.size();
        for (int i = 0; ok && i < want.size(); i++) {
            for (Map.Entry<String, Object> w : map(want.get(i)).entrySet()) {
                Object v = w.getKey().equals("values") ? sortRows(rowsOf(w.getValue())) : w.getValue();
                ok &= same(v, got.get(i).get(w.getKey()));
            }
        }
        if (!ok) {
            throw new StepFailed("expected pending " + compact(want) + ", got " + compact(got));
        }
    }

    // ---- scenario forms ------------------------------------------------------------------------

    private static Params params(Map<String, Object> given) {
        Map<String, Object> p = new TreeMap<>(DEFAULTS);
        p.putAll(given);
        Params.Builder b = Params.builder();
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (Object k : list(p.getOrDefault("kinds", List.of()))) {
            List<Object> kind = list(k);
            long id = num(kind.get(0));
            if (!seen.add(id)) {
                throw new StepFailed("kind " + id + " is given twice");
            }
            b.kind((int) id);
            for (Object s : list(kind.get(1))) {
                List<Object> seqInit = list(s);
                b.seqType((int) id, (int) num(seqInit.get(0)), num(seqInit.get(1)));
            }
        }
        return b.maxNumUnflushedValues(num(p.get("max_unflushed_values")))
                .lruCacheSize(num(p.get("lru_cache_size")))
                .batcherDelayOnToBeFlushedOverflow(java.time.Duration.ofNanos(num(p.get("batcher_delay_ms")) * MS))
                .retryDelay(java.time.Duration.ofNanos(num(p.get("retry_delay_ms")) * MS))
                .maxRetryDelay(java.time.Duration.ofNanos(num(p.get("max_retry_delay_ms")) * MS))
                .retryJitterPercent((int) num(p.get("retry_jitter_percent")))
                .build();
    }

    private static Map<String, Object> scenarioParams(Params p) {
        Map<String, Object> out = new LinkedHashMap<>();
        List<Object> kinds = new ArrayList<>();
        p.seqTypes().forEach((k, seqs) -> {
            List<Object> rows = new ArrayList<>();
            seqs.forEach((s, first) -> rows.add(List.of((long) s, first)));
            kinds.add(List.of((long) k, rows));
        });
        out.put("kinds", kinds);
        out.put("max_unflushed_values", (long) p.maxNumUnflushedValues());
        out.put("lru_cache_size", (long) p.lruCacheSize());
        out.put("batcher_delay_ms", p.batcherDelayOnToBeFlushedOverflow().toNanos() / MS);
        out.put("retry_delay_ms", p.retryDelay().toNanos() / MS);
        out.put("max_retry_delay_ms", p.maxRetryDelay().toNanos() / MS);
        out.put("retry_jitter_percent", (long) p.retryJitterPercent());
        return out;
    }

    private static List<SeqValue> values(Object rows) {
        List<SeqValue> out = new ArrayList<>();
        for (Object r : list(rows)) {
            List<Object> v = list(r);
            out.add(new SeqValue(num(v.get(0)), (int) num(v.get(1)), num(v.get(2))));
        }
        return out;
    }

    /** The storage adapter's half of the facade: a platform event's offset and sequence values. */
    private static Map.Entry<Long, List<SeqValue>> eventValues(Map<String, Object> e) {
        long ws = num(e.get("ws"));
        List<SeqValue> values = new ArrayList<>();
        values.add(new SeqValue(ws, 1, num(e.get("wlog"))));
        for (Object r : list(e.getOrDefault("records", List.of()))) {
            List<Object> rec = list(r);
            Integer seq = SEQ_OF_RECORD.get((String) rec.get(0));
            if (seq == null) {
                throw new StepFailed("unknown record kind \"" + rec.get(0) + "\"");
            }
            values.add(new SeqValue(ws, seq, num(rec.get(1))));
        }
        Deque<Map<String, Object>> stack = new ArrayDeque<>();
        if (e.containsKey("argument")) {
            stack.push(map(e.get("argument")));
        }
        while (!stack.isEmpty()) {
            Map<String, Object> obj = stack.pop();
            values.add(new SeqValue(ws, 2, num(obj.get("id"))));
            for (Object c : list(obj.getOrDefault("children", List.of()))) {
                stack.push(map(c));
            }
        }
        return Map.entry(num(e.get("offset")), values);
    }

    // ---- JSON helpers --------------------------------------------------------------------------

    private static Object subst(Object value, int i) {
        if (value instanceof String) {
            Matcher m = DOLLAR_I.matcher((String) value);
            return m.matches() ? (long) i + (m.group(1) == null ? 0 : Long.parseLong(m.group(1))) : value;
        }
        if (value instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object v : (List<?>) value) {
                out.add(subst(v, i));
            }
            return out;
        }
        if (value instanceof Map) {
            Map<String, Object> out = new LinkedHashMap<>();
            ((Map<?, ?>) value).forEach((k, v) -> out.put((String) k, subst(v, i)));
            return out;
        }
        return value;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    private static long num(Object o) {
        if (!(o instanceof Number)) {
            throw new StepFailed("expected a number, got " + compact(o));
        }
        return ((Number) o).longValue();
    }

    private static List<List<Long>> rowsOf(Object rows) {
        List<List<Long>> out = new ArrayList<>();
        for (Object r : list(rows)) {
            List<Long> row = new ArrayList<>();
            for (Object v : list(r)) {
                row.add(num(v));
            }
            out.add(row);
        }
        return out;
    }

    private static List<List<Long>> sortRows(List<List<Long>> rows) {
        List<List<Long>> out = new ArrayList<>(rows);
        out.sort(Comparator.<List<Long>, Long>comparing(r -> r.get(0)).thenComparing(r -> r.get(1))
                .thenComparing(r -> r.get(2)));
        return out;
    }

    /** Deep equality of JSON-like values, numbers compared by value. */
    static boolean same(Object a, Object b) {
        if (a instanceof Number && b instanceof Number) {
            Number x = (Number) a;
            Number y = (Number) b;
            if (x instanceof Double || y instanceof Double || x instanceof Float || y instanceof Float) {
                return x.doubleValue() == y.doubleValue();
            }
            return x.longValue() == y.longValue();
        }
        if (a instanceof List && b instanceof List) {
            List<?> x = (List<?>) a;
            List<?> y = (List<?>) b;
            if (x.size() != y.size()) {
                return false;
            }
            for (int i = 0; i < x.size(); i++) {
                if (!same(x.get(i), y.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof Map && b instanceof Map) {
            Map<?, ?> x = (Map<?, ?>) a;
            Map<?, ?> y = (Map<?, ?>) b;
            if (!x.keySet().equals(y.keySet())) {
                return false;
            }
            for (Object k : x.keySet()) {
                if (!same(x.get(k), y.get(k))) {
                    return false;
                }
            }
            return true;
        }
        return a == null ? b == null : a.equals(b);
    }

    static String compact(Object o) {
        try {
            return JSON.writeValueAsString(o);
        } catch (IOException e) {
            return String.valueOf(o);
        }
    }
}
