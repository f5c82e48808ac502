package io.github.plogsequencer;

/**
 * Performs an {@link Operation} against {@link Storage} and says how it went, as an
 * {@link Outcome}: a method that throws, or answers what the contract cannot carry, is a
 * {@code failed} outcome (the plugin retries it later), never an exception.
 */
final class Performer {
    private final Storage storage;
    private final int pageEvents;

    Performer(Storage storage, int pageEvents) {
        this.storage = storage;
        this.pageEvents = pageEvents;
    }

    Outcome perform(Operation op) {
        try {
            switch (op.kind) {
                case WRITE:
                    storage.writeValuesAndNextPLogOffset(op.values, op.nextOffset);
                    return Outcome.WRITTEN;
                case READ_NEXT_OFFSET:
                    return Outcome.nextOffset(storage.readNextPLogOffset());
                default:
                    PageCollector page = new PageCollector(op.first, pageEvents);
                    storage.actualizeSequencesFromPLog(op.first, page);
                    return page.outcome();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Outcome.failed(op.kind.witName + " interrupted");
        } catch (Exception | StackOverflowError e) {
            return Outcome.failed(op.kind.witName + " failed: " + HostLink.describe(e));
        }
    }
}
