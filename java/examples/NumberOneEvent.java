// Number one event with the sequencer plugin on Chicory (the Java package, java/).
// Run from java/ after `mvn -q package`:
//   java -cp "target/plog-sequencer-0.1.0.jar:$(cat target/classpath.txt)" examples/NumberOneEvent.java
//   -> 43 14 14 43
import io.github.plogsequencer.MemoryStorage;
import io.github.plogsequencer.Params;
import io.github.plogsequencer.Plugin;
import io.github.plogsequencer.SeqValue;
import io.github.plogsequencer.Sequencer;
import java.time.Duration;
import java.util.List;

public class NumberOneEvent {
    public static void main(String[] args) {
        MemoryStorage storage = new MemoryStorage(); // or your own io.github.plogsequencer.Storage
        storage.seedEvent(42, List.of(new SeqValue(1000, 1, 13))); // the PLog already holds event 42
        Params params = Params.builder().seqType(/* kind */ 1, /* sequence */ 1, /* first */ 1).build();
        long offset;
        long id;
        try (Sequencer seq = Plugin.load().open(params, storage)) { // it actualizes on its task thread
            offset = seq.startWithin(Duration.ofSeconds(10), /* kind */ 1, /* ws */ 1000); // 0: still "not now"
            id = seq.next(1);
            storage.append(offset, List.of(new SeqValue(1000, 1, id))); // the command processor's event
            seq.flush(); // the flusher writes 14, then offset 43
        } // close: the flusher's write lands first
        System.out.println(offset + " " + id + " " + storage.number(1000, 1) + " " + storage.readNextPLogOffset());
    }
}
