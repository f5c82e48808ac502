package io.github.plogsequencer;

import java.util.List;

/**
 * Storage work the plugin began ({@code begin-write}, {@code begin-read-next-offset},
 * {@code begin-read-plog}): performed outside any call into the plugin, its outcome delivered
 * afterwards under its id.
 */
final class Operation {
    /** Which storage operation. */
    enum Kind {
        WRITE("write"),
        READ_NEXT_OFFSET("read-next-offset"),
        READ_PLOG("read-plog");

        final String witName;

        Kind(String witName) {
            this.witName = witName;
        }
    }

    final Kind kind;
    /** The plugin's operation id. */
    final long op;
    /** The instance that began it (outcomes for an older instance are dropped). */
    final long generation;
    /** A write's values (keys unique). */
    final List<SeqValue> values;
    /** A write's offset to store after its values. */
    final long nextOffset;
    /** A PLog read's first offset. */
    final long first;

    private Operation(Kind kind, long op, long generation, List<SeqValue> values, long nextOffset, long first) {
        this.kind = kind;
        this.op = op;
        this.generation = generation;
        this.values = values;
        this.nextOffset = nextOffset;
        this.first = first;
    }

    static Operation write(long op, long generation, List<SeqValue> values, long nextOffset) {
        return new Operation(Kind.WRITE, op, generation, values, nextOffset, 0);
    }

    static Operation readNextOffset(long op, long generation) {
        return new Operation(Kind.READ_NEXT_OFFSET, op, generation, List.of(), 0, 0);
    }

    static Operation readPlog(long op, long generation, long first) {
        return new Operation(Kind.READ_PLOG, op, generation, List.of(), 0, first);
    }

    @Override
    public String toString() {
        switch (kind) {
            case WRITE:
                return "write op " + op + " (" + values.size() + " values, offset " + nextOffset + ")";
            case READ_PLOG:
                return "read-plog op " + op + " from " + first;
            default:
                return "read-next-offset op " + op;
        }
    }
}
