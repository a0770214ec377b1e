package seglog.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Scenario 2, seglog -> broker: the broker creates the topics; seglog writes their logs; the
 * broker adopts them (trusted load with its clean-shutdown marker, then full recovery without
 * it) and must cut nothing, end where we end, serve exactly our records, and its dump-log tool
 * must find no index mismatch.
 */
final class AdoptScenario {
    /** One seglog-written partition: codec, and what is done to it after producing. */
    record Part(String topic, String codec, String after) {}

    static final int RECORDS = 900;
    /** Records of the keyed (compacted) logs: 60 keys, every 7th a tombstone (Gen.nextCompacted). */
    static final int KEYED_RECORDS = 1500;

    private final Report report;
    private final Seglog seglog;
    private final Path work;

    AdoptScenario(Report report, Seglog seglog, Path work) {
        this.report = report;
        this.seglog = seglog;
        this.work = work;
    }

    static List<Part> parts() {
        List<Part> p = new ArrayList<>();
        for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) p.add(new Part("adopt-" + codec, codec, ""));
        p.add(new Part("adopt-retained", "lz4", "retain"));
        p.add(new Part("adopt-recovered", "gzip", "crash"));
        p.add(new Part("adopt-truncated", "snappy", "truncate"));
        // Truncated inside a batch: seglog removes the batch and rolls an empty segment at the
        // target, so the log ends where the truncation said (docs/format.md, "Truncation inside a batch").
        p.add(new Part("adopt-truncated-mid", "zstd", "truncate-mid"));
        // A keyed log with updates and tombstones, compacted by `seglog compact`: the broker
        // (delete policy, so its own cleaner leaves it alone) must load and serve what we cleaned.
        p.add(new Part("adopt-compacted", "lz4", "compact"));
        return p;
    }

    void run() throws Exception {
        report.scope("seglog->broker (adopt)");
        List<Part> parts = parts();
        Path ours = work.resolve("s2-seglog");
        Map<String, List<Rec>> expected = new LinkedHashMap<>();
        long baseTs = System.currentTimeMillis() - 3_600_000;
        int seed = 200;
        for (Part p : parts) {
            Path dir = ours.resolve(p.topic() + "-0");
            write(dir, p, new Gen(p.topic(), ++seed, baseTs), p.after().equals("compact"));
            Seglog.Run v = seglog.verify(dir);
            report.check(v.code() == 0, dir + ": seglog's own verify of what it wrote: " + v.lines() + v.stderr());
            expected.put(p.topic(), seglog.read(dir, report));
        }
        try (Broker broker = Broker.format(work.resolve("s2-broker"))) {
            broker.start();
            try (Admin admin = broker.admin()) {
                List<NewTopic> news = new ArrayList<>();
                for (Part p : parts) {
                    Map<String, String> config = BrokerScenario.base("16384");
                    // `seglog recover` takes no topic configs: it rebuilds indexes at the default interval.
                    if (p.after().equals("crash")) config.put("index.interval.bytes", "4096");
                    news.add(new NewTopic(p.topic(), 1, (short) 1).configs(config));
                }
                admin.createTopics(news).all().get(60, TimeUnit.SECONDS);
            }
            broker.stopClean();
            for (Part p : parts) {
                Path target = broker.logDir.resolve(p.topic() + "-0");
                report.check(Files.exists(target.resolve("partition.metadata")), target + ": the broker wrote no partition.metadata");
                replaceSegments(ours.resolve(p.topic() + "-0"), target);
            }

            report.scope("seglog->broker (adopt), restart with .kafka_cleanshutdown (trusted load)");
            checkAdopted(broker, parts, ours, expected, false);

            report.scope("seglog->broker (adopt), restart without the marker, recovery point 0 (full recovery)");
            for (Part p : parts) replaceSegments(ours.resolve(p.topic() + "-0"), broker.logDir.resolve(p.topic() + "-0"));
            Files.delete(broker.logDir.resolve(".kafka_cleanshutdown"));
            zeroRecoveryPoints(broker.logDir, parts);
            checkAdopted(broker, parts, ours, expected, true);
            // Kafka rebuilt every index while recovering: they must be ours, byte for byte.
            for (Part p : parts) {
                Path k = broker.logDir.resolve(p.topic() + "-0");
                Path s = ours.resolve(p.topic() + "-0");
                for (long base : Fs.segmentBases(s)) {
                    for (String ext : List.of(".index", ".timeindex")) {
                        String name = String.format("%020d%s", base, ext);
                        byte[] kb = Files.readAllBytes(k.resolve(name));
                        byte[] sb = Files.readAllBytes(s.resolve(name));
                        report.check(java.util.Arrays.equals(kb, sb), k.resolve(name) + ": Kafka's rebuilt index ("
                                + kb.length + " bytes, sha256 " + Fs.sha256(kb).substring(0, 12) + ") differs from seglog's ("
                                + sb.length + " bytes, sha256 " + Fs.sha256(sb).substring(0, 12) + ")");
                    }
                }
            }
            kafkaCleanerAgainstOurs(broker, baseTs);
            appendsAfterTruncation(broker, parts, ours, expected, baseTs);
            broker.stopClean();
        }
    }

    /**
     * With the broker up (after the recovery restart): the adopted truncated logs take appends.
     * Kafka's idempotent producer writes to each; the records must get the offsets from seglog's
     * log end on, and the consumer must read the adopted records followed by them.
     */
    private void appendsAfterTruncation(Broker broker, List<Part> parts, Path ours, Map<String, List<Rec>> expected,
            long baseTs) throws Exception {
        report.scope("seglog->broker (adopt), appends after a truncation");
        int seed = 300;
        for (Part p : parts) {
            if (!p.after().startsWith("truncate")) continue;
            TopicPartition tp = new TopicPartition(p.topic(), 0);
            long end = seglog.info(ours.resolve(p.topic() + "-0")).path("log_end_offset").asLong();
            // Gen names the topic in its records; a seed of its own, timestamps after ours.
            Gen gen = new Gen(p.topic(), ++seed, baseTs + 3_000_000);
            List<Rec> want = new ArrayList<>(expected.get(p.topic()));
            List<Long> offsets = new ArrayList<>();
            try (KafkaProducer<byte[], byte[]> producer = Clients.producer(broker.bootstrap(),
                    Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, p.codec()))) {
                for (int i = 0; i < 40; i++) {
                    ProducerRecord<byte[], byte[]> r = gen.next();
                    long offset = producer.send(r).get(60, TimeUnit.SECONDS).offset();
                    offsets.add(offset);
                    want.add(Rec.of(r, offset));
                }
            }
            List<Long> consecutive = new ArrayList<>();
            for (int i = 0; i < offsets.size(); i++) consecutive.add(end + i);
            report.equal(consecutive.subList(0, 3), offsets.subList(0, 3), tp + ": the first offsets of appends after"
                    + " the adopted log's end (seglog info log end " + end + ")");
            report.equal(consecutive, offsets, tp + ": the offsets of 40 appends");
            Compare.records(report, tp + " adopted, then appended to by Kafka's producer",
                    Clients.consumeAll(broker.bootstrap(), tp, "read_uncommitted"), want);
        }
    }

    /** seglog produce (in the codec, small segments), then retention or a crash and recover. */
    private void write(Path dir, Part p, Gen gen, boolean keyed) throws Exception {
        Path input = work.resolve(p.topic() + ".jsonl");
        StringBuilder sb = new StringBuilder();
        int records = keyed ? KEYED_RECORDS : RECORDS;
        for (int i = 0; i < records; i++) {
            var record = keyed ? gen.nextCompacted() : gen.next();
            sb.append(Seglog.JSON.writeValueAsString(Rec.of(record, i).toProduceJson())).append('\n');
        }
        Files.writeString(input, sb.toString(), StandardCharsets.UTF_8);
        List<String> produce = new ArrayList<>(List.of("produce", dir.toString(), "--input", input.toString(), "--encoding", "hex",
                "--batch-records", "17", "--compression", p.codec(), "--config", "segment.bytes=16384",
                "--config", "index.interval.bytes=1024", "--quiet", "--json"));
        if (keyed) produce.addAll(List.of("--config", "cleanup.policy=compact"));
        Seglog.Run r = seglog.run(produce);
        if (r.code() != 0) throw new IOException("`" + r.command() + "` exited " + r.code() + ": " + r.stderr());
        if (p.after().equals("compact")) compact(dir);
        if (p.after().equals("retain")) {
            Seglog.Run ret = seglog.run(List.of("retain", dir.toString(), "--retention-bytes", "40000", "--json"));
            if (ret.code() != 0) throw new IOException("`" + ret.command() + "` exited " + ret.code() + ": " + ret.stderr());
            report.check(seglog.info(dir).path("log_start_offset").asLong() > 0, dir + ": seglog retain deleted nothing");
        }
        if (p.after().equals("truncate")) {
            // A follower's truncation (Kafka's truncateTo) at a batch boundary: 17 records a batch.
            Seglog.Run t = seglog.run(List.of("truncate", dir.toString(), "--to", "340", "--json"));
            if (t.code() != 0) throw new IOException("`" + t.command() + "` exited " + t.code() + ": " + t.stderr());
            report.check(seglog.info(dir).path("log_end_offset").asLong() == 340, dir + ": seglog truncate --to 340 left log end "
                    + seglog.info(dir).path("log_end_offset").asLong());
        }
        if (p.after().equals("truncate-mid")) {
            // Inside the batch 340..356 (17 records a batch): the batch goes, the log ends at 345.
            Seglog.Run t = seglog.run(List.of("truncate", dir.toString(), "--to", "345", "--json"));
            if (t.code() != 0) throw new IOException("`" + t.command() + "` exited " + t.code() + ": " + t.stderr());
            report.check(seglog.info(dir).path("log_end_offset").asLong() == 345, dir + ": seglog truncate --to 345 left log end "
                    + seglog.info(dir).path("log_end_offset").asLong());
            List<Long> bases = Fs.segmentBases(dir);
            report.check(bases.get(bases.size() - 1) == 345, dir + ": seglog truncate --to 345 (inside a batch) rolled no"
                    + " segment at 345: " + bases);
        }
        if (p.after().equals("crash")) {
            // A crash: a torn batch at the tail of the active segment, the marker gone; then seglog recover.
            List<Long> bases = Fs.segmentBases(dir);
            Path active = dir.resolve(String.format("%020d.log", bases.get(bases.size() - 1)));
            byte[] log = Files.readAllBytes(active);
            byte[] torn = java.util.Arrays.copyOf(log, log.length + 40);
            System.arraycopy(log, 0, torn, log.length, 40);
            Files.write(active, torn);
            Files.deleteIfExists(dir.resolve(".kafka_cleanshutdown"));
            Seglog.Run rec = seglog.run(List.of("recover", dir.toString(), "--json"));
            if (rec.code() != 0) throw new IOException("`" + rec.command() + "` exited " + rec.code() + ": " + rec.stderr());
            report.check(Files.size(active) == log.length, active + ": seglog recover kept " + Files.size(active)
                    + " bytes, the log had " + log.length + " before the torn 40 bytes were appended");
        }
    }

    /** {@code seglog compact DIR} with the topic's segment and index settings; it must clean something. */
    private JsonNode compact(Path dir) throws Exception {
        Seglog.Run c = seglog.run(List.of("compact", dir.toString(), "--config", "cleanup.policy=compact",
                "--config", "segment.bytes=16384", "--config", "index.interval.bytes=1024", "--json"));
        if (c.code() != 0) throw new IOException("`" + c.command() + "` exited " + c.code() + ": " + c.stderr());
        JsonNode out = c.first();
        report.check(out.path("segments_cleaned").asLong() > 0, dir + ": seglog compact cleaned no segment: " + out);
        report.check(out.path("records_after").asLong() < out.path("records_before").asLong(),
                dir + ": seglog compact removed no record: " + out);
        return out;
    }

    /**
     * Kafka's cleaner against ours on the same bytes: seglog writes a keyed log; one copy is
     * cleaned by `seglog compact`, the other is adopted by the broker as a compacted topic and
     * cleaned by Kafka's LogCleaner (same segments, so the same first uncleanable offset, the
     * active segment's base). A consumer of the broker's cleaned log must read exactly the
     * records seglog's cleaned copy keeps (offsets, keys, values, timestamps, headers).
     */
    private void kafkaCleanerAgainstOurs(Broker broker, long baseTs) throws Exception {
        report.scope("Kafka's log cleaner vs seglog compact, same input");
        String topic = "kclean";
        Path input = work.resolve("s2-kclean").resolve(topic + "-0");
        write(input, new Part(topic, "snappy", ""), new Gen(topic, 977, baseTs), true);
        Path oursCleaned = work.resolve("s2-kclean-seglog").resolve(topic + "-0");
        Fs.copyTree(input, oursCleaned);
        JsonNode ours = compact(oursCleaned);
        Seglog.Run v = seglog.verify(oursCleaned);
        report.check(v.code() == 0, oursCleaned + ": seglog verify after seglog compact: " + v.lines() + v.stderr());
        List<Rec> expected = seglog.read(oursCleaned, report);
        broker.start();
        try (Admin admin = broker.admin()) {
            Map<String, String> config = BrokerScenario.base("16384");
            config.put("cleanup.policy", "compact");
            config.put("min.cleanable.dirty.ratio", "0.01");
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(config))).all().get(60, TimeUnit.SECONDS);
        }
        broker.stopClean();
        Path target = broker.logDir.resolve(topic + "-0");
        replaceSegments(input, target);
        broker.start();
        BrokerScenario.waitForCleaner(report, broker, topic);
        List<Rec> kafka = Clients.consumeAll(broker.bootstrap(), new TopicPartition(topic, 0), "read_uncommitted");
        Compare.records(report, topic + "-0 cleaned by Kafka vs by seglog (" + ours.path("records_before").asLong()
                + " records before)", kafka, expected);
        // The broker stays up for the appends after it.
    }

    /** Deletes the broker's segment files in {@code target} and copies ours; other files stay. */
    private static void replaceSegments(Path ours, Path target) throws IOException {
        for (Path f : Fs.list(target)) {
            if (isSegmentFile(f)) Files.delete(f);
        }
        for (Path f : Fs.list(ours)) {
            if (isSegmentFile(f)) Files.copy(f, target.resolve(f.getFileName()));
        }
    }

    private static boolean isSegmentFile(Path f) {
        String n = f.getFileName().toString();
        return n.endsWith(".log") || n.endsWith(".index") || n.endsWith(".timeindex") || n.endsWith(".txnindex")
                || n.endsWith(".snapshot");
    }

    /** Sets the recovery point of {@code parts} to 0 in the broker's checkpoint, so Kafka recovers every segment. */
    private static void zeroRecoveryPoints(Path logDir, List<Part> parts) throws IOException {
        Path cp = logDir.resolve("recovery-point-offset-checkpoint");
        List<String> lines = Files.readAllLines(cp, StandardCharsets.UTF_8);
        List<String> out = new ArrayList<>(lines.subList(0, 2));
        for (String line : lines.subList(2, lines.size())) {
            String[] f = line.split(" ");
            boolean ours = parts.stream().anyMatch(p -> p.topic().equals(f[0]));
            out.add(ours ? f[0] + " " + f[1] + " 0" : line);
        }
        Files.write(cp, out, StandardCharsets.UTF_8);
    }

    private void checkAdopted(Broker broker, List<Part> parts, Path ours, Map<String, List<Rec>> expected,
            boolean recovery) throws Exception {
        broker.start();
        try (Admin admin = broker.admin()) {
            for (Part p : parts) {
                TopicPartition tp = new TopicPartition(p.topic(), 0);
                Path dir = ours.resolve(p.topic() + "-0");
                var info = seglog.info(dir);
                long[] lo = Clients.listOffsets(admin, tp);
                report.equal(lo[0], info.path("log_start_offset").asLong(), tp + ": log start offset (ListOffsets EARLIEST vs seglog info)");
                report.equal(lo[1], info.path("log_end_offset").asLong(), tp + ": log end offset (ListOffsets LATEST vs seglog info)");
                List<Rec> want = expected.get(p.topic());
                long upTo = -1;
                if (p.after().equals("truncate-mid")) {
                    // The log ends in the gap the truncation left (its last batch ends at 339, the
                    // empty segment at 345): Kafka's consumer reads the records, then waits at the
                    // gap until the next append (docs/format.md, "Truncation inside a batch").
                    upTo = want.get(want.size() - 1).offset() + 1;
                    report.equal(upTo, Clients.positionAfterPolling(broker.bootstrap(), tp, upTo, 1500),
                            tp + ": the consumer's position after polling at the gap before the log end " + lo[1]);
                }
                Compare.records(report, tp + " adopted", Clients.consumeUpTo(broker.bootstrap(), tp, "read_uncommitted", upTo), want);
                Map<Long, Long> times = Clients.offsetsForTimes(broker.bootstrap(), tp,
                        Clients.sampleTimestamps(expected.get(p.topic()), p.topic().hashCode()));
                Compare.offsetsForTimes(report, seglog, dir, tp + " adopted", times);
            }
        }
        // Kafka's LogLoader logs "Recovering unflushed segment B. i/n recovered for T-0." per recovered segment.
        List<String> recovered = broker.grepLastLog("Recovering unflushed segment");
        for (Part p : parts) {
            long n = recovered.stream().filter(l -> l.contains(" for " + p.topic() + "-0")).count();
            long segments = Fs.segmentBases(ours.resolve(p.topic() + "-0")).size();
            if (recovery) {
                report.equal(segments, n, p.topic() + "-0: segments Kafka recovered (seglog wrote " + segments + ")");
            } else {
                report.equal(0L, n, p.topic() + "-0: segments Kafka recovered on a trusted load");
            }
        }
        List<String> cut = broker.grepLogs("Truncat");
        cut.removeIf(l -> !parts.stream().anyMatch(p -> l.contains(p.topic() + "-0")));
        report.check(cut.isEmpty(), "the broker truncated an adopted log: " + cut);
        List<String> corrupt = broker.grepLogs("orrupt");
        report.check(corrupt.isEmpty(), "the broker logged corruption: " + corrupt);
        broker.stopClean();
        for (Part p : parts) dumpLogSegments(broker, broker.logDir.resolve(p.topic() + "-0"));
    }

    /** Kafka's dump-log tool on every index of {@code dir}: deep index verification, then the sanity check. */
    private void dumpLogSegments(Broker broker, Path dir) throws Exception {
        List<String> files = new ArrayList<>();
        for (Path f : Fs.list(dir)) {
            String n = f.getFileName().toString();
            if (n.endsWith(".index") || n.endsWith(".timeindex")) files.add(f.toString());
        }
        for (List<String> mode : List.of(List.of("--deep-iteration", "--verify-index-only"), List.of("--index-sanity-check"))) {
            List<String> args = new ArrayList<>(List.of("--files", String.join(",", files)));
            args.addAll(mode);
            String out = broker.runTool("org.apache.kafka.tools.DumpLogSegments", args);
            List<String> bad = new ArrayList<>();
            for (String line : out.split("\n")) {
                String l = line.toLowerCase(java.util.Locale.ROOT);
                if (l.startsWith("slf4j:")) continue;
                // No exception for "timestamp mismatch" (disagreement 6, fixed): seglog's cleaner
                // writes no record-less batch where Kafka's would not.
                if (l.contains("mismatch") || l.contains("out of order") || l.contains("index offset")
                        || l.contains("exception") || l.contains("error") || l.contains("failed")) bad.add(line.strip());
            }
            if (mode.contains("--index-sanity-check")) {
                long passed = out.lines().filter(l -> l.endsWith("passed sanity check.") || l.endsWith(" is empty.")).count();
                report.equal((long) files.size(), passed, dir + ": index files passing DumpLogSegments --index-sanity-check");
            }
            report.check(bad.isEmpty(), dir + ": DumpLogSegments " + String.join(" ", mode) + " reports " + bad);
        }
    }
}
