package seglog.interop;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Scenario 1, broker -> seglog: Kafka's producer writes, Kafka's consumer and ListOffsets
 * answer, then seglog opens the partition directories read-only and must answer the same.
 */
final class BrokerScenario {
    /** One topic of the scenario: its topic configs and the producer settings that fill it. */
    record Topic(String name, Map<String, String> config, Map<String, Object> producer, String kind) {}

    static final long RECORDS = 1200;

    private final Report report;
    private final Seglog seglog;
    private final Path work;

    BrokerScenario(Report report, Seglog seglog, Path work) {
        this.report = report;
        this.seglog = seglog;
        this.work = work;
    }

    static Map<String, String> base(String segmentBytes) {
        Map<String, String> c = new HashMap<>();
        // segment.bytes has a 1 MiB floor in 4.x; this test-only topic config goes lower.
        c.put("internal.segment.bytes", segmentBytes);
        c.put("index.interval.bytes", "1024");
        return c;
    }

    static List<Topic> topics() {
        List<Topic> t = new ArrayList<>();
        for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
            t.add(new Topic("codec-" + codec, base("16384"), Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec), "plain"));
        }
        t.add(new Topic("acks1-unbatched", base("16384"),
                Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false, ProducerConfig.ACKS_CONFIG, "1",
                        ProducerConfig.LINGER_MS_CONFIG, 0, ProducerConfig.BATCH_SIZE_CONFIG, 1), "plain"));
        Map<String, String> appendTime = base("16384");
        appendTime.put("message.timestamp.type", "LogAppendTime");
        t.add(new Topic("append-time", appendTime, Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4"), "plain"));
        t.add(new Topic("txn", base("16384"), Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "gzip"), "txn"));
        Map<String, String> compacted = base("8192");
        compacted.put("cleanup.policy", "compact");
        compacted.put("min.cleanable.dirty.ratio", "0.01");
        compacted.put("segment.ms", "1000");
        t.add(new Topic("compacted", compacted, Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "snappy"), "compacted"));
        Map<String, String> retention = base("8192");
        retention.put("retention.bytes", "40000");
        t.add(new Topic("retention", retention, Map.of(), "plain"));
        t.add(TxnCompacted.topic());
        return t;
    }

    /** The whole scenario; fixtures (when not null) receives copies of the partition directories. */
    void run(Path fixtures) throws Exception {
        cleanRun(fixtures, topics(), fixtures == null ? null : fixtures.resolveSibling(TxnCompacted.FIXTURE));
        killRun();
    }

    /**
     * Only the {@code txn-compacted} topic (issue #25 finding 3): {@code Main txn-compacted}, for
     * repeated runs; {@code fixture} (when not null) receives its directory and Kafka's answers.
     */
    void runTxnCompacted(Path fixture) throws Exception {
        cleanRun(null, List.of(TxnCompacted.topic()), fixture);
    }

    private void cleanRun(Path fixtures, List<Topic> topics, Path txnFixture) throws Exception {
        report.scope("broker->seglog, clean shutdown");
        boolean all = topics.size() > 1;
        TxnCompacted txnCompacted = null;
        Expect liveExpected = null;
        List<Rec> liveCommitted = null;
        long liveLso = -1;
        long stoppedLso = -1;
        Path live = work.resolve("s1-clean/live/" + TxnCompacted.TOPIC + "-0");
        Map<String, Expect> expected = new LinkedHashMap<>();
        Map<String, List<Rec>> committed = new LinkedHashMap<>();
        try (Broker broker = Broker.format(work.resolve("s1-clean"))) {
            broker.start();
            try (Admin admin = broker.admin()) {
                List<NewTopic> news = new ArrayList<>();
                for (Topic t : topics) news.add(new NewTopic(t.name(), 1, (short) 1).configs(t.config()));
                admin.createTopics(news).all().get(60, TimeUnit.SECONDS);
                long baseTs = System.currentTimeMillis() - 600_000;
                int seed = 0;
                for (Topic t : topics) {
                    seed++;
                    Gen gen = new Gen(t.name(), seed, baseTs);
                    switch (t.kind()) {
                        case "plain" -> producePlain(broker, t, gen);
                        case "txn" -> produceTransactional(broker, t, gen);
                        case "compacted" -> produceCompacted(broker, t, gen);
                        case "txn-compacted" -> {
                            txnCompacted = new TxnCompacted(report, broker);
                            txnCompacted.produce(admin, gen);
                        }
                        default -> throw new IllegalStateException(t.kind());
                    }
                }
                if (all) {
                    waitForRetention(admin, new TopicPartition("retention", 0));
                    waitForCleaner(broker, "compacted");
                }
                if (txnCompacted != null) {
                    // A copy while the broker runs, and what Kafka's consumers say at that moment:
                    // taken again if a cleaner round ran meanwhile.
                    for (int attempt = 0; ; attempt++) {
                        int rounds = txnCompacted.waitForIdleCleaner();
                        TxnCompacted.liveCopy(broker, live);
                        TopicPartition tp = new TopicPartition(TxnCompacted.TOPIC, 0);
                        liveExpected = expect(broker, admin, tp);
                        liveCommitted = Clients.consumeAll(broker.bootstrap(), tp, "read_committed");
                        liveLso = TxnCompacted.lastStableOffset(admin);
                        if (txnCompacted.waitForIdleCleaner() == rounds) break;
                        if (!report.check(attempt < 3, TxnCompacted.TOPIC + ": a cleaner round ran during each of 4 live copies")) break;
                        Log.info(TxnCompacted.TOPIC + ": a cleaner round ran during the live copy; copying again");
                    }
                }
                // The broker's own transaction log (compacted, written by the coordinator) is checked too.
                topics = new ArrayList<>(topics);
                topics.add(new Topic("__transaction_state", Map.of(), Map.of(), "internal"));
                for (Topic t : topics) {
                    TopicPartition tp = new TopicPartition(t.name(), 0);
                    expected.put(t.name(), expect(broker, admin, tp));
                    committed.put(t.name(), Clients.consumeAll(broker.bootstrap(), tp, "read_committed"));
                }
                if (txnCompacted != null) stoppedLso = TxnCompacted.lastStableOffset(admin);
            }
            broker.stopClean();
            if (txnCompacted != null) {
                txnCompacted.abandonOpenTransaction();
                report.scope("broker->seglog, " + TxnCompacted.TOPIC + " (compacted, transactions v2)");
                TxnCompacted.compare(report, seglog, live, liveExpected, liveCommitted, liveLso, true);
                TxnCompacted.compare(report, seglog, broker.logDir.resolve(TxnCompacted.TOPIC + "-0"),
                        expected.get(TxnCompacted.TOPIC), committed.get(TxnCompacted.TOPIC), stoppedLso, false);
                if (txnFixture != null) {
                    TxnCompacted.writeFixture(txnFixture, broker.logDir.resolve(TxnCompacted.TOPIC + "-0"),
                            expected.get(TxnCompacted.TOPIC), committed.get(TxnCompacted.TOPIC), stoppedLso);
                }
                report.scope("broker->seglog, clean shutdown");
            }
            for (Topic t : topics) {
                Compare.partition(report, seglog, broker.logDir.resolve(t.name() + "-0"), expected.get(t.name()), true);
            }
            List<Path> dirs = new ArrayList<>();
            for (Topic t : topics) dirs.add(broker.logDir.resolve(t.name() + "-0"));
            // The cleaner leaves offset gaps on purpose.
            Compare.dump(report, seglog, broker, dirs, java.util.Set.of(broker.logDir.resolve("compacted-0").toAbsolutePath(),
                    broker.logDir.resolve(TxnCompacted.TOPIC + "-0").toAbsolutePath()));
            writeReadCommitted(work.resolve("s1-clean/read_committed.jsonl"), committed);
            report.scope("broker->seglog, the broker's state beside the log");
            StateCompare state = new StateCompare(report, seglog, work.resolve("s1-clean/state"));
            for (Topic t : topics) {
                // The cleaner can remove an epoch's first batch: only the broker's file knows its start.
                boolean compacted = t.kind().equals("compacted") || t.kind().equals("internal")
                        || t.kind().equals("txn-compacted");
                state.partition(broker.logDir.resolve(t.name() + "-0"), committed.get(t.name()), !compacted);
            }
            // txn-compacted has a fixture of its own (with Kafka's read_committed records).
            List<Topic> fixed = topics.stream().filter(t -> !t.kind().equals("txn-compacted")).toList();
            if (fixtures != null) writeFixtures(broker.logDir, fixtures, fixed, expected);
        }
    }

    /** Second run: SIGKILL while producing; seglog reads a copy of what the kill left, the restarted broker judges. */
    private void killRun() throws Exception {
        report.scope("broker->seglog, SIGKILL during production");
        // The default index interval, the one `seglog recover` (which takes no topic configs) uses.
        Map<String, String> config = base("16384");
        config.remove("index.interval.bytes");
        List<Topic> topics = List.of(
                new Topic("kill-none", config, Map.of(), "plain"),
                new Topic("kill-zstd", config, Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd"), "plain"));
        // Written before the kill and after the restart (a new leader epoch): not written during the kill.
        // Not idempotent: on this loaded machine an idempotent producer right after the topic's
        // creation once looped on OutOfOrderSequenceException until its delivery timeout.
        Topic epochs = new Topic("epochs", base("16384"), Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false, ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1), "plain");
        Gen epochsGen = new Gen(epochs.name(), 99, System.currentTimeMillis() - 600_000);
        try (Broker broker = Broker.format(work.resolve("s1-kill"))) {
            broker.start();
            try (Admin admin = broker.admin()) {
                List<NewTopic> news = new ArrayList<>();
                for (Topic t : topics) news.add(new NewTopic(t.name(), 1, (short) 1).configs(t.config()));
                news.add(new NewTopic(epochs.name(), 1, (short) 1).configs(epochs.config()));
                admin.createTopics(news).all().get(60, TimeUnit.SECONDS);
            }
            producePlain(broker, epochs, epochsGen, 400);
            AtomicBoolean stop = new AtomicBoolean();
            Map<String, ConcurrentSkipListSet<Long>> acked = new HashMap<>();
            List<Thread> threads = new ArrayList<>();
            long baseTs = System.currentTimeMillis() - 600_000;
            int seed = 100;
            for (Topic t : topics) {
                ConcurrentSkipListSet<Long> ack = new ConcurrentSkipListSet<>();
                acked.put(t.name(), ack);
                Gen gen = new Gen(t.name(), ++seed, baseTs);
                Thread th = new Thread(() -> {
                    Map<String, Object> cfg = new HashMap<>(t.producer());
                    cfg.put(ProducerConfig.RETRIES_CONFIG, 0);
                    cfg.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
                    // send() must not block for a minute on metadata once the broker is gone.
                    cfg.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 3000);
                    KafkaProducer<byte[], byte[]> p = Clients.producer(broker.bootstrap(), cfg);
                    try {
                        while (!stop.get()) {
                            p.send(gen.next(), (md, e) -> {
                                if (e == null) ack.add(md.offset());
                            });
                            if (ack.size() > 0 && ack.size() % 50 == 0) Thread.sleep(1);
                        }
                    } catch (Exception e) {
                        // The broker is gone: what was acknowledged is what counts.
                    } finally {
                        p.close(java.time.Duration.ZERO);
                    }
                }, "produce-" + t.name());
                th.start();
                threads.add(th);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (acked.values().stream().anyMatch(a -> a.size() < 3000) && System.nanoTime() < deadline) Thread.sleep(50);
            broker.kill();
            stop.set(true);
            for (Thread th : threads) th.join(30000);
            Path copy = work.resolve("s1-kill/after-kill");
            Fs.copyTree(broker.logDir, copy);
            // A second copy, recovered by `seglog recover` (it writes): after Kafka's own recovery the
            // broker's files must be these, byte for byte.
            Path recovered = work.resolve("s1-kill/seglog-recovered");
            for (Topic t : topics) {
                Fs.copyTree(broker.logDir.resolve(t.name() + "-0"), recovered.resolve(t.name() + "-0"));
                Seglog.Run r = seglog.run(List.of("recover", recovered.resolve(t.name() + "-0").toString(), "--json"));
                report.check(r.code() == 0, t.name() + ": `seglog recover` on the killed copy exited " + r.code() + ": " + r.stderr());
            }
            for (Topic t : topics) {
                report.check(acked.get(t.name()).size() >= 1000, t.name() + ": only " + acked.get(t.name()).size()
                        + " records were acknowledged before the kill");
            }
            broker.start();
            Map<String, Expect> expected = new LinkedHashMap<>();
            List<Rec> epochsCommitted;
            try (Admin admin = broker.admin()) {
                for (Topic t : topics) expected.put(t.name(), expect(broker, admin, new TopicPartition(t.name(), 0)));
                producePlain(broker, epochs, epochsGen, 400);
                TopicPartition tp = new TopicPartition(epochs.name(), 0);
                expected.put(epochs.name(), expect(broker, admin, tp));
                epochsCommitted = Clients.consumeAll(broker.bootstrap(), tp, "read_committed");
            }
            broker.stopClean();
            // Leader epochs across the restart: the broker's checkpoint, seglog's reading and rebuild of it.
            Path epochsDir = broker.logDir.resolve(epochs.name() + "-0");
            Compare.partition(report, seglog, epochsDir, expected.get(epochs.name()), true);
            StateCompare state = new StateCompare(report, seglog, work.resolve("s1-kill/state"));
            List<List<Long>> kafkaEpochs = state.partition(epochsDir, epochsCommitted, true);
            report.check(kafkaEpochs.size() >= 2, epochsDir + ": the restart after SIGKILL started no new leader epoch in"
                    + " the broker's checkpoint " + kafkaEpochs + "; the epoch comparison needs two");
            for (Topic t : topics) {
                Expect e = expected.get(t.name());
                Path dir = copy.resolve(t.name() + "-0");
                Compare.partition(report, seglog, dir, e, false);
                List<Long> ours = seglog.read(dir, report).stream().map(Rec::offset).toList();
                java.util.Set<Long> have = new java.util.HashSet<>(ours);
                long lost = acked.get(t.name()).stream().filter(o -> !have.contains(o)).count();
                report.check(lost == 0, t.name() + ": " + lost + " acknowledged offsets are missing from seglog's read of the killed directory");
                Log.info(t.name() + ": " + acked.get(t.name()).size() + " acked before SIGKILL, "
                        + e.records().size() + " after Kafka's recovery");
                // The same directory after Kafka's own recovery and clean shutdown.
                Compare.partition(report, seglog, broker.logDir.resolve(t.name() + "-0"), e, true);
                Compare.sameFiles(report, t.name() + "-0 after SIGKILL: Kafka's recovery (restart) vs `seglog recover`",
                        broker.logDir.resolve(t.name() + "-0"), recovered.resolve(t.name() + "-0"));
            }
        }
    }

    static Expect expect(Broker broker, Admin admin, TopicPartition tp) throws Exception {
        List<Rec> recs = Clients.consumeAll(broker.bootstrap(), tp, "read_uncommitted");
        long[] lo = Clients.listOffsets(admin, tp);
        Map<Long, Long> times = Clients.offsetsForTimes(broker.bootstrap(), tp, Clients.sampleTimestamps(recs, tp.topic().hashCode()));
        Log.info(tp + ": consumer read " + recs.size() + " records, log start " + lo[0] + ", end " + lo[1]);
        return new Expect(tp.toString(), recs, lo[0], lo[1], times);
    }

    private static void producePlain(Broker broker, Topic t, Gen gen) throws Exception {
        producePlain(broker, t, gen, RECORDS);
    }

    private static void producePlain(Broker broker, Topic t, Gen gen, long records) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = Clients.producer(broker.bootstrap(), t.producer())) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < records; i++) {
                fs.add(p.send(gen.next()));
                if (i % 100 == 99) p.flush();
            }
            p.flush();
            for (Future<RecordMetadata> f : fs) f.get();
        }
    }

    /**
     * Committed and aborted transactions of two transactional producers, with a plain idempotent
     * producer writing between them. Producer A runs one transaction per round (every third
     * aborted); producer B's transactions span two of A's (begun in even rounds, ended in odd
     * ones, every second one aborted), so they overlap A's, other producers' data and markers,
     * and segment rolls (16 KiB segments).
     */
    private static void produceTransactional(Broker broker, Topic t, Gen gen) throws Exception {
        Map<String, Object> ta = new HashMap<>(t.producer());
        ta.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "seglog-interop-txn");
        Map<String, Object> tb = new HashMap<>(t.producer());
        tb.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "seglog-interop-txn-b");
        try (KafkaProducer<byte[], byte[]> a = Clients.producer(broker.bootstrap(), ta);
                KafkaProducer<byte[], byte[]> b = Clients.producer(broker.bootstrap(), tb);
                KafkaProducer<byte[], byte[]> plain = Clients.producer(broker.bootstrap(), t.producer())) {
            a.initTransactions();
            b.initTransactions();
            for (int round = 0; round < 12; round++) {
                a.beginTransaction();
                if (round % 2 == 0) b.beginTransaction();
                for (int i = 0; i < 50; i++) a.send(gen.next());
                a.flush();
                for (int i = 0; i < 25; i++) b.send(gen.next());
                b.flush();
                for (int i = 0; i < 20; i++) plain.send(gen.next());
                plain.flush();
                if (round % 3 == 1) a.abortTransaction(); else a.commitTransaction();
                if (round % 2 == 1) {
                    if (round % 4 == 3) b.abortTransaction(); else b.commitTransaction();
                }
            }
        }
    }

    private static void produceCompacted(Broker broker, Topic t, Gen gen) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = Clients.producer(broker.bootstrap(), t.producer())) {
            for (int i = 0; i < 2000; i++) {
                p.send(gen.nextCompacted());
                if (i % 100 == 99) p.flush();
            }
            p.flush();
        }
        // One more append after segment.ms, so the last full segment rolls and becomes cleanable.
        Thread.sleep(1100);
        try (KafkaProducer<byte[], byte[]> p = Clients.producer(broker.bootstrap(), t.producer())) {
            p.send(gen.nextCompacted()).get();
        }
    }

    private void waitForRetention(Admin admin, TopicPartition tp) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long last = -1;
        while (System.nanoTime() < deadline) {
            long earliest = Clients.listOffsets(admin, tp)[0];
            if (earliest > 0 && earliest == last) return;
            last = earliest;
            Thread.sleep(1000);
        }
        report.fail(tp + ": retention deleted no segment in 30 s (log start offset " + last + ")");
    }

    /** Waits until the cleaner's checkpoint reaches the active segment (everything cleanable is cleaned). */
    private void waitForCleaner(Broker broker, String topic) throws Exception {
        waitForCleaner(report, broker, topic);
    }

    /** {@link #waitForCleaner(Broker, String)} for any scenario. */
    static void waitForCleaner(Report report, Broker broker, String topic) throws Exception {
        Path checkpoint = broker.logDir.resolve("cleaner-offset-checkpoint");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            List<Long> bases = Fs.segmentBases(broker.logDir.resolve(topic + "-0"));
            long active = bases.get(bases.size() - 1);
            Optional<Long> cleaned = Optional.empty();
            if (Files.exists(checkpoint)) {
                for (String line : Files.readAllLines(checkpoint, StandardCharsets.UTF_8)) {
                    String[] f = line.split(" ");
                    if (f.length == 3 && f[0].equals(topic) && f[1].equals("0")) cleaned = Optional.of(Long.parseLong(f[2]));
                }
            }
            if (cleaned.isPresent() && cleaned.get() >= active) {
                Log.info(topic + ": cleaned up to " + cleaned.get() + " (active segment " + active + ")");
                return;
            }
            Thread.sleep(500);
        }
        report.fail(topic + ": the log cleaner did not reach the active segment in 60 s\n" + broker.tail());
    }

    private static void writeReadCommitted(Path file, Map<String, List<Rec>> committed) throws Exception {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, List<Rec>> e : committed.entrySet()) {
            for (Rec r : e.getValue()) {
                ObjectNode o = r.toJson();
                o.put("topic", e.getKey());
                sb.append(Seglog.JSON.writeValueAsString(o)).append('\n');
            }
        }
        Files.writeString(file, sb.toString(), StandardCharsets.UTF_8);
    }

    /** The fixture set: each partition directory as the broker left it, and a manifest of what Kafka said. */
    private static void writeFixtures(Path logDir, Path fixtures, List<Topic> topics, Map<String, Expect> expected)
            throws Exception {
        for (Path p : Fs.list(fixtures)) {
            if (Files.isDirectory(p)) Fs.deleteTree(p);
        }
        Files.createDirectories(fixtures);
        ArrayNode manifest = JsonNodeFactory.instance.arrayNode();
        for (Topic t : topics) {
            String dir = t.name() + "-0";
            Fs.copyTree(logDir.resolve(dir), fixtures.resolve(dir));
            Expect e = expected.get(t.name());
            ObjectNode m = manifest.addObject();
            m.put("dir", dir);
            m.put("records", e.records().size());
            m.put("log_start_offset", e.earliest());
            m.put("log_end_offset", e.latest());
            m.put("first_offset", e.records().isEmpty() ? -1 : e.records().get(0).offset());
            m.put("last_offset", e.records().isEmpty() ? -1 : e.records().get(e.records().size() - 1).offset());
            m.put("segments", Fs.segmentBases(logDir.resolve(dir)).size());
            // Aggregates of what the consumer read, for a check of content without the records.
            long nullKeys = 0, nullValues = 0, headers = 0, keyBytes = 0, valueBytes = 0, logAppend = 0;
            long maxTs = -1;
            for (Rec r : e.records()) {
                if (r.key() == null) nullKeys++; else keyBytes += r.key().length() / 2;
                if (r.value() == null) nullValues++; else valueBytes += r.value().length() / 2;
                headers += r.headers().size();
                if ("log_append".equals(r.timestampType())) logAppend++;
                maxTs = Math.max(maxTs, r.timestamp());
            }
            m.put("null_keys", nullKeys);
            m.put("null_values", nullValues);
            m.put("headers", headers);
            m.put("key_bytes", keyBytes);
            m.put("value_bytes", valueBytes);
            m.put("log_append_time_records", logAppend);
            m.put("max_timestamp", maxTs);
            ObjectNode cfg = m.putObject("topic_config");
            t.config().forEach(cfg::put);
        }
        Files.writeString(fixtures.resolve("manifest.json"),
                Seglog.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(manifest) + "\n", StandardCharsets.UTF_8);
        Log.info("fixtures written to " + fixtures);
    }

}
