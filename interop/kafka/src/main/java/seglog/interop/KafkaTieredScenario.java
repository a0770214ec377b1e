package seglog.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Scenario 5, a Kafka 4.4 broker's remote tier read by seglog. A single-node broker with
 * {@code remote.log.storage.system.enable=true} and Kafka's reference RemoteStorageManager,
 * {@code LocalTieredStorage} (kafka-storage 4.3.1's test jar, loaded by the broker's own
 * child-first loader through {@code remote.log.storage.manager.class.path}, with 4.3.1's
 * {@code LogContext}, which 4.4 moved), the default topic-based metadata manager (one partition,
 * replication factor 1), and a topic with {@code remote.storage.enable=true}, 16 KiB segments and
 * {@code local.retention.bytes=1}: an idempotent producer writes plain records, a transactional
 * one six transactions (every other aborted), then plain records again. The harness waits until
 * segments are in the remote directory and gone from the broker's disk (the broker's
 * local log start offset above 0), reads everything with Kafka's consumer (read_uncommitted and
 * read_committed; the broker serves the old offsets from its remote tier) and stops the broker
 * cleanly.
 *
 * <p>seglog's side: {@code seglog tier DIR --store file://REMOTE --adopt --json} (on a copy of the
 * remote directory) adopts the segments the broker tiered into seglog-tiered's metadata: they
 * must be exactly the {@code .log} files of the remote directory, contiguous from the log start
 * up to the broker's local log start offset. The partition directory, the remote directory and
 * the consumer's records are written to {@code OUT} ({@code target/kafka-tiered/} or the
 * fixture directory), where {@code cargo xtask kafka} then runs the seglog-tiered test
 * {@code kafka_tiered} (crates/tiered/tests/it/kafka_tiered.rs), which reads the partition across
 * both tiers through {@code Log} and requires Kafka's records (read_uncommitted and
 * read_committed) offset for offset.
 */
final class KafkaTieredScenario {
    static final String TOPIC = "kafka-tiered";
    private static final int TRANSACTIONS = 6;
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Report report;
    private final Seglog seglog;
    private final Path work;
    private final Path out;

    KafkaTieredScenario(Report report, Seglog seglog, Path work, Path out) {
        this.report = report;
        this.seglog = seglog;
        this.work = work;
        this.out = out;
    }

    void run() throws Exception {
        report.scope("kafka-tiered: seglog reads what a Kafka 4.4 broker tiered to LocalTieredStorage");
        Path root = work.resolve("kafka-tiered");
        Path remote = root.resolve("remote");
        String rsmPath = rsmClassPath(root);
        Map<String, String> extra = new HashMap<>();
        extra.put("remote.log.storage.system.enable", "true");
        extra.put("remote.log.storage.manager.class.name", "org.apache.kafka.server.log.remote.storage.LocalTieredStorage");
        extra.put("remote.log.storage.manager.class.path", rsmPath);
        extra.put("rsm.config.dir", remote.toAbsolutePath().toString());
        extra.put("rsm.config.delete.on.close", "false");
        extra.put("remote.log.metadata.manager.listener.name", "PLAINTEXT");
        extra.put("rlmm.config.remote.log.metadata.topic.replication.factor", "1");
        extra.put("rlmm.config.remote.log.metadata.topic.num.partitions", "1");
        extra.put("remote.log.manager.task.interval.ms", "300");
        TopicPartition tp = new TopicPartition(TOPIC, 0);
        long[] offsets;
        long localStart;
        List<Rec> uncommitted;
        List<Rec> committed;
        try (Broker broker = Broker.format(root.resolve("broker"), extra)) {
            broker.start();
            try (Admin admin = broker.admin()) {
                Map<String, String> config = new HashMap<>();
                config.put("remote.storage.enable", "true");
                config.put("internal.segment.bytes", "16384");
                config.put("index.interval.bytes", "1024");
                config.put("local.retention.bytes", "1");
                config.put("retention.ms", "-1");
                config.put("retention.bytes", "-1");
                admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1).configs(config))).all().get(60, TimeUnit.SECONDS);
                produce(broker.bootstrap());
                Path dir = broker.logDir.resolve(TOPIC + "-0");
                localStart = waitTiered(admin, tp, dir, remote);
                offsets = Clients.listOffsets(admin, tp);
            }
            uncommitted = Clients.consumeAll(broker.bootstrap(), tp, "read_uncommitted");
            committed = Clients.consumeAll(broker.bootstrap(), tp, "read_committed");
            broker.stopClean();
            Path dir = broker.logDir.resolve(TOPIC + "-0");
            report.check(localStart > 0, "the broker's local log start " + localStart + " is above 0: segments left its disk");
            report.equal(0L, offsets[0], "the broker's log start offset (EARLIEST)");
            report.equal((long) uncommitted.size() + TRANSACTIONS, offsets[1],
                    "the log end = the records Kafka's consumer read plus one marker per transaction");
            report.check(committed.size() < uncommitted.size(), "read_committed (" + committed.size()
                    + " records) skips the aborted transactions' records (" + uncommitted.size() + " read_uncommitted)");
            writeOut(dir, remote, uncommitted, committed, offsets, localStart);
        }
        adopt(localStart, offsets[1]);
    }

    /** The remote segments seglog adopted: the remote directory's, from 0 to the local log start. */
    private void adopt(long localStart, long logEnd) throws Exception {
        Path store = work.resolve("kafka-tiered").resolve("adopted");
        Fs.copyTree(out.resolve("remote"), store);
        Path dir = work.resolve("kafka-tiered").resolve(TOPIC + "-0");
        Fs.copyTree(out.resolve("broker").resolve(TOPIC + "-0"), dir);
        Seglog.Run run = seglog.run(List.of("tier", dir.toString(), "--store", "file://" + store.toAbsolutePath(), "--adopt", "--json"));
        if (!report.check(run.code() == 0, "seglog tier --adopt exit " + run.code() + ": " + run.stderr())) return;
        JsonNode adopted = run.first().get("adopted");
        TreeMap<Long, String> files = new TreeMap<>();
        try (Stream<Path> s = Files.walk(out.resolve("remote"))) {
            for (Path p : s.filter(p -> p.toString().endsWith(".log")).toList()) {
                String name = p.getFileName().toString();
                files.put(Long.parseLong(name.substring(0, 20)), name.substring(21, name.length() - 4));
            }
        }
        TreeMap<Long, String> got = new TreeMap<>();
        long next = 0;
        for (JsonNode a : adopted) {
            long base = a.get("base_offset").asLong();
            got.put(base, a.get("segment_id").asText());
            report.equal(next, base, "adopted segment " + base + " starts where the one before ended");
            next = a.get("end_offset").asLong() + 1;
        }
        report.equal(files, got, "seglog adopted exactly the remote directory's segments (base offset -> id)");
        report.check(files.size() >= 3, "the broker tiered " + files.size() + " segments, expected at least 3");
        report.check(next >= localStart, "the adopted segments reach the local log start " + localStart + " (end " + (next - 1) + ")");
        report.check(next <= logEnd, "the adopted segments end below the log end " + logEnd);
        // Adopting again changes nothing.
        Seglog.Run again = seglog.run(List.of("tier", dir.toString(), "--store", "file://" + store.toAbsolutePath(), "--adopt", "--json"));
        if (report.check(again.code() == 0, "seglog tier --adopt (again) exit " + again.code() + ": " + again.stderr())) {
            report.equal(0, again.first().get("adopted").size(), "a second --adopt adopts nothing");
        }
    }

    private void produce(String bootstrap) throws Exception {
        long t0 = System.currentTimeMillis() - 60_000;
        try (KafkaProducer<byte[], byte[]> p = Clients.producer(bootstrap, Map.of(ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true))) {
            for (int i = 0; i < 700; i++) send(p, i, t0 + i * 7L);
            p.flush();
        }
        try (KafkaProducer<byte[], byte[]> t = Clients.producer(bootstrap, Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "kafka-tiered-txn"))) {
            t.initTransactions();
            for (int round = 0; round < TRANSACTIONS; round++) {
                t.beginTransaction();
                for (int i = 0; i < 25; i++) send(t, 10_000 + round * 100 + i, t0 + 5_000 + round * 100L + i);
                if (round % 2 == 0) t.abortTransaction();
                else t.commitTransaction();
            }
        }
        try (KafkaProducer<byte[], byte[]> p = Clients.producer(bootstrap, Map.of(ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true))) {
            for (int i = 0; i < 300; i++) send(p, 20_000 + i, t0 + 10_000 + i * 3L);
            p.flush();
        }
    }

    private static void send(KafkaProducer<byte[], byte[]> p, int n, long timestamp) throws Exception {
        byte[] key = n % 11 == 0 ? null : ("k" + (n % 37)).getBytes(StandardCharsets.UTF_8);
        byte[] value = n % 23 == 0 ? null : ("v" + n + "-" + "x".repeat(40 + n % 60)).getBytes(StandardCharsets.UTF_8);
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(TOPIC, 0, timestamp, key, value);
        if (n % 5 == 0) r.headers().add("h", new byte[] {(byte) n, 0, (byte) 0xff});
        p.send(r).get(60, TimeUnit.SECONDS);
    }

    /**
     * Waits (at most 60 s) until the broker's local log start offset is above 0 and at least 3
     * segments are in the remote directory; returns the local log start (EARLIEST_LOCAL).
     */
    private long waitTiered(Admin admin, TopicPartition tp, Path dir, Path remote) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            long localStart = admin.listOffsets(Map.of(tp, OffsetSpec.earliestLocal())).partitionResult(tp).get().offset();
            long remoteLogs;
            try (Stream<Path> s = Files.exists(remote) ? Files.walk(remote) : Stream.empty()) {
                remoteLogs = s.filter(p -> p.toString().endsWith(".log")).count();
            }
            long lowestLocal = lowestLocalBase(dir);
            if (localStart > 0 && remoteLogs >= 3 && lowestLocal >= localStart) return localStart;
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the broker did not tier 3 segments and delete them locally in 60 s (local log start "
                        + localStart + ", " + remoteLogs + " remote .log files, lowest local segment " + lowestLocal + ")");
            }
            Thread.sleep(300);
        }
    }

    private static long lowestLocalBase(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".log"))
                    .mapToLong(n -> Long.parseLong(n.substring(0, 20))).min().orElse(-1);
        }
    }

    private void writeOut(Path dir, Path remote, List<Rec> uncommitted, List<Rec> committed, long[] offsets, long localStart)
            throws IOException {
        Fs.deleteTree(out);
        Files.createDirectories(out);
        Path broker = out.resolve("broker").resolve(TOPIC + "-0");
        Fs.copyTree(dir, broker);
        // The broker keeps its remote index cache in the log dir root, not here; nothing of the
        // remote tier belongs in the fixture's partition directory.
        Fs.copyTree(remote, out.resolve("remote"));
        writeJsonl(out.resolve("read_uncommitted.jsonl"), uncommitted);
        writeJsonl(out.resolve("read_committed.jsonl"), committed);
        ObjectNode o = JSON.createObjectNode();
        o.put("log_start_offset", offsets[0]);
        o.put("log_end_offset", offsets[1]);
        o.put("local_log_start_offset", localStart);
        Files.writeString(out.resolve("kafka.json"), JSON.writeValueAsString(o) + "\n", StandardCharsets.UTF_8);
    }

    private static void writeJsonl(Path file, List<Rec> recs) throws IOException {
        StringBuilder b = new StringBuilder();
        for (Rec r : recs) b.append(JSON.writeValueAsString(r.toJson())).append('\n');
        Files.writeString(file, b.toString(), StandardCharsets.UTF_8);
    }

    /**
     * The class path of the broker's RemoteStorageManager loader: kafka-storage 4.3.1's test jar
     * (LocalTieredStorage) and a directory of 4.3.1's {@code org.apache.kafka.common.utils.LogContext}
     * classes (4.4 moved the class; nothing else LocalTieredStorage needs is missing from 4.4).
     * Kafka's loader is child-first, so nothing else of 4.3.1 may be on it: its API classes would
     * shadow the broker's.
     */
    private static String rsmClassPath(Path root) throws Exception {
        Path classes = Path.of(KafkaTieredScenario.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path jars = classes.getParent().resolve("kafka-4.3.1");
        Path test = jars.resolve("kafka-storage-4.3.1-test.jar");
        Path clients = jars.resolve("kafka-clients-4.3.1.jar");
        if (!Files.exists(test) || !Files.exists(clients)) throw new IllegalStateException(jars + " lacks the Kafka 4.3.1 jars (mvn compile copies them)");
        Path logContext = root.resolve("rsm-logcontext");
        try (ZipInputStream zip = new ZipInputStream(Files.newInputStream(clients))) {
            for (ZipEntry e; (e = zip.getNextEntry()) != null; ) {
                if (!e.getName().startsWith("org/apache/kafka/common/utils/LogContext")) continue;
                Path target = logContext.resolve(e.getName());
                Files.createDirectories(target.getParent());
                Files.copy(zip, target);
            }
        }
        return test.toAbsolutePath() + java.io.File.pathSeparator + logContext.toAbsolutePath();
    }
}
