package io.github.plogsequencer;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.zip.CRC32;

/**
 * A durable storage of the tests' own: two append-only files of checksummed records, each
 * forced to disk ({@code fsync}) before its call returns. {@code plog.log} holds the events
 * (appended densely, fenced by offset); {@code view.log} holds the flusher's writes, each one
 * record with its values and its offset, so values are never durable without their offset's
 * record or after it. Opening reads both, keeps the whole records and cuts a torn tail (a
 * process killed mid-write). Not for production: it keeps everything in memory too.
 */
final class FileStorage implements Storage, AutoCloseable {
    private final FileChannel plogFile;
    private final FileChannel viewFile;
    private final NavigableMap<Long, List<SeqValue>> plog = new TreeMap<>();
    private final Map<List<Long>, Long> view = new HashMap<>();
    private long nextOffset;

    FileStorage(Path dir) throws IOException {
        java.nio.file.Files.createDirectories(dir);
        plogFile = FileChannel.open(dir.resolve("plog.log"), StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        viewFile = FileChannel.open(dir.resolve("view.log"), StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        for (Record r : readAll(plogFile)) {
            if (r.offset != plogNext()) {
                throw new IOException("plog.log is not dense: offset " + r.offset + " after " + (plogNext() - 1));
            }
            plog.put(r.offset, r.values);
        }
        for (Record r : readAll(viewFile)) {
            for (SeqValue v : r.values) {
                view.put(List.of(v.ws(), (long) v.seq()), v.value());
            }
            nextOffset = r.offset;
        }
    }

    private record Record(long offset, List<SeqValue> values) {}

    /** Every whole record of {@code file}; the file is cut after the last one. */
    private static List<Record> readAll(FileChannel file) throws IOException {
        List<Record> records = new ArrayList<>();
        ByteBuffer all = ByteBuffer.allocate((int) file.size());
        file.read(all, 0);
        all.flip();
        long good = 0;
        while (all.remaining() >= 12) {
            int start = all.position();
            long offset = all.getLong();
            int count = all.getInt();
            if (count < 0 || all.remaining() < count * 18L + 8) {
                break;
            }
            List<SeqValue> values = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                values.add(new SeqValue(all.getLong(), all.getShort() & 0xFFFF, all.getLong()));
            }
            long crc = all.getLong();
            CRC32 c = new CRC32();
            c.update(all.array(), start, all.position() - 8 - start);
            if (c.getValue() != crc) {
                break;
            }
            records.add(new Record(offset, values));
            good = all.position();
        }
        file.truncate(good);
        file.position(good);
        file.force(true);
        return records;
    }

    private static void append(FileChannel file, long offset, List<SeqValue> values) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(12 + values.size() * 18 + 8);
        b.putLong(offset).putInt(values.size());
        for (SeqValue v : values) {
            b.putLong(v.ws()).putShort((short) v.seq()).putLong(v.value());
        }
        CRC32 c = new CRC32();
        c.update(b.array(), 0, b.position());
        b.putLong(c.getValue());
        b.flip();
        while (b.hasRemaining()) {
            file.write(b);
        }
        file.force(true);
    }

    /** Appends the event at {@code offset}, durably; it must be the PLog's next offset. */
    synchronized void appendEvent(long offset, List<SeqValue> values) throws IOException {
        if (offset != plogNext()) {
            throw new IllegalArgumentException("append at " + offset + ": the PLog's next offset is " + plogNext());
        }
        append(plogFile, offset, values);
        plog.put(offset, List.copyOf(values));
    }

    synchronized long plogNext() {
        return plog.isEmpty() ? 1 : plog.lastKey() + 1;
    }

    synchronized NavigableMap<Long, List<SeqValue>> events() {
        return new TreeMap<>(plog);
    }

    @Override
    public synchronized long[] readNumbers(long ws, int[] seqs) {
        long[] n = new long[seqs.length];
        for (int i = 0; i < seqs.length; i++) {
            n[i] = view.getOrDefault(List.of(ws, (long) seqs[i]), 0L);
        }
        return n;
    }

    @Override
    public synchronized long readNextPLogOffset() {
        return nextOffset;
    }

    @Override
    public synchronized void writeValuesAndNextPLogOffset(List<SeqValue> batch, long nextPLogOffset) throws IOException {
        append(viewFile, nextPLogOffset, batch); // one record: the values and their offset together
        for (SeqValue v : batch) {
            view.put(List.of(v.ws(), (long) v.seq()), v.value());
        }
        nextOffset = nextPLogOffset;
    }

    @Override
    public void actualizeSequencesFromPLog(long offset, Batcher batcher) {
        for (Map.Entry<Long, List<SeqValue>> e : events().tailMap(offset, true).entrySet()) {
            if (!batcher.batch(e.getValue(), e.getKey())) {
                return;
            }
        }
    }

    @Override
    public void close() throws IOException {
        plogFile.close();
        viewFile.close();
    }
}
