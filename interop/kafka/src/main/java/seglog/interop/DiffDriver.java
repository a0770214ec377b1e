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
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.BatchMetadata;
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
                    reply = exit ? ok() : driver.handle(cmd, request);
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
            case "truncate" -> refusable(reply, () -> log.truncateTo(r.path("offset").asLong()));
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
            case "follower" -> appendAsFollower(r, reply);
            case "marker_tv" -> appendMarker(r, reply);
            case "offset_for_timestamp" -> offsetForTimestamp(r, reply);
            case "become_leader" -> refusable(reply, () -> log.assignEpochStartOffset(
                    log.latestEpoch().map(e -> e + 1).orElse(0), log.logEndOffset()));
            case "expire" -> refusable(reply, () -> log.removeExpiredProducers(r.path("now").asLong()));
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
     * {@code UnifiedLog.appendAsFollower} of the batches in {@code hex}, as the replica of a
     * leader epoch no batch exceeds (so no batch is skipped as from a newer leader). The first
     * offset is in the reply only when the first batch is v2 (Kafka's {@code LogAppendInfo}
     * has none for a legacy first batch).
     */
    private void appendAsFollower(JsonNode r, ObjectNode reply) {
        MemoryRecords records = MemoryRecords.readableRecords(
                ByteBuffer.wrap(HexFormat.of().parseHex(r.path("hex").asText())));
        refusable(reply, () -> {
            LogAppendInfo info = log.appendAsFollower(records, Integer.MAX_VALUE);
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
                for (var segment : log.logSegments()) {
                    if (segment.largestTimestamp() < target) continue;
                    if (segment.size() == 0) reply.put("searched_empty_segment", true);
                    break;
                }
            }
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

    private UnifiedLog create(long logStart, long recoveryPoint, boolean clean) throws IOException {
        Files.createDirectories(dir);
        Map<String, Object> props = new HashMap<>();
        props.put("internal.segment.bytes", segmentBytes);
        // Otherwise Kafka's defaults, as seglog's LogConfig::default() (segment.ms 7 days: no
        // time-based roll within a history; retention never runs in-process).
        UnifiedLog opened = UnifiedLog.create(dir.toFile(), new LogConfig(props), logStart, recoveryPoint, scheduler, stats, Time.SYSTEM, 60000,
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
