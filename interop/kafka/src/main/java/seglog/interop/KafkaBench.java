package seglog.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * Kafka 4.4's storage code as a contender in {@code cargo xtask bench} (issue #19): a server that
 * the Rust harness ({@code benches/src/kafka_contender.rs}) starts once and drives over stdin and
 * stdout, one JSON object per line each way, so that Kafka's runs take their turn in the same
 * interleaved rounds as seglog's.
 *
 * <p>Requests: {@code setup} (build a trial from workload parameters and files the Rust side
 * wrote, then warm the JIT with untimed runs), {@code prepare}, {@code run} (the only timed step:
 * the reply carries the time measured here, around the operation only), {@code cleanup},
 * {@code close} (free a trial or a shared log), {@code exit}. Every reply has {@code "ok"}; a
 * failure has {@code "error"} and the server goes on. Nothing else writes to stdout: Kafka's own
 * logging goes to stderr ({@code log4j2.properties}) and {@code System.out} is redirected there.
 *
 * <p>Time is wall-clock minus the measuring thread's runqueue wait, read from
 * {@code /proc/thread-self/schedstat} as the Rust harness does for its own contenders.
 */
public final class KafkaBench {
    static final ObjectMapper JSON = new ObjectMapper();

    private final Map<Long, KafkaTrials.Trial> trials = new HashMap<>();
    private final Map<Long, KafkaTrials.SharedLog> logs = new HashMap<>();
    private final KafkaScheduler scheduler = new KafkaScheduler(1, true, "seglog-bench-");
    private final BrokerTopicStats stats = new BrokerTopicStats();
    private long nextId = 1;

    private KafkaBench() {}

    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        KafkaBench bench = new KafkaBench();
        bench.scheduler.startup();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ObjectNode hello = JSON.createObjectNode();
        hello.put("ok", true);
        hello.put("kafka", org.apache.kafka.common.utils.internals.AppInfoParser.getVersion());
        hello.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        protocol.println(JSON.writeValueAsString(hello));
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) continue;
                ObjectNode reply;
                boolean exit = false;
                try {
                    JsonNode request = JSON.readTree(line);
                    String cmd = request.path("cmd").asText();
                    exit = cmd.equals("exit");
                    reply = exit ? ok() : bench.handle(cmd, request);
                } catch (Exception | AssertionError e) {
                    reply = JSON.createObjectNode();
                    reply.put("ok", false);
                    reply.put("error", describe(e));
                }
                protocol.println(JSON.writeValueAsString(reply));
                if (exit) break;
            }
        } finally {
            bench.closeAll();
            bench.scheduler.shutdown();
        }
        // KafkaScheduler and the metrics leave non-daemon threads behind.
        System.exit(0);
    }

    private ObjectNode handle(String cmd, JsonNode request) throws Exception {
        return switch (cmd) {
            case "log" -> {
                KafkaTrials.SharedLog log = KafkaTrials.SharedLog.build(path(request, "dir"), path(request, "image"),
                        request.path("records").asLong(), scheduler, stats);
                long id = nextId++;
                logs.put(id, log);
                ObjectNode r = ok();
                r.put("id", id);
                yield r;
            }
            case "setup" -> {
                KafkaTrials.Trial trial = setup(request);
                long id = nextId++;
                trials.put(id, trial);
                ObjectNode r = ok();
                r.put("id", id);
                var warmups = r.putArray("warmup_ns");
                int runs = request.path("warmup").asInt(2);
                try {
                    for (int i = 0; i < runs; i++) {
                        trial.prepare();
                        long[] t = timed(trial);
                        trial.cleanup();
                        warmups.add(t[0]);
                    }
                } catch (Exception | AssertionError e) {
                    trials.remove(id);
                    try {
                        trial.close();
                    } catch (Exception closing) {
                        e.addSuppressed(closing);
                    }
                    throw e;
                }
                yield r;
            }
            case "prepare" -> {
                trial(request).prepare();
                yield ok();
            }
            case "run" -> {
                KafkaTrials.Trial trial = trial(request);
                long[] t = timed(trial);
                ObjectNode r = ok();
                r.put("elapsed_ns", t[0]);
                r.put("wall_ns", t[1]);
                r.put("runqueue_wait_ns", t[2]);
                r.put("records", t[3]);
                r.put("payload_bytes", t[4]);
                yield r;
            }
            case "cleanup" -> {
                trial(request).cleanup();
                yield ok();
            }
            case "close" -> {
                long id = request.path("id").asLong();
                KafkaTrials.Trial trial = trials.remove(id);
                if (trial != null) trial.close();
                KafkaTrials.SharedLog log = logs.remove(id);
                if (log != null) log.close();
                if (trial == null && log == null) throw new IllegalArgumentException("no trial or log " + id);
                yield ok();
            }
            default -> throw new IllegalArgumentException("unknown command `" + cmd + "`");
        };
    }

    private KafkaTrials.Trial setup(JsonNode r) throws Exception {
        String kind = r.path("kind").asText();
        return switch (kind) {
            case "append" -> new KafkaTrials.Append(path(r, "dir"), path(r, "image"), r.path("records").asLong(),
                    r.path("payload_bytes").asLong(), scheduler, stats);
            case "scan" -> new KafkaTrials.Scan(shared(r), r.path("payload_bytes").asLong());
            case "point" -> new KafkaTrials.PointRead(shared(r), KafkaTrials.longs(path(r, "targets")),
                    r.path("record_bytes").asInt(), false);
            case "timestamp" -> new KafkaTrials.PointRead(shared(r), KafkaTrials.longs(path(r, "targets")),
                    r.path("record_bytes").asInt(), true);
            case "recovery" -> new KafkaTrials.Recovery(path(r, "pristine"), path(r, "dir"), r.path("records").asLong(),
                    r.path("payload_bytes").asLong(), scheduler, stats);
            case "floor" -> new KafkaTrials.FloorLookup(path(r, "index"), KafkaTrials.longs(path(r, "targets")));
            default -> throw new IllegalArgumentException("unknown trial kind `" + kind + "`");
        };
    }

    private KafkaTrials.SharedLog shared(JsonNode r) {
        long id = r.path("log").asLong();
        KafkaTrials.SharedLog log = logs.get(id);
        if (log == null) throw new IllegalArgumentException("no shared log " + id);
        return log;
    }

    private KafkaTrials.Trial trial(JsonNode r) {
        long id = r.path("id").asLong();
        KafkaTrials.Trial trial = trials.get(id);
        if (trial == null) throw new IllegalArgumentException("no trial " + id);
        return trial;
    }

    /** {elapsed (wall minus runqueue wait), wall, runqueue wait, records, payload bytes}. */
    private static long[] timed(KafkaTrials.Trial trial) throws Exception {
        long waitBefore = runqueueWaitNs();
        long start = System.nanoTime();
        KafkaTrials.Work work = trial.run();
        long wall = System.nanoTime() - start;
        long wait = Math.max(0, runqueueWaitNs() - waitBefore);
        return new long[] {Math.max(1, wall - wait), wall, wait, work.records(), work.payloadBytes()};
    }

    /** Nanoseconds this thread has been runnable but not running; 0 where the kernel does not say. */
    private static long runqueueWaitNs() throws IOException {
        try {
            String[] fields = Files.readString(Path.of("/proc/thread-self/schedstat")).trim().split("\\s+");
            return Long.parseLong(fields[1]);
        } catch (NoSuchFileException e) {
            return 0;
        }
    }

    private void closeAll() {
        for (KafkaTrials.Trial t : trials.values()) {
            try {
                t.close();
            } catch (Exception e) {
                System.err.println("kafka bench: closing a trial: " + describe(e));
            }
        }
        for (KafkaTrials.SharedLog l : logs.values()) {
            try {
                l.close();
            } catch (Exception e) {
                System.err.println("kafka bench: closing a log: " + describe(e));
            }
        }
    }

    private static Path path(JsonNode r, String field) {
        String value = r.path(field).asText("");
        if (value.isEmpty()) throw new IllegalArgumentException("`" + field + "` is required");
        return Path.of(value);
    }

    private static ObjectNode ok() {
        ObjectNode r = JSON.createObjectNode();
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
