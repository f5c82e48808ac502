package io.github.plogsequencer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class QuickstartTest {
    @Test
    void numbersOneEventAfterThePlogsLastAndTheFlusherWritesIt() throws Exception {
        MemoryStorage storage = new MemoryStorage();
        storage.append(1, List.of());
        for (long o = 2; o <= 42; o++) {
            storage.append(o, o == 42 ? List.of(new SeqValue(1000, 1, 13)) : List.of());
        }
        Params params = Params.builder().seqType(1, 1, 1).build();
        try (Sequencer seq = Plugin.load().open(params, storage)) {
            long offset = seq.startWithin(Duration.ofSeconds(10), 1, 1000);
            long id = seq.next(1);
            storage.append(offset, List.of(new SeqValue(1000, 1, id)));
            seq.flush();
            assertEquals(43, offset);
            assertEquals(14, id);
        }
        assertEquals(14, storage.number(1000, 1));
        assertEquals(43, storage.readNextPLogOffset());
        assertTrue(storage.writes() >= 1);
    }
}
