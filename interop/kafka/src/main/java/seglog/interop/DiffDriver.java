package seglog.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.BatchMetadata;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.LogStartOffsetIncrementReason;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.ProducerStateEntry;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * Kafka 4.4's side of the differential histories ({@code cargo xtask kafka diff}, issue #25):
 * one {@link UnifiedLog} in-process, driven by the Rust harness ({@code interop/diff}) over stdin
 * and stdout with the framing of {@link KafkaBench} (one JSON object per line each way; the first
 * line out is a hello; Kafka's logging goes to stderr; every reply has {@code "ok"}, a request the
 * driver could not carry out has {@code "error"} and the driver goes on).
 *
 * <p>Requests: {@code open} (a fresh log in {@code dir} with {@code internal.segment.bytes}),
 * {@code append} (hex bytes of one batch as {@code appendAsLeader} with origin {@code client} or
 * {@code coordinator}), {@code roll}, {@code truncate}, {@code hw} (the high watermark moves
 * forward only, clamped to the log end: what a leader's {@code maybeIncrementHighWatermark} does),
 * {@code reopen} (clean close, then {@code UnifiedLog.create} with the log start and recovery
 * point a broker would checkpoint, and the high watermark restored as {@code Partition} does from
 * {@code replication-offset-checkpoint}), {@code fetch} (read_uncommitted and read_committed from
 * an offset), {@code close}, {@code exit}. Operations Kafka refuses are not driver errors: the
 * reply is {@code ok} with {@code "refused"}, the exception's simple class name. Every reply to an
 * operation carries {@code "state"}: log start, log end, high watermark, first unstable offset,
 * last stable offset and the producer state.
 */
public final class DiffDriver {
    private final KafkaScheduler scheduler = new KafkaScheduler(1, true, "seglog-diff-");
    private final BrokerTopicStats stats = new BrokerTopicStats();
    private final DiffTime time = new DiffTime();
    /** LogCleanerManager's checkpoint of this log (the first dirty offset); none before a round. */
    private Optional<Long> cleanerCheckpoint = Optional.empty();
    private Cleaner cleaner;
    private UnifiedLog log;
    private Path dir;
    private int segmentBytes;

    private DiffDriver() {}

    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        DiffDriver driver = new DiffDriver();
        driver.scheduler.startup();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ObjectNode hello = ok();
        hello.put("kafka", org.apache.kafka.common.utils.internals.AppInfoParser.getVersion());
        protocol.println(KafkaBench.JSON.writeValueAsString(hello));
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) continue;
                ObjectNode reply;
                boolean exit = false;
                try {
                    JsonNode request = KafkaBench.JSON.readTree(line);
                    String cmd = request.path("cmd").asText();
                    exit = cmd.equals("exit");
                    // The Rust side's held clock: every request runs at its step's now.
                    if (request.has("now_ms")) driver.time.pin(request.path("now_ms").asLong());
                    try {
                        reply = exit ? ok() : driver.handle(cmd, request);
                    } finally {
                        driver.time.unpin();
                    }
                } catch (Exception | AssertionError e) {
                    reply = KafkaBench.JSON.createObjectNode();
                    reply.put("ok", false);
                    reply.put("error", describe(e));
                }
                protocol.println(KafkaBench.JSON.writeValueAsString(reply));
                if (exit) break;
            }
        } finally {
            driver.closeLog();
            driver.scheduler.shutdown();
        }
        System.exit(0);
    }

    private ObjectNode handle(String cmd, JsonNode r) throws Exception {
        if (!cmd.equals("open") && log == null) throw new IllegalStateException("no log is open");
        ObjectNode reply = ok();
        switch (cmd) {
            case "open" -> {
                closeLog();
                dir = Path.of(r.path("dir").asText());
                segmentBytes = r.path("segment_bytes").asInt();
                Fs.deleteTree(dir);
                cleanerCheckpoint = Optional.empty();
                log = create(0, 0, false);
            }
            case "append" -> {
                MemoryRecords records = MemoryRecords.readableRecords(
                        ByteBuffer.wrap(HexFormat.of().parseHex(r.path("hex").asText())));
                boolean coordinator = r.path("origin").asText().equals("coordinator");
                int leaderEpoch = leaderEpoch(r);
                refusable(reply, () -> {
                    // Markers as WriteTxnMarkers writes them under transactions v1 (feature
                    // level 1); client batches with the version a produce request leaves unknown.
                    LogAppendInfo info = log.appendAsLeader(records, leaderEpoch,
                            coordinator ? AppendOrigin.COORDINATOR : AppendOrigin.CLIENT, RequestLocal.noCaching(),
                            VerificationGuard.SENTINEL, coordinator ? (short) 1 : (short) -1);
                    reply.put("first_offset", info.firstOffset());
                    reply.put("last_offset", info.lastOffset());
                });
            }
            case "roll" -> refusable(reply, () -> log.roll());
            case "roll_for_set" -> reply.put("rolled", rollForSet(r.path("hex").asText()));
            case "truncate" -> refusable(reply, () -> {
                long target = r.path("offset").asLong();
                // Whether truncateTo's rebuildProducerState will skip the replay after its
                // snapshot reload (`isEmptyBeforeTruncation`: an empty state whose end is at or
                // above the target), for the rule on that shortcut after producer expiry;
                // never compared.
                var psm = log.producerStateManager();
                boolean skipsReplay = target < log.logEndOffset()
                        && log.logSegments().get(0).baseOffset() <= target
                        && psm.isEmpty() && psm.mapEndOffset() >= target;
                log.truncateTo(target);
                if (skipsReplay) reply.put("skipped_truncation_replay", true);
                cleanerCheckpointAtMost(log.activeSegment().baseOffset());
            });
            // The runner's roll after a truncation inside a batch or in a gap (rule
            // `truncation-inside-a-batch-rolls-at-the-target`): seglog's truncation rolled at the
            // target, and the roll makes Kafka's layout seglog's. The cleaner checkpoint stays
            // what LogManager's rule gave on Kafka's own layout (the base of the segment holding
            // the target), which seglog's truncation now writes too (8ea045a; seeds 207045,
            // 109828, 105781).
            case "roll_at_truncation_target" -> refusable(reply, () -> log.roll());
            case "hw" -> refusable(reply, () -> {
                long target = Math.min(r.path("offset").asLong(), log.logEndOffset());
                if (target > log.highWatermark()) log.updateHighWatermark(target);
            });
            case "reopen" -> {
                long logStart = log.logStartOffset();
                long highWatermark = log.highWatermark();
                long logEnd = log.logEndOffset();
                // LogManager's clean shutdown: the active segment is sealed first (its time
                // index gets its last entry and both indexes are trimmed); UnifiedLog.close()
                // alone leaves them preallocated, and the next load then takes the zeros for
                // entries (a full index: the first append rolls, and after a truncation the
                // roll fails with a BufferOverflowException).
                log.prepareActiveSegmentForClose();
                log.close();
                // A clean close flushed everything: the broker checkpoints the log end as the
                // recovery point and writes .kafka_cleanshutdown.
                log = create(logStart, logEnd, true);
                log.updateHighWatermark(highWatermark);
            }
            case "fetch" -> {
                long offset = r.path("offset").asLong();
                reply.set("read_uncommitted", fetch(offset, FetchIsolation.HIGH_WATERMARK));
                reply.set("read_committed", fetch(offset, FetchIsolation.TXN_COMMITTED));
            }
            case "close" -> {
                closeLog();
                return reply;
            }
            case "retention", "delete_records", "truncate_fully", "clean", "crash" -> maintenance(cmd, r, reply);
            case "follower" -> appendAsFollower(r, reply);
            case "marker_tv" -> appendMarker(r, reply);
            case "offset_for_timestamp" -> offsetForTimestamp(r, reply);
            case "become_leader" -> refusable(reply, () -> log.assignEpochStartOffset(
                    log.latestEpoch().map(e -> e + 1).orElse(0), log.logEndOffset()));
            // The runner's undo of an overlapping follower append (rule
            // `overlapping-follower-batch-refused`): the truncation takes back the entries the
            // append added, this puts back the ones it removed (a v0/v1 batch clears the cache, a
            // lower epoch drops the higher entries), each as `assign` would have kept it.
            case "assign_epochs" -> refusable(reply, () -> {
                for (var entry : r.path("entries")) {
                    log.assignEpochStartOffset(entry.get(0).asInt(), entry.get(1).asLong());
                }
            });
            // seglog's `tick` (its side of this step) also runs retention, as a broker's
            // LogManager retention task does beside the producer-expiration task: with the
            // histories' config that is the log-start rule (segments below a DeleteRecords).
            case "expire" -> refusable(reply, () -> {
                log.removeExpiredProducers(r.path("now").asLong());
                log.deleteOldSegments();
            });
            // The runner's undo of an overlapping follower append: its truncation may reload a
            // snapshot holding a producer Kafka's state had dropped since (an expiry); the
            // runner names the producers the state before the append did not have.
            case "forget_producers" -> refusable(reply, () -> {
                var psm = log.producerStateManager();
                var producers = psm.getClass().getDeclaredField("producers");
                producers.setAccessible(true);
                var map = (Map<?, ?>) producers.get(psm);
                for (var id : r.path("ids")) map.remove(id.asLong());
            });
            default -> throw new IllegalArgumentException("unknown command `" + cmd + "`");
        }
        reply.set("state", state());
        // The producer state's own first unstable offset, next to UnifiedLog's cached one
        // (the comparator's rule for the cache; never compared itself).
        var fresh = log.producerStateManager().firstUnstableOffset();
        if (fresh.isPresent()) reply.put("fresh_first_unstable", fresh.get().messageOffset);
        settledFirstUnstable(reply);
        return reply;
    }

    /**
     * The maintenance operations (issue #25, part A), each at the "now" the Rust side pinned for
     * both logs ({@code now_ms}); the reply also carries {@code "files"}, every segment's base
     * offset and {@code .log} size.
     *
     * <ul>
     *   <li>{@code retention}: {@code deleteOldSegments} with {@code retention.ms} and
     *       {@code retention.bytes} set for this pass (cleanup.policy=delete), as LogManager's
     *       retention task runs it; the config goes back to the default after it.
     *   <li>{@code delete_records}: what {@code Partition.deleteRecordsOnLeader} does: -1 is the
     *       high watermark, another negative offset is an {@code OffsetOutOfRangeException}, then
     *       {@code maybeIncrementLogStartOffset} (which refuses an offset above the high
     *       watermark).
     *   <li>{@code truncate_fully}: {@code truncateFullyAndStartAt(offset, empty)}, then
     *       LogManager's cleaner-checkpoint rule.
     *   <li>{@code clean}: one round of Kafka's {@link Cleaner} as {@code LogCleaner} runs it for
     *       this log with cleanup.policy=compact, min.cleanable.dirty.ratio 0 and min.compaction.lag.ms
     *       0: {@code LogCleanerManager.cleanableOffsets} (first dirty offset from the checkpoint,
     *       reset to the log start when out of range; first uncleanable offset the minimum of the
     *       LSO and the active segment's base), a round only when its cleanable bytes are above 0
     *       (the ratio above 0), {@code Cleaner.doClean(LogToClean, now)}, and the checkpoint
     *       moves to the round's end.
     *   <li>{@code crash}: the log is dropped as a crash leaves it: {@code UnifiedLog.close()}
     *       without {@code prepareActiveSegmentForClose} (the producer snapshot it takes is
     *       removed again: a crash writes none), the active {@code .log} optionally cut
     *       {@code tear_back} bytes short (a torn, unflushed tail), then {@code UnifiedLog.create}
     *       with {@code hadCleanShutdown=false}, the recovery point the base of the segment
     *       {@code lag} segments before the active one, the log start as checkpointed, and the
     *       high watermark restored as {@code Partition} does.
     * </ul>
     */
    private void maintenance(String cmd, JsonNode r, ObjectNode reply) throws Exception {
        long now = r.path("now_ms").asLong();
        // Pinned for the whole request by the main loop (the held clock); pinned here too for
        // a request without it.
        time.pin(now);
        switch (cmd) {
            case "retention" -> {
                Map<String, Object> overrides = new HashMap<>();
                overrides.put("retention.ms", r.path("retention_ms").asLong());
                overrides.put("retention.bytes", r.path("retention_bytes").asLong());
                log.updateConfig(configWith(overrides));
                staleRetention(reply, now, r.path("retention_ms").asLong());
                try {
                    refusable(reply, () -> log.deleteOldSegments());
                } finally {
                    log.updateConfig(configWith(Map.of()));
                }
            }
            case "delete_records" -> refusable(reply, () -> {
                long offset = r.path("offset").asLong();
                long converted = offset == -1 ? log.highWatermark() : offset;
                if (converted < 0) {
                    throw new org.apache.kafka.common.errors.OffsetOutOfRangeException(
                            "The offset " + converted + " for partition is not valid");
                }
                log.maybeIncrementLogStartOffset(converted, LogStartOffsetIncrementReason.ClientRecordDeletion);
            });
            case "truncate_fully" -> refusable(reply, () -> {
                log.truncateFullyAndStartAt(r.path("offset").asLong(), Optional.empty());
                cleanerCheckpointAtMost(log.activeSegment().baseOffset());
            });
            case "clean" -> clean(r, reply, now);
            case "crash" -> crash(r);
            default -> throw new IllegalArgumentException("unknown maintenance command `" + cmd + "`");
        }
        reply.set("files", files());
        reply.set("file_batches", fileBatches());
    }

    /** The log's config: the one {@link #create} uses, with {@code overrides}. */
    private LogConfig configWith(Map<String, Object> overrides) {
        Map<String, Object> props = new HashMap<>();
        props.put("internal.segment.bytes", segmentBytes);
        props.putAll(overrides);
        return new LogConfig(props);
    }

    /** LogManager's {@code maybeTruncateCleanerCheckpointToActiveSegmentBaseOffset}. */
    private void cleanerCheckpointAtMost(long offset) {
        if (cleanerCheckpoint.isPresent() && cleanerCheckpoint.get() > offset) cleanerCheckpoint = Optional.of(offset);
    }

    private void clean(JsonNode r, ObjectNode reply, long now) throws Exception {
        Map<String, Object> overrides = new HashMap<>();
        overrides.put("cleanup.policy", "compact");
        overrides.put("delete.retention.ms", r.path("delete_retention_ms").asLong());
        overrides.put("min.cleanable.dirty.ratio", 0.0);
        overrides.put("min.compaction.lag.ms", 0L);
        log.updateConfig(configWith(overrides));
        try {
            long logStart = log.logStartOffset();
            long checkpoint = cleanerCheckpoint.orElse(logStart);
            long firstDirty = checkpoint < logStart || checkpoint > log.logEndOffset() ? logStart : checkpoint;
            long uncleanable = Math.max(firstDirty, Math.min(log.lastStableOffset(), log.activeSegment().baseOffset()));
            LogToClean cleanable = new LogToClean(log, firstDirty, uncleanable, false);
            // LogCleanerManager.grabFilthiestCompactedLog: totalBytes > 0 and the ratio above
            // min.cleanable.dirty.ratio (0).
            if (cleanable.totalBytes() > 0 && cleanable.cleanableRatio() > 0.0) {
                if (cleaner == null) {
                    // LogCleaner's construction for one thread, with a 4 MiB offset map (the
                    // histories have 7 keys) and Kafka's other defaults.
                    cleaner = new Cleaner(0, new SkimpyOffsetMap(4 << 20), 256 * 1024, 1048588, 0.9,
                            new Throttler(Double.MAX_VALUE, 300, "cleaner-io", "bytes", time), time, tp -> {});
                }
                long end = cleaner.doClean(cleanable, now).getKey();
                cleanerCheckpoint = Optional.of(end);
                reply.put("cleaned_to", end);
            }
        } finally {
            log.updateConfig(configWith(Map.of()));
        }
    }

    private void crash(JsonNode r) throws Exception {
        long logStart = log.logStartOffset();
        long highWatermark = log.highWatermark();
        List<Long> bases = new ArrayList<>();
        for (var segment : log.logSegments()) bases.add(segment.baseOffset());
        int lag = r.path("lag").asInt(-1);
        long recoveryPoint = lag < 0 ? log.logEndOffset() : bases.get(Math.max(0, bases.size() - 1 - lag));
        Path active = log.activeSegment().log().file().toPath();
        java.util.Set<Path> snapshots = snapshots();
        log.close();
        for (Path p : snapshots()) {
            if (!snapshots.contains(p)) Files.delete(p);
        }
        long tearBack = r.path("tear_back").asLong(0);
        if (tearBack > 0) {
            try (var channel = java.nio.channels.FileChannel.open(active, java.nio.file.StandardOpenOption.WRITE)) {
                channel.truncate(Math.max(0, channel.size() - tearBack));
            }
        }
        log = create(logStart, recoveryPoint, false);
        log.updateHighWatermark(highWatermark);
    }

    private java.util.Set<Path> snapshots() throws IOException {
        try (var files = Files.list(dir)) {
            return files.filter(p -> p.getFileName().toString().endsWith(".snapshot"))
                    .collect(java.util.stream.Collectors.toSet());
        }
    }

    /**
     * Each segment's batches as its {@code .log} holds them: base offset, last offset, codec
     * id, records, key and value bytes (the records, whatever bytes a compressor made of them),
     * magic, and 1 when it carries a KIP-534 delete horizon (else 0).
     */
    private ArrayNode fileBatches() {
        ArrayNode out = KafkaBench.JSON.createArrayNode();
        for (var segment : log.logSegments()) {
            ArrayNode batches = out.addArray();
            try {
                for (RecordBatch b : segment.log().batches()) {
                    long records = 0;
                    long payload = 0;
                    for (org.apache.kafka.common.record.internal.Record rec : b) {
                        records++;
                        payload += Math.max(0, rec.keySize()) + Math.max(0, rec.valueSize());
                    }
                    ArrayNode a = batches.addArray();
                    a.add(b.baseOffset());
                    a.add(b.lastOffset());
                    a.add(b.compressionType().id);
                    a.add(records);
                    a.add(payload);
                    a.add(b.magic());
                    a.add(b.deleteHorizonMs().isPresent() ? 1 : 0);
                }
            } catch (Exception e) {
                ArrayNode a = batches.addArray();
                for (int i = 0; i < 7; i++) a.add(-1);
            }
        }
        return out;
    }

    private ArrayNode files() {
        ArrayNode files = KafkaBench.JSON.createArrayNode();
        for (var segment : log.logSegments()) {
            ArrayNode f = files.addArray();
            f.add(segment.baseOffset());
            f.add(segment.size());
        }
        return files;
    }

    /**
     * {@code UnifiedLog.appendAsFollower} of the batches in {@code hex}, as the replica of a
     * leader epoch no batch exceeds (so no batch is skipped as from a newer leader). The first
     * offset is in the reply only when the first batch is v2 (Kafka's {@code LogAppendInfo}
     * has none for a legacy first batch).
     */
    private void appendAsFollower(JsonNode r, ObjectNode reply) {
        MemoryRecords records = MemoryRecords.readableRecords(
                ByteBuffer.wrap(HexFormat.of().parseHex(r.path("hex").asText())));
        refusable(reply, () -> {
            // The replica's leader epoch when the history gives one (batches of a higher epoch
            // are skipped), else no limit.
            int leaderEpoch = r.has("leader_epoch") ? r.path("leader_epoch").asInt() : Integer.MAX_VALUE;
            LogAppendInfo info = log.appendAsFollower(records, leaderEpoch);
            if (info.firstOffset() != -1L) reply.put("first_offset", info.firstOffset());
            reply.put("last_offset", info.lastOffset());
        });
    }

    /** A marker batch appended as WriteTxnMarkers does, under {@code transaction_version}. */
    private void appendMarker(JsonNode r, ObjectNode reply) {
        MemoryRecords records = MemoryRecords.readableRecords(
                ByteBuffer.wrap(HexFormat.of().parseHex(r.path("hex").asText())));
        short version = (short) r.path("transaction_version").asInt();
        int leaderEpoch = leaderEpoch(r);
        refusable(reply, () -> {
            LogAppendInfo info = log.appendAsLeader(records, leaderEpoch, AppendOrigin.COORDINATOR,
                    RequestLocal.noCaching(), VerificationGuard.SENTINEL, version);
            reply.put("first_offset", info.firstOffset());
            reply.put("last_offset", info.lastOffset());
        });
    }

    /** {@code fetchOffsetByTimestamp} (no remote storage) of {@code timestamp}. */
    private void offsetForTimestamp(JsonNode r, ObjectNode reply) {
        long target = r.path("timestamp").asLong();
        refusable(reply, () -> {
            var found = log.fetchOffsetByTimestamp(target, Optional.empty()).timestampAndOffsetOpt();
            // Which segment searchOffsetInLocalLog searched: the first whose largestTimestamp()
            // (the file's mtime for a segment without batches) reaches the target.
            if (target >= 0) {
                boolean skippedStale = false;
                for (var segment : log.logSegments()) {
                    if (segment.largestTimestamp() < target) {
                        // Skipped only because its maxTimestampSoFar() was forgotten (rule
                        // offset-for-timestamp-past-a-segment-whose-max-timestamp-kafka-forgot):
                        // its batches reach the target, its largestTimestamp() (the file's
                        // mtime once maxTimestampSoFar() is -1) does not. Only segments the
                        // search itself looked at, so no lazy load is triggered here.
                        long batches = segment.log().largestTimestampAfter(0).timestamp;
                        if (!skippedStale && batches >= target && segment.maxTimestampSoFar() < batches) {
                            skippedStale = true;
                            ArrayNode range = reply.putArray("skipped_stale_segment");
                            range.add(segment.baseOffset());
                            range.add(segment.readNextOffset());
                        }
                        continue;
                    }
                    if (segment.size() == 0) reply.put("searched_empty_segment", true);
                    reply.put("searched_segment_end", segment.readNextOffset());
                    break;
                }
            }
            if (target == -3L) maxTimestampFacts(reply);
            if (found.isPresent()) {
                ObjectNode t = reply.putObject("timestamp_lookup");
                t.put("timestamp", found.get().timestamp);
                t.put("offset", found.get().offset);
                if (found.get().leaderEpoch.isPresent()) t.put("leader_epoch", found.get().leaderEpoch.get());
                else t.putNull("leader_epoch");
            }
        });
    }

    /**
     * Before a retention pass (rule {@code time-retention-of-a-segment-whose-max-timestamp-kafka-forgot}):
     * the base offsets of the segments time retention keeps only because their
     * {@code maxTimestampSoFar()} is below their batches' largest max timestamp (so
     * {@code largestTimestamp()} is the file's mtime, or a lower value), while that largest
     * timestamp breaches {@code retention.ms} at {@code now}.
     */
    private void staleRetention(ObjectNode reply, long now, long retentionMs) throws IOException {
        if (retentionMs < 0) return;
        ArrayNode bases = reply.putArray("retention_kept_by_stale_max_timestamp");
        for (var segment : log.logSegments()) {
            long batches = segment.log().largestTimestampAfter(0).timestamp;
            if (batches >= 0 && segment.maxTimestampSoFar() < batches
                    && now - batches > retentionMs && !(now - segment.largestTimestamp() > retentionMs)) {
                bases.add(segment.baseOffset());
            }
        }
    }

    /**
     * For MAX_TIMESTAMP (rule {@code max-timestamp-of-a-segment-forgotten-by-a-truncation}):
     * the largest batch max timestamp any segment's batches hold, and whether some segment's
     * {@code maxTimestampSoFar()} (what the search picks its segment by) is below its own.
     */
    private void maxTimestampFacts(ObjectNode reply) throws IOException {
        long largest = -1L;
        boolean stale = false;
        for (var segment : log.logSegments()) {
            long batches = segment.log().largestTimestampAfter(0).timestamp;
            largest = Math.max(largest, batches);
            if (segment.maxTimestampSoFar() < batches) stale = true;
        }
        reply.put("batches_max_timestamp", largest);
        reply.put("max_timestamp_so_far_stale", stale);
    }

    /**
     * The epoch of a leader append: the request's, else the latest in the cache (0 for an
     * empty one), as a leader appends in the epoch it was elected in.
     */
    private int leaderEpoch(JsonNode r) {
        return r.has("leader_epoch") ? r.path("leader_epoch").asInt() : log.latestEpoch().orElse(0);
    }

    /**
     * The first unstable offset Kafka's ProducerStateManager will have after its next
     * high-watermark move at the current high watermark ({@code onHighWatermarkUpdated} drops
     * the completed transactions whose marker lies below it from {@code unreplicatedTxns}):
     * the earliest open transaction or completed one whose marker is at or above the high
     * watermark. Read by reflection (the maps are private); never compared, for the rule on
     * transactions a truncation's rebuild replays.
     */
    @SuppressWarnings("unchecked")
    private void settledFirstUnstable(ObjectNode reply) throws ReflectiveOperationException {
        var psm = log.producerStateManager();
        var unreplicated = psm.getClass().getDeclaredField("unreplicatedTxns");
        unreplicated.setAccessible(true);
        long hw = log.highWatermark();
        long first = Long.MAX_VALUE;
        for (var t : ((Map<Long, org.apache.kafka.storage.internals.log.TxnMetadata>) unreplicated.get(psm)).values()) {
            if (t.lastOffset.isPresent() && t.lastOffset.getAsLong() < hw) continue;
            first = Math.min(first, t.firstOffset.messageOffset);
        }
        var undecided = psm.firstUndecidedOffset();
        if (undecided.isPresent()) first = Math.min(first, undecided.getAsLong());
        if (first != Long.MAX_VALUE) reply.put("settled_first_unstable", first);
    }

    /** The leader-epoch cache's entries as (epoch, start offset) pairs. */
    private void leaderEpochs(ObjectNode s) {
        ArrayNode epochs = s.putArray("leader_epochs");
        for (var e : log.leaderEpochCache().epochEntries()) {
            ArrayNode a = epochs.addArray();
            a.add(e.epoch());
            a.add(e.startOffset());
        }
    }

    /** An operation Kafka may refuse with an exception: its class name goes in the reply. */
    private interface Op {
        void run() throws Exception;
    }

    /**
     * The runner's one roll check for several batches that Kafka refuses in one leader append
     * and the runner then appends one at a time (rule {@code several-batches-in-one-leader-append}):
     * {@code UnifiedLog.maybeRoll} as it runs once for a multi-batch set (a follower's), i.e.
     * {@code LogSegment.shouldRoll} with the whole set's size, its largest record timestamp and
     * the last offset the set would get, then {@code roll(Optional.of(log end))}. Without it the
     * one-at-a-time appends roll between batches where seglog's bulk append (one check for the
     * set, as Kafka's follower append) rolls before the first. Returns whether it rolled.
     */
    private boolean rollForSet(String hex) throws IOException {
        MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(HexFormat.of().parseHex(hex)));
        long maxTimestamp = RecordBatch.NO_TIMESTAMP;
        long count = 0;
        for (RecordBatch batch : records.batches()) {
            count += batch.lastOffset() - batch.baseOffset() + 1;
            for (org.apache.kafka.common.record.internal.Record record : batch) {
                maxTimestamp = Math.max(maxTimestamp, record.timestamp());
            }
        }
        long firstOffset = log.logEndOffset();
        var params = new org.apache.kafka.storage.internals.log.RollParams(log.config().maxSegmentMs(),
                log.config().segmentSize(), maxTimestamp, firstOffset + count - 1, records.sizeInBytes(),
                time.milliseconds());
        if (!log.activeSegment().shouldRoll(params)) return false;
        log.roll(Optional.of(firstOffset));
        return true;
    }

    private static void refusable(ObjectNode reply, Op op) {
        try {
            op.run();
        } catch (Exception e) {
            // ReplicaManager answers a RecordValidationException with the error it wraps.
            Exception answered = e instanceof org.apache.kafka.storage.internals.log.RecordValidationException rve
                    ? rve.invalidException() : e;
            reply.put("refused", answered.getClass().getSimpleName());
            reply.put("message", String.valueOf(e.getMessage()));
            // Not a refusal Kafka's protocol knows: keep its trace in the driver's log.
            if (!(e instanceof org.apache.kafka.common.errors.ApiException)) e.printStackTrace();
        }
    }

    /**
     * The scheduler as a broker restart leaves it: the tasks already due run (the leader-epoch
     * cache's asynchronous flushes), the delayed ones (segment and snapshot deletions after
     * {@code file.delete.delay.ms}, 60 s) go with the old executor, and the next load deletes
     * their {@code .deleted} files itself. Otherwise a deletion an earlier log instance of this
     * directory scheduled runs while {@code LogLoader.removeTempFilesAndCollectSwapFiles} lists
     * it, and a file vanishing between its {@code isFile} and {@code canRead} fails the load
     * ("Could not read file .../00000000000000000000.index.deleted", which ended shard b of the
     * first long run; not reproducible by its seeds, a race with the wall clock).
     */
    private void restartScheduler() throws IOException {
        try {
            scheduler.scheduleOnce("seglog-diff-drain", () -> { }, 0L).get();
            scheduler.shutdown();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("restarting the scheduler", e);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IOException("restarting the scheduler", e);
        }
        scheduler.startup();
    }

    private UnifiedLog create(long logStart, long recoveryPoint, boolean clean) throws IOException {
        restartScheduler();
        Files.createDirectories(dir);
        Map<String, Object> props = new HashMap<>();
        props.put("internal.segment.bytes", segmentBytes);
        // Otherwise Kafka's defaults, as seglog's LogConfig::default() (segment.ms 7 days: no
        // time-based roll within a history; retention never runs in-process).
        UnifiedLog opened = UnifiedLog.create(dir.toFile(), new LogConfig(props), logStart, recoveryPoint, scheduler, stats, time, 60000,
                new ProducerStateManagerConfig(86400000, false), 600000, new LogDirFailureChannel(1), clean,
                Optional.empty());
        return opened;
    }

    private ObjectNode fetch(long offset, FetchIsolation isolation) {
        ObjectNode out = KafkaBench.JSON.createObjectNode();
        try {
            FetchDataInfo info = log.read(offset, 1 << 20, isolation, true);
            ArrayNode batches = out.putArray("batches");
            for (RecordBatch b : info.records.batches()) {
                ArrayNode a = batches.addArray();
                a.add(b.baseOffset());
                a.add(b.lastOffset());
                a.add(b.isControlBatch());
            }
            if (info.abortedTransactions.isPresent()) {
                ArrayNode aborted = out.putArray("aborted");
                for (FetchResponseData.AbortedTransaction t : info.abortedTransactions.get()) {
                    ArrayNode a = aborted.addArray();
                    a.add(t.producerId());
                    a.add(t.firstOffset());
                }
            }
        } catch (Exception e) {
            out.put("refused", e.getClass().getSimpleName());
            out.put("message", String.valueOf(e.getMessage()));
        }
        return out;
    }

    private ObjectNode state() {
        ObjectNode s = KafkaBench.JSON.createObjectNode();
        s.put("log_start", log.logStartOffset());
        s.put("log_end", log.logEndOffset());
        s.put("high_watermark", log.highWatermark());
        Optional<Long> unstable = log.firstUnstableOffset();
        if (unstable.isPresent()) s.put("first_unstable", unstable.get());
        else s.putNull("first_unstable");
        s.put("last_stable", log.lastStableOffset());
        ArrayNode segments = s.putArray("segments");
        for (var segment : log.logSegments()) segments.add(segment.baseOffset());
        leaderEpochs(s);
        ArrayNode producers = s.putArray("producers");
        Map<Long, ProducerStateEntry> sorted = new TreeMap<>(log.producerStateManager().activeProducers());
        for (ProducerStateEntry e : sorted.values()) {
            ObjectNode p = producers.addObject();
            p.put("producer_id", e.producerId());
            p.put("epoch", e.producerEpoch());
            p.put("coordinator_epoch", e.coordinatorEpoch());
            List<BatchMetadata> batches = new ArrayList<>(e.batchMetadata());
            p.put("last_sequence", batches.isEmpty() ? -1 : batches.get(batches.size() - 1).lastSeq());
            p.put("last_offset", batches.isEmpty() ? -1 : batches.get(batches.size() - 1).lastOffset());
            if (e.currentTxnFirstOffset().isPresent()) p.put("txn_first_offset", e.currentTxnFirstOffset().getAsLong());
            else p.putNull("txn_first_offset");
        }
        return s;
    }

    private void closeLog() {
        if (log == null) return;
        try {
            log.close();
            restartScheduler();
        } catch (Exception e) {
            System.err.println("diff driver: closing the log: " + describe(e));
        }
        log = null;
        // The leader-epoch cache's asynchronous flushes (truncateFromEndAsyncFlush, on the
        // scheduler's thread) may still write leader-epoch-checkpoint.tmp while the tree is
        // walked: a file vanishing under the walk is retried.
        for (int attempt = 1; ; attempt++) {
            try {
                Fs.deleteTree(dir);
                return;
            } catch (IOException | java.io.UncheckedIOException e) {
                if (attempt == 5) {
                    System.err.println("diff driver: deleting " + dir + ": " + describe(e));
                    return;
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private static ObjectNode ok() {
        ObjectNode r = KafkaBench.JSON.createObjectNode();
        r.put("ok", true);
        return r;
    }

    private static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder(e.toString());
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) sb.append(" <- ").append(c);
        StackTraceElement[] trace = e.getStackTrace();
        if (trace.length > 0) sb.append(" at ").append(trace[0]);
        return sb.toString();
    }
}
