package seglog.interop;

import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.storage.internals.checkpoint.LeaderEpochCheckpointFile;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.ProducerStateEntry;
import org.apache.kafka.storage.internals.log.ProducerStateManager;

/**
 * Scenario 4, seglog's remote tier read by Kafka's own code. A partition seglog wrote (plain
 * records, an idempotent producer, aborted and committed transactions, 16 KiB segments) is
 * tiered with {@code seglog tier --store file://DIR}. Kafka's reference RemoteStorageManager,
 * {@code LocalTieredStorage} (in kafka-storage 4.3.1's test jar, run in a class loader of its own
 * 4.3.1 jars: {@link seglog.interop.tiered.LocalTieredFetch}) configured with {@code dir=DIR}
 * traverses the directory (every name must parse as a {@code RemoteLogSegmentFileset}: no foreign
 * file) and fetches every copied segment: {@code fetchLogSegment} from 0 and from the middle
 * equal the local {@code .log}; {@code fetchIndex} OFFSET, TIMESTAMP, TRANSACTION equal the local
 * {@code .index}, {@code .timeindex}, {@code .txnindex} (not found exactly when there is none);
 * PRODUCER_SNAPSHOT is read by Kafka 4.4.0's {@code ProducerStateManager.readSnapshot}, LEADER_EPOCH
 * by 4.4.0's {@code LeaderEpochCheckpointFile.read} (the epochs {@code seglog info} reports, up to
 * the next segment).
 */
final class TieredScenario {
    private static final String TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAg";
    private final Report report;
    private final Seglog seglog;
    private final Path work;

    TieredScenario(Report report, Seglog seglog, Path work) {
        this.report = report;
        this.seglog = seglog;
        this.work = work;
    }

    void run() throws Exception {
        report.scope("tiered: Kafka's LocalTieredStorage reads what seglog tiered");
        Path root = work.resolve("tiered");
        Path dir = root.resolve("orders-0");
        Path remote = root.resolve("remote");
        Path fetched = root.resolve("fetched");
        Files.createDirectories(root);
        produce(dir);
        Seglog.Run tier = seglog.run(List.of("tier", dir.toString(), "--store", "file://" + remote.toAbsolutePath(),
                "--topic-id", TOPIC_ID, "--json"));
        if (!report.check(tier.code() == 0, "seglog tier exit " + tier.code() + ": " + tier.stderr())) return;
        JsonNode copied = tier.first().get("copied");
        report.check(copied.size() >= 4, "seglog tier copied " + copied.size() + " segments, expected at least 4");
        List<String> segments = new ArrayList<>();
        for (JsonNode c : copied) {
            segments.add(c.get("base_offset").asLong() + " " + c.get("end_offset").asLong() + " " + c.get("bytes").asInt() + " "
                    + c.get("segment_id").asText());
        }
        List<String> visited = fetchWithKafka431(remote.toAbsolutePath().toString(), segments, fetched);
        report.check(visited.contains("partition " + TOPIC_ID + ":orders-0"), "LocalTieredStorage.traverse visits the partition: " + visited);

        TreeMap<Long, Long> epochs = epochsOf(dir);
        boolean sawTxnIndex = false;
        boolean sawProducer = false;
        for (JsonNode c : copied) {
            long base = c.get("base_offset").asLong();
            long end = c.get("end_offset").asLong();
            String id = c.get("segment_id").asText();
            String seg = "segment " + base + " (" + id + ")";
            report.check(visited.contains("segment " + id), seg + " found by LocalTieredStorage.traverse");
            String stem = String.format("%020d", base);
            Path got = fetched.resolve(Long.toString(base));
            byte[] log = Files.readAllBytes(dir.resolve(stem + ".log"));
            report.equal(c.get("bytes").asInt(), log.length, seg + " size");
            same(log, Files.readAllBytes(Path.of(got + ".log")), seg + ": fetchLogSegment(0) vs the local .log");
            same(Arrays.copyOfRange(log, log.length / 2, log.length), Files.readAllBytes(Path.of(got + ".log.mid")),
                    seg + ": fetchLogSegment(size/2) vs the .log's tail");
            same(Files.readAllBytes(dir.resolve(stem + ".index")), Files.readAllBytes(Path.of(got + ".index")), seg + ": fetchIndex(OFFSET)");
            same(Files.readAllBytes(dir.resolve(stem + ".timeindex")), Files.readAllBytes(Path.of(got + ".timeindex")),
                    seg + ": fetchIndex(TIMESTAMP)");
            Path txn = dir.resolve(stem + ".txnindex");
            if (Files.exists(txn) && Files.size(txn) > 0) {
                sawTxnIndex = true;
                report.check(Files.exists(Path.of(got + ".txnindex")), seg + ": has a .txnindex, LocalTieredStorage found none");
                if (Files.exists(Path.of(got + ".txnindex"))) {
                    same(Files.readAllBytes(txn), Files.readAllBytes(Path.of(got + ".txnindex")), seg + ": fetchIndex(TRANSACTION)");
                }
            } else {
                report.check(Files.exists(Path.of(got + ".txnindex.notfound")),
                        seg + ": has no .txnindex, LocalTieredStorage must answer RemoteResourceNotFoundException");
            }
            // The producer snapshot at the next segment's base, by Kafka 4.4.0's reader (which
            // takes the offset from the file name).
            Path snap = fetched.resolve("snapshots-" + base).resolve(String.format("%020d", end + 1) + ".snapshot");
            Files.createDirectories(snap.getParent());
            Files.copy(Path.of(got + ".snapshot"), snap);
            List<ProducerStateEntry> entries = ProducerStateManager.readSnapshot(snap.toFile());
            for (ProducerStateEntry e : entries) {
                report.check(e.lastDataOffset() <= end, seg + ": snapshot entry " + e + " is past the segment's end " + end);
                if (e.producerId() == 5) sawProducer = true;
            }
            // The leader epochs up to the next segment, by Kafka 4.4.0's checkpoint reader.
            List<EpochEntry> read = new LeaderEpochCheckpointFile(Path.of(got + ".leader_epoch_checkpoint").toFile(),
                    new LogDirFailureChannel(1)).read();
            List<String> want = new ArrayList<>();
            for (Map.Entry<Long, Long> e : epochs.entrySet()) {
                if (e.getValue() <= end) want.add(e.getKey() + "@" + e.getValue());
            }
            List<String> have = new ArrayList<>();
            for (EpochEntry e : read) have.add(e.epoch() + "@" + e.startOffset());
            report.equal(want, have, seg + ": leader epochs below the next segment (seglog info, the uploaded checkpoint)");
        }
        report.check(sawTxnIndex, "some tiered segment carries a .txnindex");
        report.check(sawProducer, "some tiered producer snapshot holds producer 5");
    }

    /** Runs LocalTieredFetch in a child-first loader of the 4.3.1 jars the pom copied. */
    @SuppressWarnings("unchecked")
    private static List<String> fetchWithKafka431(String storageDir, List<String> segments, Path out) throws Exception {
        Path classes = Path.of(TieredScenario.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path jars = classes.getParent().resolve("kafka-4.3.1");
        List<URL> urls = new ArrayList<>();
        urls.add(classes.toUri().toURL());
        try (Stream<Path> list = Files.list(jars)) {
            for (Path jar : list.sorted().toList()) urls.add(jar.toUri().toURL());
        }
        if (urls.size() < 6) throw new IllegalStateException(jars + " lacks the Kafka 4.3.1 jars (mvn compile copies them)");
        try (URLClassLoader loader = new ChildFirst(urls.toArray(URL[]::new), TieredScenario.class.getClassLoader())) {
            Class<?> fetch = Class.forName("seglog.interop.tiered.LocalTieredFetch", true, loader);
            Method m = fetch.getMethod("fetch", String.class, String.class, String.class, int.class, List.class, String.class);
            return (List<String>) m.invoke(null, storageDir, TOPIC_ID, "orders", 0, segments, out.toString());
        }
    }

    /** Loads Kafka's classes and the helper from its own jars first, everything else from the parent. */
    private static final class ChildFirst extends URLClassLoader {
        ChildFirst(URL[] urls, ClassLoader parent) {
            super(urls, parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("org.apache.kafka.") && !name.startsWith("seglog.interop.tiered.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    try {
                        c = findClass(name);
                    } catch (ClassNotFoundException e) {
                        c = super.loadClass(name, false);
                    }
                }
                if (resolve) resolveClass(c);
                return c;
            }
        }
    }

    private void same(byte[] want, byte[] got, String what) {
        report.check(Arrays.equals(want, got), what + ": " + got.length + " bytes differ from " + want.length + " expected");
    }

    private void produce(Path dir) throws Exception {
        String d = dir.toString();
        String seg = "segment.bytes=16384";
        long pidSeq = 0;
        for (int round = 0; round < 6; round++) {
            ok(seglog.run(List.of("produce", d, "--count", "60", "--record-bytes", "100", "--config", seg, "--json")));
            ok(seglog.run(List.of("produce", d, "--count", "30", "--record-bytes", "80", "--config", seg,
                    "--producer-id", "5", "--producer-epoch", "0", "--base-sequence", Long.toString(pidSeq), "--json")));
            pidSeq += 30;
            ok(seglog.run(List.of("produce", d, "--count", "20", "--record-bytes", "80", "--config", seg,
                    "--producer-id", "9", "--producer-epoch", "0", "--base-sequence", Integer.toString(round * 20), "--transactional", "--json")));
            ok(seglog.run(List.of("marker", d, "--producer-id", "9", "--producer-epoch", "0", round % 2 == 0 ? "--abort" : "--commit", "--json")));
        }
        ok(seglog.run(List.of("produce", d, "--count", "50", "--record-bytes", "100", "--config", seg, "--json")));
    }

    private void ok(Seglog.Run run) {
        if (run.code() != 0) throw new IllegalStateException("`" + run.command() + "` exit " + run.code() + ": " + run.stderr());
    }

    /** seglog info's leader epochs: epoch -> start offset. */
    private TreeMap<Long, Long> epochsOf(Path dir) throws Exception {
        Seglog.Run info = seglog.run(List.of("info", dir.toString(), "--json"));
        ok(info);
        TreeMap<Long, Long> out = new TreeMap<>();
        JsonNode epochs = info.first().get("leader_epochs");
        if (epochs != null) {
            for (JsonNode e : epochs) out.put(e.get(0).asLong(), e.get(1).asLong());
        }
        return out;
    }
}
