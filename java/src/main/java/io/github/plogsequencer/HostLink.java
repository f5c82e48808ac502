package io.github.plogsequencer;

import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.ImportValues;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.runtime.TrapException;
import com.dylibso.chicory.wasm.types.FunctionType;
import com.dylibso.chicory.wasm.types.ValType;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The module's imports for one instance (docs/PLUGIN.md "What a host provides"): the point
 * reads answered at once from {@link Storage}, the {@code begin-*} operations queued in
 * {@link #outbox}, the wake-up and the status kept for the caller to take in after the call,
 * and the resource intrinsics. Runs only inside a call into the module, on that call's thread.
 */
final class HostLink {
    private static final String STORAGE = "sequencer:plugin/storage@0.3.0";
    private static final String CLOCK = "sequencer:plugin/clock@0.3.0";
    private static final String OBSERVER = "sequencer:plugin/observer@0.3.0";
    private static final String API = "[export]sequencer:plugin/sequencer-api@0.3.0";

    private final Storage storage;
    private final Clock clock;
    private final long generation;
    private Guest guest;

    /** Storage work begun during the calls since the last {@link #takeOutbox}. */
    private List<Operation> outbox = new ArrayList<>();
    /** True if a {@code set-wake} came since the last take; then {@link #wakeAt} (-1: none). */
    boolean wakeChanged;
    long wakeAt = -1;
    /** The status the plugin reported last ({@code observer.status-changed}), or null. */
    volatile Status reported;

    private int rep;
    private static final int HANDLE = 1;

    HostLink(Storage storage, Clock clock, long generation) {
        this.storage = storage;
        this.clock = clock;
        this.generation = generation;
    }

    void attach(Guest guest) {
        this.guest = guest;
    }

    /** The operations begun since the last take, in the order begun (the list is handed over). */
    List<Operation> takeOutbox() {
        if (outbox.isEmpty()) {
            return List.of();
        }
        List<Operation> ops = outbox;
        outbox = new ArrayList<>();
        return ops;
    }

    boolean hasOutbox() {
        return !outbox.isEmpty();
    }

    /** The rep behind the handle {@code create} returned. */
    int repOf(int handle) {
        if (handle != HANDLE || rep == 0) {
            throw new TrapException("create returned handle " + handle + ", not the one made for it");
        }
        return rep;
    }

    ImportValues imports() {
        return ImportValues.builder()
                .addFunction(fn(STORAGE, "read-numbers", List.of(ValType.I64, ValType.I32, ValType.I32, ValType.I32),
                        List.of(), (inst, a) -> readNumbers(inst.memory(), a[0], (int) a[1], (int) a[2], (int) a[3])))
                .addFunction(fn(STORAGE, "read-numbers-many",
                        List.of(ValType.I32, ValType.I32, ValType.I32, ValType.I32, ValType.I32), List.of(),
                        (inst, a) -> readNumbersMany(inst.memory(), (int) a[0], (int) a[1], (int) a[2], (int) a[3],
                                (int) a[4])))
                .addFunction(fn(STORAGE, "begin-read-next-offset", List.of(ValType.I64), List.of(), (inst, a) -> {
                    outbox.add(Operation.readNextOffset(a[0], generation));
                    return null;
                }))
                .addFunction(fn(STORAGE, "begin-write", List.of(ValType.I64, ValType.I32, ValType.I32, ValType.I64),
                        List.of(), (inst, a) -> beginWrite(inst.memory(), a[0], (int) a[1], (int) a[2], a[3])))
                .addFunction(fn(STORAGE, "begin-read-plog", List.of(ValType.I64, ValType.I64), List.of(), (inst, a) -> {
                    outbox.add(Operation.readPlog(a[0], generation, a[1]));
                    return null;
                }))
                .addFunction(fn(CLOCK, "now", List.of(), List.of(ValType.I64), (inst, a) -> new long[] {clock.nanos()}))
                .addFunction(fn(CLOCK, "set-wake", List.of(ValType.I32, ValType.I64), List.of(), (inst, a) -> {
                    wakeChanged = true;
                    wakeAt = a[0] == 0 ? -1 : a[1];
                    return null;
                }))
                .addFunction(fn(OBSERVER, "status-changed", List.of(ValType.I32), List.of(), (inst, a) -> {
                    reported = Status.ofIndex((int) a[0]);
                    return null;
                }))
                .addFunction(fn(API, "[resource-new]sequencer", List.of(ValType.I32), List.of(ValType.I32), (inst, a) -> {
                    rep = (int) a[0];
                    return new long[] {HANDLE};
                }))
                .addFunction(fn(API, "[resource-drop]sequencer", List.of(ValType.I32), List.of(), (inst, a) -> {
                    throw new TrapException("[resource-drop]sequencer: this module never drops a handle");
                }))
                .build();
    }

    private static HostFunction fn(String module, String name, List<ValType> params, List<ValType> results,
            com.dylibso.chicory.runtime.WasmFunctionHandle handle) {
        return new HostFunction(module, name, FunctionType.of(params, results), handle);
    }

    private static int[] seqs(Memory m, int ptr, int len) {
        int[] seqs = new int[len];
        for (int i = 0; i < len; i++) {
            seqs[i] = m.readShort(ptr + i * 2) & 0xFFFF;
        }
        return seqs;
    }

    private long[] readNumbers(Memory m, long ws, int seqsPtr, int seqsLen, int ret) {
        int[] seqs = seqs(m, seqsPtr, seqsLen);
        long[] numbers;
        try {
            numbers = storage.readNumbers(ws, seqs);
        } catch (Exception e) {
            return fail(m, ret, "readNumbers failed: " + describe(e));
        }
        return answer(m, ret, numbers, "readNumbers");
    }

    private long[] readNumbersMany(Memory m, int wsPtr, int wsLen, int seqsPtr, int seqsLen, int ret) {
        long[] ws = new long[wsLen];
        for (int i = 0; i < wsLen; i++) {
            ws[i] = m.readLong(wsPtr + i * 8);
        }
        int[] seqs = seqs(m, seqsPtr, seqsLen);
        long[] numbers;
        try {
            numbers = storage.readNumbersMany(ws, seqs);
        } catch (Exception e) {
            return fail(m, ret, "readNumbersMany failed: " + describe(e));
        }
        return answer(m, ret, numbers, "readNumbersMany");
    }

    /** Writes {@code ok(numbers)} at the result area {@code ret}. */
    private long[] answer(Memory m, int ret, long[] numbers, String what) {
        if (numbers == null) {
            return fail(m, ret, what + " returned null");
        }
        int p = guest.lowerWords(numbers, numbers.length);
        m.writeByte(ret, (byte) 0);
        m.writeI32(ret + 4, p);
        m.writeI32(ret + 8, numbers.length);
        return null;
    }

    /** Writes {@code err(message)} at the result area {@code ret}. */
    private long[] fail(Memory m, int ret, String message) {
        byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
        int p = guest.alloc(1, bytes.length);
        if (bytes.length > 0) {
            m.write(p, bytes);
        }
        m.writeByte(ret, (byte) 1);
        m.writeI32(ret + 4, p);
        m.writeI32(ret + 8, bytes.length);
        return null;
    }

    private long[] beginWrite(Memory m, long op, int wordsPtr, int wordsLen, long nextOffset) {
        if (wordsLen % 3 != 0) {
            throw new TrapException("storage.begin-write: " + wordsLen + " words are not whole values of three");
        }
        List<SeqValue> values = new ArrayList<>(wordsLen / 3);
        for (int i = 0; i < wordsLen; i += 3) {
            int at = wordsPtr + i * 8;
            long seq = m.readLong(at + 8);
            if (seq < 0 || seq > 0xFFFF) {
                throw new TrapException("storage.begin-write: sequence " + Long.toUnsignedString(seq) + " is not a u16");
            }
            values.add(new SeqValue(m.readLong(at), (int) seq, m.readLong(at + 16)));
        }
        outbox.add(Operation.write(op, generation, values, nextOffset));
        return null;
    }

    static String describe(Throwable e) {
        String msg = e.getMessage();
        return e.getClass().getSimpleName() + (msg == null ? "" : ": " + msg);
    }
}
