package io.github.plogsequencer;

import com.dylibso.chicory.runtime.ExportFunction;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Memory;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * One instance of the core module and its sequencer: the WIT calls as Java methods, by the
 * module's canonical-ABI layout (docs/PLUGIN.md "The core module"). It only converts: it
 * lowers arguments, reads results straight from the return area in memory and calls the
 * post-return functions. A refusal becomes a {@link SequencerException}; a trap escapes as the
 * runtime's exception, for the caller to turn into a {@link TrappedException}.
 *
 * <p>Results with more than one part land in the result registers below (allocation-free); a
 * call's registers are good until the next call. Not thread-safe: one call at a time, never
 * from inside an import.
 */
final class Guest {
    private static final String API = "sequencer:plugin/sequencer-api@0.3.0#";
    private static final String INSTANCE = "sequencer:plugin/instance@0.3.0#";
    private static final String EVENTS = "sequencer:plugin/events@0.3.0#";

    private final Instance instance;
    private final Memory memory;
    private final HostLink host;

    private final ExportFunction realloc;
    private final ExportFunction create;
    private final ExportFunction postCreate;
    private final ExportFunction dtor;
    private final ExportFunction iStart;
    private final ExportFunction iNext;
    private final ExportFunction iFlush;
    private final ExportFunction iFlushStatus;
    private final ExportFunction iActualize;
    private final ExportFunction iCleanup;
    private final ExportFunction iStatus;
    private final ExportFunction iHeldNumbers;
    private final ExportFunction iDeliver;
    private final ExportFunction iDeliverPlogWords;
    private final ExportFunction iPump;
    private final ExportFunction iStartNextQuad;
    private final ExportFunction iFlushStartNextQuad;
    private final ExportFunction iStage;
    private final ExportFunction iStartBatch;
    private final ExportFunction iPostStartBatch;
    private final ExportFunction iFlushStartBatch;
    private final ExportFunction iPostFlushStartBatch;
    private final ExportFunction iStartAhead;
    private final ExportFunction iTake;
    private final ExportFunction iTakeNext;
    private final ExportFunction iTakeFlush;
    private final ExportFunction iTakeFlushStartAhead;
    private final ExportFunction iLastError;
    private final ExportFunction iPostLastError;
    private final ExportFunction eSystemParams;
    private final ExportFunction ePostSystemParams;
    private final ExportFunction eStartEventAhead;
    private final ExportFunction ePostStartEventAhead;
    private final ExportFunction eTakeFlushStartEventAhead;
    private final ExportFunction ePostTakeFlushStartEventAhead;
    private final ExportFunction eNextRecId;
    private final ExportFunction ePostNextRecId;
    private final ExportFunction eNextCRecId;
    private final ExportFunction ePostNextCRecId;
    private final ExportFunction eFinishEvent;
    private final ExportFunction ePostFinishEvent;
    private final ExportFunction eCancelEvent;
    private final ExportFunction ePostCancelEvent;
    private final ExportFunction eStatus;

    // Argument arrays, one per arity, reused call after call (the runtime keeps none of them).
    private final long[] a0 = new long[0];
    private final long[] a1 = new long[1];
    private final long[] a2 = new long[2];
    private final long[] a4 = new long[4];
    private final long[] a5 = new long[5];
    private final long[] a6 = new long[6];
    private final long[] a7 = new long[7];
    private final long[] a8 = new long[8];
    private final long[] a12 = new long[12];

    /** The sequencer's rep (what a {@code borrow<sequencer>} takes), 0 before {@link #create}. */
    private int rep;

    // ---- result registers --------------------------------------------------------------------
    /** Why the last start said "not now" (when it answered 0). */
    NotNowReason notNow;
    /** The status the last start-ahead, take-flush or flush-status left. */
    Status status;
    /** The numbers ahead or the quad numbers of the last call that gives them. */
    final long[] numbers = new long[4];
    /** The WLog offset of the last event started. */
    long wlogOffset;

    Guest(Instance instance, HostLink host) {
        this.instance = instance;
        this.memory = instance.memory();
        this.host = host;
        this.realloc = fn("cabi_realloc");
        this.create = fn(API + "[static]sequencer.create");
        this.postCreate = fn("cabi_post_" + API + "[static]sequencer.create");
        this.dtor = fn(API + "[dtor]sequencer");
        this.iStart = fn(INSTANCE + "start");
        this.iNext = fn(INSTANCE + "next");
        this.iFlush = fn(INSTANCE + "flush");
        this.iFlushStatus = fn(INSTANCE + "flush-status");
        this.iActualize = fn(INSTANCE + "actualize");
        this.iCleanup = fn(INSTANCE + "cleanup");
        this.iStatus = fn(INSTANCE + "status");
        this.iHeldNumbers = fn(INSTANCE + "held-numbers");
        this.iDeliver = fn(INSTANCE + "deliver");
        this.iDeliverPlogWords = fn(INSTANCE + "deliver-plog-words");
        this.iPump = fn(INSTANCE + "pump");
        this.iStartNextQuad = fn(INSTANCE + "start-next-quad");
        this.iFlushStartNextQuad = fn(INSTANCE + "flush-start-next-quad");
        this.iStage = fn(INSTANCE + "stage");
        this.iStartBatch = fn(INSTANCE + "start-batch");
        this.iPostStartBatch = fn("cabi_post_" + INSTANCE + "start-batch");
        this.iFlushStartBatch = fn(INSTANCE + "flush-start-batch");
        this.iPostFlushStartBatch = fn("cabi_post_" + INSTANCE + "flush-start-batch");
        this.iStartAhead = fn(INSTANCE + "start-ahead");
        this.iTake = fn(INSTANCE + "take");
        this.iTakeNext = fn(INSTANCE + "take-next");
        this.iTakeFlush = fn(INSTANCE + "take-flush");
        this.iTakeFlushStartAhead = fn(INSTANCE + "take-flush-start-ahead");
        this.iLastError = fn(INSTANCE + "last-error");
        this.iPostLastError = fn("cabi_post_" + INSTANCE + "last-error");
        this.eSystemParams = fn(EVENTS + "system-params");
        this.ePostSystemParams = fn("cabi_post_" + EVENTS + "system-params");
        this.eStartEventAhead = fn(EVENTS + "start-event-ahead");
        this.ePostStartEventAhead = fn("cabi_post_" + EVENTS + "start-event-ahead");
        this.eTakeFlushStartEventAhead = fn(EVENTS + "take-flush-start-event-ahead");
        this.ePostTakeFlushStartEventAhead = fn("cabi_post_" + EVENTS + "take-flush-start-event-ahead");
        this.eNextRecId = fn(EVENTS + "next-rec-id");
        this.ePostNextRecId = fn("cabi_post_" + EVENTS + "next-rec-id");
        this.eNextCRecId = fn(EVENTS + "next-c-rec-id");
        this.ePostNextCRecId = fn("cabi_post_" + EVENTS + "next-c-rec-id");
        this.eFinishEvent = fn(EVENTS + "finish-event");
        this.ePostFinishEvent = fn("cabi_post_" + EVENTS + "finish-event");
        this.eCancelEvent = fn(EVENTS + "cancel-event");
        this.ePostCancelEvent = fn("cabi_post_" + EVENTS + "cancel-event");
        this.eStatus = fn(EVENTS + "status");
    }

    private ExportFunction fn(String name) {
        return instance.export(name);
    }

    // ---- lowering ----------------------------------------------------------------------------

    /** Allocates {@code bytes} in the module ({@code cabi_realloc(0, 0, align, bytes)}). */
    int alloc(int align, int bytes) {
        if (bytes == 0) {
            return align; // an aligned, never-read pointer: a list of length 0 needs no call
        }
        long[] a = a4;
        a[0] = 0;
        a[1] = 0;
        a[2] = align;
        a[3] = bytes;
        int p = (int) realloc.apply(a)[0];
        if (p == 0) {
            throw new IllegalStateException("cabi_realloc returned null for " + bytes + " bytes");
        }
        return p;
    }

    /** A {@code list<u64>} of {@code words[0..len)} in the module: its pointer. */
    int lowerWords(long[] words, int len) {
        int p = alloc(8, len * 8);
        for (int i = 0; i < len; i++) {
            memory.writeLong(p + i * 8, words[i]);
        }
        return p;
    }

    /** A UTF-8 string in the module: its pointer, length in {@code strLen}. */
    private int strLen;

    private int lowerString(String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        int p = alloc(1, bytes.length);
        if (bytes.length > 0) {
            memory.write(p, bytes);
        }
        strLen = bytes.length;
        return p;
    }

    /** Writes params' eight flat parameters into {@code a[from..from+8)} (lowering its kinds list). */
    private void lowerParams(Params p, long[] a, int from) {
        Map<Integer, Map<Integer, Long>> kinds = p.seqTypes();
        int kindsPtr = alloc(4, kinds.size() * 12);
        int i = 0;
        for (Map.Entry<Integer, Map<Integer, Long>> k : kinds.entrySet()) {
            Map<Integer, Long> seqs = k.getValue();
            int seqsPtr = alloc(8, seqs.size() * 16);
            int j = 0;
            for (Map.Entry<Integer, Long> s : seqs.entrySet()) {
                memory.writeShort(seqsPtr + j * 16, (short) (int) s.getKey());
                memory.writeLong(seqsPtr + j * 16 + 8, s.getValue());
                j++;
            }
            int at = kindsPtr + i * 12;
            memory.writeShort(at, (short) (int) k.getKey());
            memory.writeI32(at + 4, seqsPtr);
            memory.writeI32(at + 8, seqs.size());
            i++;
        }
        a[from] = kindsPtr;
        a[from + 1] = kinds.size();
        a[from + 2] = p.maxNumUnflushedValues();
        a[from + 3] = p.lruCacheSize();
        a[from + 4] = p.batcherDelayOnToBeFlushedOverflow().toNanos();
        a[from + 5] = p.retryDelay().toNanos();
        a[from + 6] = p.maxRetryDelay().toNanos();
        a[from + 7] = p.retryJitterPercent();
    }

    private static void quad(long[] a, int from, SeqQuad q) {
        a[from] = q.count();
        a[from + 1] = q.slot(0);
        a[from + 2] = q.slot(1);
        a[from + 3] = q.slot(2);
        a[from + 4] = q.slot(3);
    }

    private static void taken(long[] a, int from, Ahead.Taken t) {
        a[from] = t.count;
        a[from + 1] = t.s0;
        a[from + 2] = t.s1;
        a[from + 3] = t.s2;
        a[from + 4] = t.s3;
    }

    // ---- lifting -----------------------------------------------------------------------------

    private int u8(int addr) {
        return memory.read(addr) & 0xFF;
    }

    private int u16(int addr) {
        return memory.readShort(addr) & 0xFFFF;
    }

    private String string(int addr) {
        int ptr = memory.readInt(addr);
        int len = memory.readInt(addr + 4);
        return len == 0 ? "" : new String(memory.readBytes(ptr, len), StandardCharsets.UTF_8);
    }

    /** The {@code error} variant at {@code addr} as an exception. */
    private SequencerException error(int addr) {
        ErrorCode code = ErrorCode.ofIndex(u8(addr));
        Object detail;
        switch (code) {
            case INVALID_PARAMS:
            case MALFORMED_NUMBERS:
            case MALFORMED_PLOG_PAGE:
            case STORAGE:
                detail = string(addr + 8);
                break;
            case UNKNOWN_WS_KIND:
                detail = u16(addr + 8);
                break;
            case UNKNOWN_SEQ_ID:
            case SEQUENCE_EXHAUSTED:
                detail = new SeqRef(u16(addr + 8), u16(addr + 10));
                break;
            case UNKNOWN_OPERATION:
            case WRONG_OUTCOME:
                detail = memory.readLong(addr + 8);
                break;
            default:
                detail = null;
        }
        return new SequencerException(code, detail);
    }

    /** A refused {@code instance} call: its full error, from {@code last-error}. */
    private SequencerException refused(int refusal) {
        int p = (int) iLastError.apply(a0)[0];
        SequencerException e;
        if (u8(p) == 1) {
            e = error(p + 8);
        } else {
            e = new SequencerException(ErrorCode.ofIndex(refusal), null);
        }
        a1[0] = p;
        iPostLastError.apply(a1);
        return e;
    }

    /** Checks a {@code result<_, refusal>} (or one whose T is one byte) at {@code p}. */
    private void checkShort(int p) {
        if (memory.read(p) != 0) {
            throw refused(u8(p + 1));
        }
    }

    /** Checks a {@code result<T, refusal>} whose T is 8-aligned, at {@code p}. */
    private void checkLong(int p) {
        if (memory.read(p) != 0) {
            throw refused(u8(p + 8));
        }
    }

    /** Checks a {@code result<T, error>} at {@code p}; on error posts it first with {@code post}. */
    private void checkError(int p, ExportFunction post) {
        if (memory.read(p) != 0) {
            SequencerException e = error(p + 8);
            a1[0] = p;
            post.apply(a1);
            throw e;
        }
    }

    /** A start-outcome at {@code p}: the offset, or 0 with {@link #notNow} set. */
    private long outcome(int p) {
        if (memory.read(p) == 0) {
            notNow = null;
            return memory.readLong(p + 8);
        }
        notNow = NotNowReason.ofIndex(u8(p + 8));
        return 0;
    }

    private void readNumbers(int p) {
        numbers[0] = memory.readLong(p);
        numbers[1] = memory.readLong(p + 8);
        numbers[2] = memory.readLong(p + 16);
        numbers[3] = memory.readLong(p + 24);
    }

    // ---- the sequencer -----------------------------------------------------------------------

    /** {@code [static]sequencer.create}: the instance's sequencer (it begins actualizing). */
    void create(Params params) {
        long[] a = a8;
        lowerParams(params, a, 0);
        int p = (int) create.apply(a)[0];
        checkError(p, postCreate);
        int handle = memory.readInt(p + 8);
        a1[0] = p;
        postCreate.apply(a1);
        rep = host.repOf(handle);
    }

    /** {@code [dtor]sequencer}: drops the sequencer (later instance calls are refused). */
    void drop() {
        if (rep != 0) {
            a1[0] = rep;
            rep = 0;
            dtor.apply(a1);
        }
    }

    /** {@code events.system-params}: {@code base} with the system sequences (needs no sequencer). */
    Params systemParams(Params base) {
        long[] a = a8;
        lowerParams(base, a, 0);
        int p = (int) eSystemParams.apply(a)[0];
        Params.Builder b = Params.builder();
        int kindsPtr = memory.readInt(p);
        int kinds = memory.readInt(p + 4);
        for (int i = 0; i < kinds; i++) {
            int at = kindsPtr + i * 12;
            int kind = u16(at);
            b.kind(kind);
            int seqsPtr = memory.readInt(at + 4);
            int seqs = memory.readInt(at + 8);
            for (int j = 0; j < seqs; j++) {
                b.seqType(kind, u16(seqsPtr + j * 16), memory.readLong(seqsPtr + j * 16 + 8));
            }
        }
        b.maxNumUnflushedValues(Integer.toUnsignedLong(memory.readInt(p + 8)));
        b.lruCacheSize(Integer.toUnsignedLong(memory.readInt(p + 12)));
        b.batcherDelayOnToBeFlushedOverflow(java.time.Duration.ofNanos(memory.readLong(p + 16)));
        b.retryDelay(java.time.Duration.ofNanos(memory.readLong(p + 24)));
        b.maxRetryDelay(java.time.Duration.ofNanos(memory.readLong(p + 32)));
        b.retryJitterPercent(u8(p + 40));
        a1[0] = p;
        ePostSystemParams.apply(a1);
        return b.build();
    }

    /** {@code start}: the offset, or 0 ("not now", the reason in {@link #notNow}). */
    long start(int kind, long ws) {
        long[] a = a2;
        a[0] = kind;
        a[1] = ws;
        int p = (int) iStart.apply(a)[0];
        checkLong(p);
        return outcome(p + 8);
    }

    /** {@code next}. */
    long next(int seq) {
        a1[0] = seq;
        int p = (int) iNext.apply(a1)[0];
        checkLong(p);
        return memory.readLong(p + 8);
    }

    /** {@code flush}. */
    void flush() {
        checkShort((int) iFlush.apply(a0)[0]);
    }

    /** {@code flush-status}: the status after it, also in {@link #status}. */
    Status flushStatus() {
        int p = (int) iFlushStatus.apply(a0)[0];
        checkShort(p);
        return status = Status.ofIndex(u8(p + 1));
    }

    /** {@code actualize}. */
    void actualize() {
        checkShort((int) iActualize.apply(a0)[0]);
    }

    /** {@code cleanup}. */
    void cleanup() {
        iCleanup.apply(a0);
    }

    /** {@code status}. */
    Status guestStatus() {
        return Status.ofIndex((int) iStatus.apply(a0)[0]);
    }

    /** {@code held-numbers}. */
    HeldNumbers heldNumbers() {
        int p = (int) iHeldNumbers.apply(a0)[0];
        return new HeldNumbers(Integer.toUnsignedLong(memory.readInt(p)), Integer.toUnsignedLong(memory.readInt(p + 4)),
                Integer.toUnsignedLong(memory.readInt(p + 8)));
    }

    /** {@code pump}. */
    void pump() {
        iPump.apply(a0);
    }

    /** {@code deliver(op, written)}. */
    void deliverWritten(long op) {
        deliver(op, 0, 0, 0, 0, 0);
    }

    /** {@code deliver(op, next-offset(offset))}. */
    void deliverNextOffset(long op, long offset) {
        deliver(op, 1, offset, 0, 0, 0);
    }

    /** {@code deliver(op, failed(message))}. */
    void deliverFailed(long op, String message) {
        int p = lowerString(message);
        deliver(op, 3, Integer.toUnsignedLong(p), strLen, 0, 0);
    }

    /**
     * {@code deliver(op, plog-page(..))} with the page's values as {@code plog-value} records
     * (four words per value in {@code words}: offset, ws, seq, value).
     */
    void deliverPlogPage(long op, long[] words, int len, long next, boolean end) {
        int values = len / 4;
        int p = alloc(8, values * 32);
        for (int i = 0; i < values; i++) {
            int at = p + i * 32;
            memory.writeLong(at, words[i * 4]);
            memory.writeLong(at + 8, words[i * 4 + 1]);
            memory.writeShort(at + 16, (short) words[i * 4 + 2]);
            memory.writeLong(at + 24, words[i * 4 + 3]);
        }
        deliver(op, 2, Integer.toUnsignedLong(values == 0 ? 8 : p), values, next, end ? 1 : 0);
    }

    private void deliver(long op, int kase, long s1, int s2, long s3, int s4) {
        long[] a = a6;
        a[0] = op;
        a[1] = kase;
        a[2] = s1;
        a[3] = s2;
        a[4] = s3;
        a[5] = s4;
        checkShort((int) iDeliver.apply(a)[0]);
    }

    /** {@code deliver-plog-words(op, words[0..len), next, end)}: a page, lowered with one copy. */
    void deliverPlogWords(long op, long[] words, int len, long next, boolean end) {
        int p = lowerWords(words, len);
        long[] a = a5;
        a[0] = op;
        a[1] = Integer.toUnsignedLong(p);
        a[2] = len;
        a[3] = next;
        a[4] = end ? 1 : 0;
        checkShort((int) iDeliverPlogWords.apply(a)[0]);
    }

    /** {@code start-next-quad} (or with {@code flush} first, {@code flush-start-next-quad}): the offset or 0; the numbers in {@link #numbers}. */
    long startNextQuad(boolean flushFirst, int kind, long ws, SeqQuad seqs) {
        long[] a = a7;
        a[0] = kind;
        a[1] = ws;
        quad(a, 2, seqs);
        int p = (int) (flushFirst ? iFlushStartNextQuad : iStartNextQuad).apply(a)[0];
        checkLong(p);
        long offset = outcome(p + 8);
        readNumbers(p + 24);
        return offset;
    }

    /** {@code stage}. */
    void stage() {
        checkShort((int) iStage.apply(a0)[0]);
    }

    /** {@code start-batch} (or {@code flush-start-batch}) over {@code ws[0..count)}, into {@code into}. */
    void startBatch(boolean flushFirst, int kind, long[] ws, int count, SeqQuad seqs, BatchNumbers into) {
        int wsPtr = lowerWords(ws, count);
        long[] a = a8;
        a[0] = kind;
        a[1] = Integer.toUnsignedLong(wsPtr);
        a[2] = count;
        quad(a, 3, seqs);
        int p = (int) (flushFirst ? iFlushStartBatch : iStartBatch).apply(a)[0];
        checkLong(p);
        int at = p + 8;
        long first = memory.readLong(at);
        int started = memory.readInt(at + 8);
        NotNowReason notNow = memory.read(at + 12) == 0 ? null : NotNowReason.ofIndex(u8(at + 13));
        int listPtr = memory.readInt(at + 16);
        int listLen = memory.readInt(at + 20);
        long[] out = into.reset(first, started, seqs.count(), notNow, listLen);
        for (int i = 0; i < listLen; i++) {
            out[i] = memory.readLong(listPtr + i * 8);
        }
        a1[0] = p;
        (flushFirst ? iPostFlushStartBatch : iPostStartBatch).apply(a1);
    }

    /** Reads an {@code ahead-numbers} at {@code p}: the offset or 0; status and numbers in the registers. */
    private long ahead(int p) {
        long offset = outcome(p);
        status = Status.ofIndex(u8(p + 16));
        readNumbers(p + 24);
        return offset;
    }

    /** {@code start-ahead}. */
    long startAhead(int kind, long ws, SeqQuad question) {
        long[] a = a7;
        a[0] = kind;
        a[1] = ws;
        quad(a, 2, question);
        int p = (int) iStartAhead.apply(a)[0];
        checkLong(p);
        return ahead(p + 8);
    }

    /** {@code take-flush-start-ahead}. */
    long takeFlushStartAhead(Ahead.Taken taken, int kind, long ws, SeqQuad question) {
        long[] a = a12;
        taken(a, 0, taken);
        a[5] = kind;
        a[6] = ws;
        quad(a, 7, question);
        int p = (int) iTakeFlushStartAhead.apply(a)[0];
        checkLong(p);
        return ahead(p + 8);
    }

    /** {@code take}. */
    void take(Ahead.Taken taken) {
        long[] a = a5;
        taken(a, 0, taken);
        checkShort((int) iTake.apply(a)[0]);
    }

    /** {@code take-next}. */
    long takeNext(Ahead.Taken taken, int seq) {
        long[] a = a6;
        taken(a, 0, taken);
        a[5] = seq;
        int p = (int) iTakeNext.apply(a)[0];
        checkLong(p);
        return memory.readLong(p + 8);
    }

    /** {@code take-flush}: the status after it, also in {@link #status}. */
    Status takeFlush(Ahead.Taken taken) {
        long[] a = a5;
        taken(a, 0, taken);
        int p = (int) iTakeFlush.apply(a)[0];
        checkShort(p);
        return status = Status.ofIndex(u8(p + 1));
    }

    // ---- the events interface (the facade) ---------------------------------------------------

    /** Reads an {@code event-ahead} at {@code p}: the PLog offset or 0; WLog offset and numbers in the registers. */
    private long eventAhead(int p) {
        long plog;
        if (memory.read(p) == 0) {
            notNow = null;
            plog = memory.readLong(p + 8);
            wlogOffset = memory.readLong(p + 16);
        } else {
            notNow = NotNowReason.ofIndex(u8(p + 8));
            plog = 0;
        }
        readNumbers(p + 24);
        return plog;
    }

    /** {@code events.start-event-ahead}. */
    long startEventAhead(long ws, SeqQuad question) {
        long[] a = a7;
        a[0] = rep;
        a[1] = ws;
        quad(a, 2, question);
        int p = (int) eStartEventAhead.apply(a)[0];
        checkError(p, ePostStartEventAhead);
        long plog = eventAhead(p + 8);
        a1[0] = p;
        ePostStartEventAhead.apply(a1);
        return plog;
    }

    /** {@code events.take-flush-start-event-ahead}. */
    long takeFlushStartEventAhead(Ahead.Taken taken, long ws, SeqQuad question) {
        long[] a = a12;
        a[0] = rep;
        taken(a, 1, taken);
        a[6] = ws;
        quad(a, 7, question);
        int p = (int) eTakeFlushStartEventAhead.apply(a)[0];
        checkError(p, ePostTakeFlushStartEventAhead);
        long plog = eventAhead(p + 8);
        a1[0] = p;
        ePostTakeFlushStartEventAhead.apply(a1);
        return plog;
    }

    private long eventNumber(ExportFunction f, ExportFunction post) {
        a1[0] = rep;
        int p = (int) f.apply(a1)[0];
        checkError(p, post);
        long n = memory.readLong(p + 8);
        a1[0] = p;
        post.apply(a1);
        return n;
    }

    private void eventUnit(ExportFunction f, ExportFunction post) {
        a1[0] = rep;
        int p = (int) f.apply(a1)[0];
        checkError(p, post);
        a1[0] = p;
        post.apply(a1);
    }

    /** {@code events.next-rec-id}. */
    long nextRecId() {
        return eventNumber(eNextRecId, ePostNextRecId);
    }

    /** {@code events.next-c-rec-id}. */
    long nextCRecId() {
        return eventNumber(eNextCRecId, ePostNextCRecId);
    }

    /** {@code events.finish-event}. */
    void finishEvent() {
        eventUnit(eFinishEvent, ePostFinishEvent);
    }

    /** {@code events.cancel-event}. */
    void cancelEvent() {
        eventUnit(eCancelEvent, ePostCancelEvent);
    }

    /** {@code events.status}. */
    SequenceStatus eventStatus() {
        if (rep == 0) {
            return SequenceStatus.FINISHED;
        }
        a1[0] = rep;
        return SequenceStatus.ofIndex((int) eStatus.apply(a1)[0]);
    }
}
