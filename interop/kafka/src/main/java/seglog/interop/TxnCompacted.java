package seglog.interop;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

/**
 * The {@code txn-compacted} topic of scenario 1 (issue #25 finding 3): a compacted topic written
 * by three transactional producers (transactions v2: the producer epoch is bumped at every
 * transaction end) committing and aborting, and a plain idempotent producer between them, while
 * the broker's cleaner runs several rounds (aborted data removed while its ABORT marker stays;
 * markers and tombstones removed after {@code delete.retention.ms}). It ends with one transaction
 * left open, so the last stable offset is below the log end. Then seglog must read what Kafka's
 * consumers read (read_committed and read_uncommitted), on a copy taken while the broker runs and
 * on the directory after its clean shutdown.
 */
final class TxnCompacted {
    static final String TOPIC = "txn-compacted";
    /** Production phases; the harness waits for a cleaner round after each. */
    static final int PHASES = 3;
    /** Transactions per producer and phase. */
    static final int ROUNDS = 6;
    static final int PRODUCERS = 3;
    /**
     * {@code -Dseglog.txnCompacted.variant=N} (default 0, what CI and the fixture use): other
     * abort patterns and phase lengths, and (N > 0) producer 2's transactions span two rounds.
     */
    static final int VARIANT = Integer.getInteger("seglog.txnCompacted.variant", 0);
    /** The fixture's directory name, beside {@code tests/fixtures/kafka-4.4}. */
    static final String FIXTURE = "kafka-4.4-txn-compacted";

    private final Report report;
    private final Broker broker;
    /** The producer whose last transaction stays open until the broker has stopped. */
    private KafkaProducer<byte[], byte[]> open;

    TxnCompacted(Report report, Broker broker) {
        this.report = report;
        this.broker = broker;
    }

    /** The topic's configs: 4 KiB segments, a cleaner that runs at once and forgets tombstones and markers soon. */
    static Map<String, String> config() {
        Map<String, String> c = BrokerScenario.base("4096");
        c.put("cleanup.policy", "compact");
        c.put("min.cleanable.dirty.ratio", "0.01");
        c.put("delete.retention.ms", "1500");
        return c;
    }

    static BrokerScenario.Topic topic() {
        return new BrokerScenario.Topic(TOPIC, config(), Map.of(), "txn-compacted");
    }

    /**
     * Checks the broker runs transactions v2 (the finalized {@code transaction.version}), then
     * writes the phases, waiting after each until the cleaner has cleaned up to the active
     * segment, and leaves one transaction open.
     */
    void produce(Admin admin, Gen gen) throws Exception {
        FeatureMetadata features = admin.describeFeatures().featureMetadata().get(60, TimeUnit.SECONDS);
        FinalizedVersionRange tv = features.finalizedFeatures().get("transaction.version");
        report.check(tv != null && tv.maxVersionLevel() >= 2, TOPIC + ": the broker's finalized transaction.version is "
                + (tv == null ? "absent" : tv.maxVersionLevel()) + ", transactions v2 (level 2) is needed: "
                + features.finalizedFeatures());
        List<KafkaProducer<byte[], byte[]>> txn = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> plain = Clients.producer(broker.bootstrap(), Map.of())) {
            for (int j = 0; j < PRODUCERS; j++) {
                Map<String, Object> c = new HashMap<>();
                c.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "seglog-interop-txn-compacted-" + j);
                if (j == 1) c.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
                KafkaProducer<byte[], byte[]> p = Clients.producer(broker.bootstrap(), c);
                txn.add(p);
                p.initTransactions();
            }
            int cleanedRounds = 0;
            for (int phase = 0; phase < PHASES; phase++) {
                for (int round = 0; round < ROUNDS + VARIANT % 3; round++) {
                    for (int j = 0; j < PRODUCERS; j++) if (!spansRounds(j) || round % 2 == 0) txn.get(j).beginTransaction();
                    for (int i = 0; i < 8; i++) {
                        for (KafkaProducer<byte[], byte[]> p : txn) p.send(gen.nextCompacted());
                        if (i % 2 == 0) plain.send(gen.nextCompacted());
                        if (i % 4 == 3) {
                            for (KafkaProducer<byte[], byte[]> p : txn) p.flush();
                            plain.flush();
                        }
                    }
                    for (int j = 0; j < PRODUCERS; j++) {
                        if (spansRounds(j) && round % 2 == 0 && round + 1 < ROUNDS + VARIANT % 3) continue;
                        // Every producer aborts some: producer j aborts the rounds r with (r + j + phase) % 3 == 0.
                        if ((round + j + phase + VARIANT) % 3 == 0) txn.get(j).abortTransaction();
                        else txn.get(j).commitTransaction();
                    }
                }
                plain.flush();
                BrokerScenario.waitForCleaner(report, broker, TOPIC);
                cleanedRounds = cleanerRounds();
                // Past delete.retention.ms: the next round may drop markers and tombstones it stamped.
                Thread.sleep(1600);
            }
            report.check(cleanedRounds >= PHASES, TOPIC + ": the broker's cleaner cleaned it " + cleanedRounds
                    + " times, the scenario needs " + PHASES + " rounds");
            Log.info(TOPIC + ": " + cleanedRounds + " cleaner rounds");
            // One transaction left open: the last stable offset stays below the log end.
            open = txn.remove(0);
            open.beginTransaction();
            for (int i = 0; i < 5; i++) open.send(gen.nextCompacted());
            open.flush();
            for (int i = 0; i < 5; i++) plain.send(gen.nextCompacted()).get();
        } finally {
            for (KafkaProducer<byte[], byte[]> p : txn) p.close(Duration.ofSeconds(30));
        }
    }

    /** Whether producer {@code j}'s transactions span two rounds (ended in the odd ones). */
    private static boolean spansRounds(int j) {
        return VARIANT > 0 && j == 2;
    }

    /**
     * Waits until the cleaner is idle on the topic: every round the broker's log began has
     * ended, and none began for 2 s (at most 60 s). Returns the number of finished rounds. The
     * final appends can roll a segment, and the cleaner then cleans it; a copy or a consumer
     * read during such a round sees another moment than the other.
     */
    int waitForIdleCleaner() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        int last = -1;
        long stableSince = System.nanoTime();
        while (System.nanoTime() < deadline) {
            int begun = broker.grepLastLog("Beginning cleaning of log " + TOPIC + "-0").size();
            int done = cleanerRounds();
            if (begun != done || done != last) {
                last = begun == done ? done : -1;
                stableSince = System.nanoTime();
            } else if (System.nanoTime() - stableSince > TimeUnit.SECONDS.toNanos(2)) {
                return done;
            }
            Thread.sleep(200);
        }
        report.fail(TOPIC + ": the broker's cleaner did not come to rest in 60 s\n" + broker.tail());
        return last;
    }

    /** How often the broker's log says it cleaned the topic's partition. */
    int cleanerRounds() throws Exception {
        return (int) broker.grepLastLog("cleaned log " + TOPIC + "-0").stream().count();
    }

    /** Kafka's last stable offset (ListOffsets LATEST, read_committed) of the partition. */
    static long lastStableOffset(Admin admin) throws Exception {
        TopicPartition tp = new TopicPartition(TOPIC, 0);
        return admin.listOffsets(Map.of(tp, OffsetSpec.latest()), new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
                .partitionResult(tp).get().offset();
    }

    /** Closes the producer of the open transaction without ending it (call after the broker stopped). */
    void abandonOpenTransaction() {
        if (open != null) open.close(Duration.ZERO);
        open = null;
    }

    /**
     * seglog on {@code dir} against what Kafka said while it ran: read_committed and
     * read_uncommitted records, the last stable offset and open transactions of {@code info}.
     * {@code live} is a copy taken while the broker ran (unclean: seglog recovers it in memory).
     */
    static void compare(Report report, Seglog seglog, Path dir, Expect uncommitted, List<Rec> committed, long lso,
            boolean live) throws Exception {
        String where = dir + (live ? " (copied while the broker ran)" : "");
        if (live) {
            Compare.partition(report, seglog, dir, uncommitted, false);
        }
        Seglog.Run r = seglog.run(List.of("read", dir.toString(), "--isolation", "read-committed", "--json", "--encoding",
                "hex", "--quiet"));
        if (report.check(r.code() == 0, "`" + r.command() + "` exited " + r.code() + ": " + r.stderr())) {
            List<Rec> ours = new ArrayList<>();
            for (var n : r.lines()) ours.add(Rec.of(n));
            Compare.records(report, where + " read_committed (Kafka's consumer vs `seglog read --isolation read-committed`)",
                    committed, ours);
        }
        var info = seglog.info(dir);
        report.equal(lso, info.path("last_stable_offset").asLong(), where + ": last stable offset (ListOffsets LATEST"
                + " read_committed vs info)");
        report.equal(1, info.path("ongoing_transactions").size(), where + ": open transactions in `seglog info` "
                + info.path("ongoing_transactions"));
        Log.info(where + ": " + committed.size() + " read_committed and " + uncommitted.records().size()
                + " read_uncommitted records, LSO " + lso + ", log end " + uncommitted.latest());
    }

    /**
     * The fixture: the partition directory as the stopped broker left it, Kafka's consumers'
     * records ({@code read_committed.jsonl}, {@code read_uncommitted.jsonl}, in the shape of
     * {@code seglog read --json --encoding hex}) and its ListOffsets answers ({@code kafka.json}).
     */
    static void writeFixture(Path to, Path dir, Expect uncommitted, List<Rec> committed, long lso) throws Exception {
        Fs.deleteTree(to);
        Fs.copyTree(dir, to.resolve(TOPIC + "-0"));
        java.nio.file.Files.writeString(to.resolve("read_committed.jsonl"), jsonLines(committed));
        java.nio.file.Files.writeString(to.resolve("read_uncommitted.jsonl"), jsonLines(uncommitted.records()));
        var o = Seglog.JSON.createObjectNode();
        o.put("dir", TOPIC + "-0");
        o.put("log_start_offset", uncommitted.earliest());
        o.put("log_end_offset", uncommitted.latest());
        o.put("last_stable_offset", lso);
        o.put("open_transactions", 1);
        var cfg = o.putObject("topic_config");
        config().forEach(cfg::put);
        java.nio.file.Files.writeString(to.resolve("kafka.json"), Seglog.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(o) + "\n");
        Log.info(TOPIC + ": fixture written to " + to);
    }

    private static String jsonLines(List<Rec> recs) throws Exception {
        StringBuilder sb = new StringBuilder();
        for (Rec r : recs) sb.append(Seglog.JSON.writeValueAsString(r.toJson())).append('\n');
        return sb.toString();
    }

    /** A copy of the partition directory taken while the broker runs (a file at a time, as a backup tool would). */
    static Path liveCopy(Broker broker, Path to) throws Exception {
        Path dir = broker.logDir.resolve(TOPIC + "-0");
        Fs.deleteTree(to);
        Fs.copyTree(dir, to);
        return to;
    }
}
