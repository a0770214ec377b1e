package seglog.interop;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.Records;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.Scheduler;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.OffsetIndex;
import org.apache.kafka.storage.internals.log.OffsetPosition;
import org.apache.kafka.storage.internals.log.OffsetResultHolder;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * The operations {@link KafkaBench} times, each through Kafka 4.4's own storage code as a broker
 * runs it: {@code UnifiedLog.appendAsLeader} (LogValidator: CRC, every record decoded and
 * checked, offsets assigned in place), {@code UnifiedLog.read} fetches read into one reused
 * buffer and decoded as Kafka's consumer does ({@code ensureValid}, every record), point reads
 * (a fetch of one batch), {@code fetchOffsetByTimestamp} then that read, {@code UnifiedLog.create}
 * (LogLoader) recovering an unflushed log, and {@code OffsetIndex.lookup}. Every log uses
 * Kafka's default topic configuration, as seglog's side uses seglog's (Kafka's) defaults.
 */
final class KafkaTrials {
    private KafkaTrials() {}

    /** Fetch size of the scan, as on the Rust side. */
    static final int FETCH_BYTES = 1 << 20;

    /** What one timed run did. */
    record Work(long records, long payloadBytes) {}

    /** One contender's part of a workload; only {@link #run} is timed. */
    interface Trial extends AutoCloseable {
        default void prepare() throws Exception {}

        Work run() throws Exception;

        default void cleanup() throws Exception {}

        @Override
        default void close() throws Exception {}
    }

    /** Kafka's default log configuration (segment.bytes 1 GiB, index.interval.bytes 4096, no flush). */
    static LogConfig defaultConfig() {
        return new LogConfig(Map.of());
    }

    /** {@code UnifiedLog.create} as the broker's LogManager calls it for one partition directory. */
    static UnifiedLog open(Path dir, long recoveryPoint, boolean lastShutdownClean, Scheduler scheduler,
            BrokerTopicStats stats) throws IOException {
        Files.createDirectories(dir);
        return UnifiedLog.create(dir.toFile(), defaultConfig(), 0L, recoveryPoint, scheduler, stats, Time.SYSTEM, 60000,
                new ProducerStateManagerConfig(86400000, false), 600000, new LogDirFailureChannel(1), lastShutdownClean,
                Optional.empty());
    }

    /**
     * The producer batches in {@code image} (back to back, as the Rust side wrote them), each its
     * own {@code MemoryRecords} over a heap buffer, as a produce request's records arrive.
     */
    static List<MemoryRecords> batches(Path image) throws IOException {
        ByteBuffer all = ByteBuffer.wrap(Files.readAllBytes(image));
        List<MemoryRecords> out = new ArrayList<>();
        int position = 0;
        while (position < all.limit()) {
            if (all.limit() - position < 12) throw new IOException(image + ": torn batch header at byte " + position);
            int size = 12 + all.getInt(position + 8);
            if (size < 61 || position + size > all.limit()) {
                throw new IOException(image + ": batch at byte " + position + " has a bad length " + size);
            }
            out.add(MemoryRecords.readableRecords(all.slice(position, size)));
            position += size;
        }
        return out;
    }

    /**
     * The header fields LogValidator rewrites in place when it accepts a batch (base offset and
     * partition leader epoch, neither covered by the CRC), saved so that every run appends the
     * producer's bytes: a leader refuses a client batch whose base offset is not 0.
     */
    static final class Headers {
        private final List<MemoryRecords> batches;
        private final long[] baseOffsets;
        private final int[] leaderEpochs;

        Headers(List<MemoryRecords> batches) {
            this.batches = batches;
            baseOffsets = new long[batches.size()];
            leaderEpochs = new int[batches.size()];
            for (int i = 0; i < baseOffsets.length; i++) {
                ByteBuffer b = batches.get(i).buffer();
                baseOffsets[i] = b.getLong(0);
                leaderEpochs[i] = b.getInt(12);
            }
        }

        void restore() {
            for (int i = 0; i < baseOffsets.length; i++) {
                ByteBuffer b = batches.get(i).buffer();
                b.putLong(0, baseOffsets[i]);
                b.putInt(12, leaderEpochs[i]);
            }
        }
    }

    /** Appends every batch as the leader (epoch 0), then checks the log end offset. */
    static void appendAll(UnifiedLog log, List<MemoryRecords> batches, long records) throws IOException {
        for (MemoryRecords batch : batches) log.appendAsLeader(batch, 0);
        if (log.logEndOffset() != records) {
            throw new IOException("Kafka's log end offset is " + log.logEndOffset() + ", expected " + records);
        }
    }

    /**
     * Closes {@code log} and deletes {@code dir} without writing its data to disk. Kafka's close
     * fsyncs every {@code .log} ({@code FileRecords.close}); deleting fsynced blocks makes ext4
     * issue discards that would stall the next contender's timed run, and seglog's side drops its
     * logs unsynced. So the {@code .log} files (not mapped) are cut to zero first; the indexes,
     * which Kafka has mapped, are left alone until the close has unmapped them.
     */
    static void discard(UnifiedLog log, Path dir) throws IOException {
        for (Path p : Fs.list(dir)) {
            if (p.getFileName().toString().endsWith(".log")) {
                try (RandomAccessFile raf = new RandomAccessFile(p.toFile(), "rw")) {
                    raf.setLength(0);
                }
            }
        }
        log.close();
        Fs.deleteTree(dir);
    }

    /** Numbers, one per line (point-read offsets, timestamps, lookup targets). */
    static long[] longs(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file);
        long[] out = new long[lines.size()];
        for (int i = 0; i < out.length; i++) out[i] = Long.parseLong(lines.get(i).trim());
        return out;
    }

    /** A log Kafka built from the image (untimed), read by the scan, point and timestamp trials. */
    static final class SharedLog implements AutoCloseable {
        final UnifiedLog log;
        final Path dir;
        final long records;

        private SharedLog(UnifiedLog log, Path dir, long records) {
            this.log = log;
            this.dir = dir;
            this.records = records;
        }

        static SharedLog build(Path dir, Path image, long records, Scheduler scheduler, BrokerTopicStats stats)
                throws IOException {
            Fs.deleteTree(dir);
            UnifiedLog log = open(dir, 0, true, scheduler, stats);
            appendAll(log, batches(image), records);
            return new SharedLog(log, dir, records);
        }

        @Override
        public void close() throws IOException {
            discard(log, dir);
        }
    }

    /** {@code UnifiedLog.appendAsLeader} of every batch, one call per batch, into a fresh log. */
    static final class Append implements Trial {
        private final Path dir;
        private final List<MemoryRecords> batches;
        private final Headers headers;
        private final long records;
        private final long payloadBytes;
        private final Scheduler scheduler;
        private final BrokerTopicStats stats;
        private UnifiedLog log;

        Append(Path dir, Path image, long records, long payloadBytes, Scheduler scheduler, BrokerTopicStats stats)
                throws IOException {
            this.dir = dir;
            this.batches = batches(image);
            this.headers = new Headers(batches);
            this.records = records;
            this.payloadBytes = payloadBytes;
            this.scheduler = scheduler;
            this.stats = stats;
        }

        @Override
        public void prepare() throws IOException {
            Fs.deleteTree(dir);
            headers.restore();
            log = open(dir, 0, true, scheduler, stats);
            System.gc();
        }

        @Override
        public Work run() throws IOException {
            appendAll(log, batches, records);
            return new Work(records, payloadBytes);
        }

        @Override
        public void cleanup() throws IOException {
            discard(log, dir);
            log = null;
        }

        @Override
        public void close() throws IOException {
            if (log != null) cleanup();
        }
    }

    /**
     * Reads a fetch into {@code buffer} (grown when a batch is larger) with one positional read, as
     * the bytes of a fetch response arrive at a consumer.
     */
    static ByteBuffer readInto(Records records, ByteBuffer buffer) throws IOException {
        if (!(records instanceof FileRecords file)) {
            throw new IOException("UnifiedLog.read returned " + records.getClass().getName() + ", not FileRecords");
        }
        int size = file.sizeInBytes();
        if (buffer.capacity() < size) buffer = ByteBuffer.allocateDirect(size);
        buffer.clear();
        buffer.limit(size);
        file.readInto(buffer, 0);
        return buffer;
    }

    /**
     * The whole log in offset order: {@code UnifiedLog.read} of 1 MiB from the next offset
     * (LOG_END isolation, minOneMessage), read into one reused direct buffer, every batch's
     * CRC checked ({@code ensureValid}) and every record decoded, as Kafka's consumer does.
     */
    static final class Scan implements Trial {
        private final SharedLog shared;
        private final long payloadBytes;
        private ByteBuffer buffer = ByteBuffer.allocateDirect(FETCH_BYTES);

        Scan(SharedLog shared, long payloadBytes) {
            this.shared = shared;
            this.payloadBytes = payloadBytes;
        }

        @Override
        public Work run() throws IOException {
            UnifiedLog log = shared.log;
            long offset = log.logStartOffset();
            long end = log.logEndOffset();
            long records = 0;
            long bytes = 0;
            while (offset < end) {
                FetchDataInfo fetch = log.read(offset, FETCH_BYTES, FetchIsolation.LOG_END, true);
                buffer = readInto(fetch.records, buffer);
                long next = offset;
                for (MutableRecordBatch batch : MemoryRecords.readableRecords(buffer).batches()) {
                    batch.ensureValid();
                    for (Record record : batch) {
                        if (record.offset() >= offset) {
                            records++;
                            bytes += record.valueSize();
                        }
                    }
                    next = batch.nextOffset();
                }
                if (next == offset) throw new IOException("Kafka's read at " + offset + " returned no whole batch");
                offset = next;
            }
            if (records != shared.records || bytes != payloadBytes) {
                throw new IOException("Kafka's scan saw " + records + " records and " + bytes + " value bytes, expected "
                        + shared.records + " and " + payloadBytes);
            }
            return new Work(records, bytes);
        }
    }

    /**
     * One record per target: {@code UnifiedLog.read(offset, 1, LOG_END, minOneMessage)} (the batch
     * holding it), CRC checked, records decoded up to it. With {@code byTimestamp} the targets are
     * timestamps, first answered by {@code UnifiedLog.fetchOffsetByTimestamp} (ListOffsets).
     */
    static final class PointRead implements Trial {
        private final SharedLog shared;
        private final long[] targets;
        private final int recordBytes;
        private final boolean byTimestamp;
        private ByteBuffer buffer = ByteBuffer.allocateDirect(64 * 1024);

        PointRead(SharedLog shared, long[] targets, int recordBytes, boolean byTimestamp) {
            this.shared = shared;
            this.targets = targets;
            this.recordBytes = recordBytes;
            this.byTimestamp = byTimestamp;
        }

        @Override
        public Work run() throws IOException {
            UnifiedLog log = shared.log;
            for (long target : targets) {
                long offset = target;
                if (byTimestamp) {
                    OffsetResultHolder found = log.fetchOffsetByTimestamp(target, Optional.empty());
                    offset = found.timestampAndOffsetOpt()
                            .orElseThrow(() -> new IOException("Kafka has no record at or after timestamp " + target))
                            .offset;
                }
                int size = valueSizeAt(log, offset);
                if (size != recordBytes) {
                    throw new IOException("Kafka's read of offset " + offset + " gave a value of " + size + " bytes");
                }
            }
            return new Work(targets.length, (long) targets.length * recordBytes);
        }

        private int valueSizeAt(UnifiedLog log, long offset) throws IOException {
            FetchDataInfo fetch = log.read(offset, 1, FetchIsolation.LOG_END, true);
            buffer = readInto(fetch.records, buffer);
            for (MutableRecordBatch batch : MemoryRecords.readableRecords(buffer).batches()) {
                batch.ensureValid();
                for (Record record : batch) {
                    if (record.offset() == offset) return record.valueSize();
                }
            }
            throw new IOException("Kafka's read at " + offset + " did not return it");
        }
    }

    /**
     * LogLoader recovery: {@code UnifiedLog.create} with recovery point 0 and no clean shutdown on
     * a fresh copy (untimed) of a log a killed writer left ({@code .log}, {@code .index},
     * {@code .timeindex}): every batch read and CRC-checked, the indexes rebuilt.
     */
    static final class Recovery implements Trial {
        private final Path pristine;
        private final Path dir;
        private final long records;
        private final long payloadBytes;
        private final Scheduler scheduler;
        private final BrokerTopicStats stats;
        private UnifiedLog log;

        Recovery(Path pristine, Path dir, long records, long payloadBytes, Scheduler scheduler, BrokerTopicStats stats) {
            this.pristine = pristine;
            this.dir = dir;
            this.records = records;
            this.payloadBytes = payloadBytes;
            this.scheduler = scheduler;
            this.stats = stats;
        }

        @Override
        public void prepare() throws IOException {
            Fs.deleteTree(dir);
            Files.createDirectories(dir);
            for (Path p : Fs.list(pristine)) {
                String n = p.getFileName().toString();
                if (n.endsWith(".log") || n.endsWith(".index") || n.endsWith(".timeindex")) Files.copy(p, dir.resolve(n));
            }
            System.gc();
        }

        @Override
        public Work run() throws IOException {
            log = open(dir, 0, false, scheduler, stats);
            if (log.logEndOffset() != records) {
                throw new IOException("Kafka recovered " + dir + " to log end offset " + log.logEndOffset() + ", expected "
                        + records);
            }
            return new Work(records, payloadBytes);
        }

        @Override
        public void cleanup() throws IOException {
            if (log != null) discard(log, dir);
            else Fs.deleteTree(dir);
            log = null;
        }

        @Override
        public void close() throws IOException {
            cleanup();
        }
    }

    /** {@code OffsetIndex.lookup} (the floor search) on a mapped {@code .index} file, opened read-only. */
    static final class FloorLookup implements Trial {
        private final OffsetIndex index;
        private final long[] targets;

        FloorLookup(Path file, long[] targets) throws IOException {
            File f = file.toFile();
            this.index = new OffsetIndex(f, 0L, (int) f.length(), false);
            this.targets = targets;
        }

        @Override
        public Work run() {
            long sum = 0;
            for (long target : targets) {
                OffsetPosition found = index.lookup(target);
                sum += found.position();
            }
            if (sum < 0) throw new IllegalStateException("positions summed to " + sum);
            return new Work(targets.length, 0);
        }

        @Override
        public void close() throws IOException {
            index.close();
        }
    }
}
