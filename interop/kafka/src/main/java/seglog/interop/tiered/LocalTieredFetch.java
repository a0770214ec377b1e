package seglog.interop.tiered;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.LocalTieredStorage;
import org.apache.kafka.server.log.remote.storage.LocalTieredStorageTraverser;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentFileset;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;

/**
 * Runs inside TieredScenario's class loader of Kafka 4.3.1's jars (LocalTieredStorage is built
 * against them): points Kafka's {@code LocalTieredStorage} at a directory, traverses it and
 * fetches every part of the given segments into files. Only {@code java.*} types cross the
 * loader boundary.
 */
public final class LocalTieredFetch {
    private LocalTieredFetch() {}

    /**
     * {@code segments}: one {@code "base end size segmentId"} line each. Writes, per segment, into
     * {@code out}: {@code <base>.log} (fetchLogSegment from 0), {@code <base>.log.mid} (from
     * size/2), {@code <base>.index}, {@code .timeindex}, {@code .txnindex} (or
     * {@code .txnindex.notfound} for Kafka's RemoteResourceNotFoundException), {@code .snapshot},
     * {@code .leader_epoch_checkpoint}. Returns {@code "partition <tp>"} and {@code "segment <id>"}
     * lines for what traverse visited.
     */
    public static List<String> fetch(String storageDir, String topicId, String topic, int partition, List<String> segments, String out)
            throws Exception {
        LocalTieredStorage rsm = new LocalTieredStorage();
        Map<String, Object> config = new HashMap<>();
        config.put(LocalTieredStorage.STORAGE_DIR_CONFIG, storageDir);
        config.put(LocalTieredStorage.BROKER_ID, 0);
        rsm.configure(config);
        TopicIdPartition tp = new TopicIdPartition(Uuid.fromString(topicId), new TopicPartition(topic, partition));
        List<String> visited = new ArrayList<>();
        rsm.traverse(new LocalTieredStorageTraverser() {
            @Override
            public void visitTopicIdPartition(TopicIdPartition p) {
                visited.add("partition " + p);
            }

            @Override
            public void visitSegment(RemoteLogSegmentFileset fileset) {
                visited.add("segment " + fileset.getRemoteLogSegmentId().id());
            }
        });
        Path dir = Path.of(out);
        Files.createDirectories(dir);
        for (String line : segments) {
            String[] f = line.split(" ");
            long base = Long.parseLong(f[0]);
            long end = Long.parseLong(f[1]);
            int size = Integer.parseInt(f[2]);
            RemoteLogSegmentId id = new RemoteLogSegmentId(tp, Uuid.fromString(f[3]));
            RemoteLogSegmentMetadata md = new RemoteLogSegmentMetadata(id, base, end, -1L, 0, System.currentTimeMillis(), size, Map.of(0, base));
            String stem = dir.resolve(Long.toString(base)).toString();
            Files.write(Path.of(stem + ".log"), read(rsm.fetchLogSegment(md, 0)));
            Files.write(Path.of(stem + ".log.mid"), read(rsm.fetchLogSegment(md, size / 2)));
            Files.write(Path.of(stem + ".index"), read(rsm.fetchIndex(md, IndexType.OFFSET)));
            Files.write(Path.of(stem + ".timeindex"), read(rsm.fetchIndex(md, IndexType.TIMESTAMP)));
            Files.write(Path.of(stem + ".snapshot"), read(rsm.fetchIndex(md, IndexType.PRODUCER_SNAPSHOT)));
            Files.write(Path.of(stem + ".leader_epoch_checkpoint"), read(rsm.fetchIndex(md, IndexType.LEADER_EPOCH)));
            try {
                Files.write(Path.of(stem + ".txnindex"), read(rsm.fetchIndex(md, IndexType.TRANSACTION)));
            } catch (RemoteResourceNotFoundException e) {
                Files.write(Path.of(stem + ".txnindex.notfound"), new byte[0]);
            }
        }
        rsm.close();
        return visited;
    }

    private static byte[] read(InputStream in) throws Exception {
        try (in) {
            return in.readAllBytes();
        }
    }
}
