package io.github.plogsequencer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.runtime.ChicoryInterruptedException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The package's own promises, on the task thread: typed refusals, traps, close, retries. */
class SequencerTest {
    static final Duration WAIT = Duration.ofSeconds(10);
    static final Plugin PLUGIN = Plugin.load();
    static final Params PARAMS = Params.builder().seqType(1, 1, 1).seqType(1, 2, 100).retryDelay(Duration.ofMillis(5))
            .maxRetryDelay(Duration.ofMillis(40)).build();

    /** A storage whose writes take a while, or fail a given number of times first. */
    static final class SlowStorage implements Storage {
        final MemoryStorage inner = new MemoryStorage();
        volatile long writeMillis;
        final AtomicInteger failWrites = new AtomicInteger();

        @Override
        public long[] readNumbers(long ws, int[] seqs) {
            return inner.readNumbers(ws, seqs);
        }

        @Override
        public long readNextPLogOffset() {
            return inner.readNextPLogOffset();
        }

        @Override
        public void writeValuesAndNextPLogOffset(List<SeqValue> batch, long next) throws Exception {
            Thread.sleep(writeMillis);
            if (failWrites.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new java.io.IOException("the disk said no");
            }
            inner.writeValuesAndNextPLogOffset(batch, next);
        }

        @Override
        public void actualizeSequencesFromPLog(long offset, Batcher batcher) {
            inner.actualizeSequencesFromPLog(offset, batcher);
        }
    }

    /** One whole transaction of sequence 1 in workspace {@code ws}: its offset and number. */
    static long[] transaction(Sequencer seq, MemoryStorage storage, long ws) {
        long offset = seq.startWithin(WAIT, 1, ws);
        assertTrue(offset > 0, "not ready within " + WAIT);
        long n = seq.next(1);
        storage.append(offset, List.of(new SeqValue(ws, 1, n)));
        seq.flush();
        return new long[] {offset, n};
    }

    @Test
    void misuseIsRefusedWithTheWitCaseAndChangesNothing() {
        MemoryStorage storage = new MemoryStorage();
        try (Sequencer seq = PLUGIN.open(PARAMS, storage)) {
            assertTrue(seq.awaitReady(WAIT));
            SequencerException e = assertThrows(SequencerException.class, () -> seq.next(1));
            assertEquals(ErrorCode.NO_TRANSACTION, e.code());
            e = assertThrows(SequencerException.class, () -> seq.start(9, 1));
            assertEquals(ErrorCode.UNKNOWN_WS_KIND, e.code());
            assertEquals(9, e.detail());
            assertEquals(1, seq.start(1, 7));
            e = assertThrows(SequencerException.class, () -> seq.start(1, 8));
            assertEquals(ErrorCode.TRANSACTION_IN_PROGRESS, e.code());
            e = assertThrows(SequencerException.class, () -> seq.next(5));
            assertEquals(ErrorCode.UNKNOWN_SEQ_ID, e.code());
            assertEquals(new SeqRef(1, 5), e.detail());
            assertEquals(1, seq.next(1), "the transaction survived every refusal");
            assertEquals(100, seq.next(2));
            assertThrows(IllegalArgumentException.class, () -> seq.start(70_000, 1));
        }
    }

    @Test
    void invalidParamsAreRefusedAtOpenWithTheRuleBroken() {
        Params zero = Params.builder().seqType(1, 1, 0).build();
        SequencerException e = assertThrows(SequencerException.class, () -> PLUGIN.open(zero, new MemoryStorage()));
        assertEquals(ErrorCode.INVALID_PARAMS, e.code());
        assertInstanceOf(String.class, e.detail());
    }

    @Test
    void callsAfterCloseAreRefusedAsCleanedUp() {
        Sequencer seq = PLUGIN.open(PARAMS, new MemoryStorage());
        seq.close();
        seq.close();
        assertEquals(ErrorCode.CLEANED_UP, assertThrows(SequencerException.class, () -> seq.start(1, 1)).code());
        assertEquals(Status.CLEANED_UP, seq.status());
        assertEquals(SequenceStatus.FINISHED, seq.eventStatus());
    }

    @Test
    void aTrapIsAnExceptionAfterWhichTheNextCallWorksAndNoNumberIsReused() {
        MemoryStorage storage = new MemoryStorage();
        try (Sequencer seq = PLUGIN.open(PARAMS, storage)) {
            assertEquals(1, transaction(seq, storage, 5)[1]);
            // Event 2 is appended and flushed (the flush waits for the next call), then the
            // next call traps: the new instance must replay event 2, not hand out 2 again.
            long offset = seq.startWithin(WAIT, 1, 5);
            long n = seq.next(1);
            storage.append(offset, List.of(new SeqValue(5, 1, n)));
            seq.flush();
            Thread.currentThread().interrupt();
            TrappedException t = assertThrows(TrappedException.class, () -> seq.start(1, 5));
            assertTrue(Thread.interrupted(), "the interrupt is kept for the caller");
            assertInstanceOf(ChicoryInterruptedException.class, t.getCause());
            assertEquals(1, seq.traps());
            long[] after = transaction(seq, storage, 5);
            assertEquals(offset + 1, after[0], "no offset handed out twice");
            assertEquals(n + 1, after[1], "no number handed out twice");
        }
    }

    @Test
    void aTrapDropsAnOpenTransactionWhoseEventNeverReachedThePlog() {
        MemoryStorage storage = new MemoryStorage();
        try (Sequencer seq = PLUGIN.open(PARAMS, storage)) {
            transaction(seq, storage, 5);
            long offset = seq.startWithin(WAIT, 1, 5);
            long n = seq.next(1);
            Thread.currentThread().interrupt();
            assertThrows(TrappedException.class, seq::heldNumbers);
            Thread.interrupted();
            long[] again = transaction(seq, storage, 5);
            assertEquals(offset, again[0], "the offset that never reached the PLog is handed out again");
            assertEquals(n, again[1]);
        }
    }

    @Test
    void closeLetsTheWriteInFlightAndADeferredFlushLand() throws Exception {
        SlowStorage storage = new SlowStorage();
        storage.writeMillis = 150;
        Sequencer seq = PLUGIN.open(PARAMS, storage);
        long offset = seq.startWithin(WAIT, 1, 3);
        long n = seq.next(1);
        storage.inner.append(offset, List.of(new SeqValue(3, 1, n)));
        seq.flush(); // deferred: no call yet
        seq.close();
        assertEquals(n, storage.inner.number(3, 1));
        assertEquals(offset, storage.inner.readNextPLogOffset());
    }

    @Test
    void aFailingWriteIsRetriedWithBackoffUntilItLands() throws Exception {
        SlowStorage storage = new SlowStorage();
        storage.failWrites.set(3);
        try (Sequencer seq = PLUGIN.open(PARAMS, storage)) {
            long[] tx = transaction(seq, storage.inner, 4);
            seq.heldNumbers(); // reports the deferred flush
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (storage.inner.number(4, 1) != tx[1] && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(tx[1], storage.inner.number(4, 1));
            assertEquals(0, storage.failWrites.get());
        }
    }

    @Test
    void closeGivesUpOnAStorageThatNeverWritesWithinItsTimeout() {
        SlowStorage storage = new SlowStorage();
        storage.failWrites.set(Integer.MAX_VALUE);
        SequencerOptions options = SequencerOptions.builder().closeTimeout(Duration.ofMillis(200)).build();
        Sequencer seq = PLUGIN.open(PARAMS, storage, options);
        transaction(seq, storage.inner, 4);
        long t0 = System.nanoTime();
        seq.close();
        assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(5).toNanos());
        assertEquals(0, storage.inner.number(4, 1));
    }

    @Test
    void theBatchedCallsAndTheNumbersAheadAgree() {
        MemoryStorage storage = new MemoryStorage();
        try (Sequencer seq = PLUGIN.open(PARAMS, storage)) {
            assertTrue(seq.awaitReady(WAIT));
            SeqQuad both = SeqQuad.of(1, 2);
            long[] numbers = new long[4];
            assertEquals(1, seq.startNext(1, 9, both, numbers));
            assertEquals(List.of(1L, 100L), List.of(numbers[0], numbers[1]));
            storage.append(1, List.of(new SeqValue(9, 1, 1), new SeqValue(9, 2, 100)));
            BatchNumbers batch = seq.flushStartBatch(1, new long[] {9, 10}, both, new BatchNumbers());
            assertEquals(2, batch.firstOffset());
            assertEquals(2, batch.started());
            assertNull(batch.notNow());
            assertEquals(2, batch.number(0, 0));
            assertEquals(101, batch.number(0, 1));
            assertEquals(1, batch.number(1, 0));
            storage.append(2, List.of(new SeqValue(9, 1, 2), new SeqValue(9, 2, 101)));
            storage.append(3, List.of(new SeqValue(10, 1, 1), new SeqValue(10, 2, 100)));
            seq.flush();
            long[] tx = transaction(seq, storage, 9);
            assertEquals(4, tx[0]);
            assertEquals(3, tx[1]);
            long[] tx2 = transaction(seq, storage, 9);
            assertEquals(5, tx2[0]);
            assertEquals(4, tx2[1], "the number handed out ahead");
        }
    }

    @Test
    void theFacadeNumbersEventsOverSystemParams() {
        MemoryStorage storage = new MemoryStorage();
        Params params = PLUGIN.systemParams(Params.builder().seqType(1, 1, 1).build());
        assertEquals(Long.valueOf(322680000131072L), params.seqTypes().get(0).get(2));
        try (Sequencer seq = PLUGIN.open(params, storage)) {
            EventOffsets e = seq.startEvent(WAIT, 5);
            assertEquals(new EventOffsets(1, 1), e);
            assertEquals(SequenceStatus.EVENTING, seq.eventStatus());
            assertEquals(322680000131072L, seq.nextRecId());
            assertEquals(322685000131072L, seq.nextCRecId());
            seq.cancelEvent();
            EventOffsets again = seq.startEvent(WAIT, 5);
            assertEquals(e, again, "a cancelled event's offsets are handed out again");
            assertEquals(322680000131072L, seq.nextRecId());
            storage.append(1, List.of(new SeqValue(5, 1, 1), new SeqValue(5, 2, 322680000131072L)));
            seq.finishEvent();
            assertEquals(SequenceStatus.READY, seq.eventStatus());
            assertEquals(new EventOffsets(2, 2), seq.startEvent(WAIT, 5));
            assertEquals(322680000131073L, seq.nextRecId());
        }
    }

    @Test
    void aStorageThatCallsItsSequencerFromInsideACallIsRefusedNotReentered() {
        MemoryStorage inner = new MemoryStorage();
        Sequencer[] self = new Sequencer[1];
        Storage reentrant = new Storage() {
            @Override
            public long[] readNumbers(long ws, int[] seqs) {
                self[0].start(1, ws + 1); // from inside the plugin's read-numbers import
                return inner.readNumbers(ws, seqs);
            }

            @Override
            public long readNextPLogOffset() {
                return inner.readNextPLogOffset();
            }

            @Override
            public void writeValuesAndNextPLogOffset(List<SeqValue> batch, long next) {
                inner.writeValuesAndNextPLogOffset(batch, next);
            }

            @Override
            public void actualizeSequencesFromPLog(long offset, Batcher batcher) {
                inner.actualizeSequencesFromPLog(offset, batcher);
            }
        };
        try (Sequencer seq = PLUGIN.open(PARAMS, reentrant)) {
            self[0] = seq;
            assertTrue(seq.awaitReady(WAIT));
            SequencerException e = assertThrows(SequencerException.class, () -> seq.start(1, 1));
            assertEquals(ErrorCode.STORAGE, e.code());
            assertTrue(e.getMessage().contains("from inside"), e.getMessage());
            assertEquals(Status.READY, seq.status(), "the refused start changed nothing");
        }
    }

    @Test
    void aPlogScanThatBreaksItsContractFailsTheReadWhichIsRetriedNotRefused() {
        MemoryStorage inner = new MemoryStorage();
        inner.append(1, List.of(new SeqValue(5, 1, 7)));
        inner.append(2, List.of(new SeqValue(5, 1, 8)));
        AtomicInteger scans = new AtomicInteger();
        Storage broken = new Storage() {
            @Override
            public long[] readNumbers(long ws, int[] seqs) {
                return inner.readNumbers(ws, seqs);
            }

            @Override
            public long readNextPLogOffset() {
                return inner.readNextPLogOffset();
            }

            @Override
            public void writeValuesAndNextPLogOffset(List<SeqValue> batch, long next) {
                inner.writeValuesAndNextPLogOffset(batch, next);
            }

            @Override
            public void actualizeSequencesFromPLog(long offset, Batcher batcher) {
                if (scans.getAndIncrement() == 0) {
                    batcher.batch(List.of(), 2); // out of order: 2, then 1
                    batcher.batch(List.of(), 1);
                    return;
                }
                inner.actualizeSequencesFromPLog(offset, batcher);
            }
        };
        try (Sequencer seq = PLUGIN.open(PARAMS, broken)) {
            long offset = seq.startWithin(WAIT, 1, 5);
            assertEquals(3, offset, "the retried scan replayed both events");
            assertEquals(9, seq.next(1));
            assertTrue(scans.get() >= 2);
        }
    }

    @Test
    void aPageEndsThePlogOnlyWhenTheScanRanOutOfEvents() {
        MemoryStorage storage = new MemoryStorage();
        for (long o = 1; o <= 10; o++) {
            storage.append(o, List.of(new SeqValue(3, 1, o)));
        }
        SequencerOptions options = SequencerOptions.builder().pageEvents(5).build();
        try (Sequencer seq = PLUGIN.open(PARAMS, storage, options)) {
            assertEquals(11, seq.startWithin(WAIT, 1, 3), "two full pages, then an empty one ends the PLog");
            assertEquals(11, seq.next(1));
        }
    }
}
