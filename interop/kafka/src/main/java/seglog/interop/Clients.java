package seglog.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** Kafka's own clients, configured for the harness. */
final class Clients {
    private Clients() {}

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, Map<String, Object> extra) {
        Map<String, Object> c = new HashMap<>();
        c.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        c.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        c.put(ProducerConfig.BATCH_SIZE_CONFIG, 4096);
        c.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60000);
        c.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 20000);
        c.putAll(extra);
        return new KafkaProducer<>(c);
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, String isolation) {
        Map<String, Object> c = new HashMap<>();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.CHECK_CRCS_CONFIG, true);
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2000);
        return new KafkaConsumer<>(c);
    }

    /** Every record of {@code tp} from the log start to the end (HW, or LSO when read_committed). */
    static List<Rec> consumeAll(String bootstrap, TopicPartition tp, String isolation) {
        return consumeUpTo(bootstrap, tp, isolation, -1);
    }

    /**
     * The records of {@code tp} from the log start until the consumer's position reaches
     * {@code upTo} (-1: the end offset, as {@link #consumeAll}).
     */
    static List<Rec> consumeUpTo(String bootstrap, TopicPartition tp, String isolation, long upTo) {
        List<Rec> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, isolation)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = upTo >= 0 ? upTo : c.endOffsets(List.of(tp), Duration.ofSeconds(30)).get(tp);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (c.position(tp, Duration.ofSeconds(30)) < end) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("consumer of " + tp + " stuck at " + c.position(tp) + " < end " + end);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) out.add(Rec.of(r));
            }
        }
        return out;
    }

    /**
     * The consumer's position after it was placed at {@code offset} and polled for {@code ms}
     * (the records it returned, if any, are dropped).
     */
    static long positionAfterPolling(String bootstrap, TopicPartition tp, long offset, long ms) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, "read_uncommitted")) {
            c.assign(List.of(tp));
            c.seek(tp, offset);
            long deadline = System.nanoTime() + Duration.ofMillis(ms).toNanos();
            while (System.nanoTime() < deadline) c.poll(Duration.ofMillis(200));
            return c.position(tp, Duration.ofSeconds(30));
        }
    }

    /** ListOffsets EARLIEST and LATEST (read_uncommitted). */
    static long[] listOffsets(Admin admin, TopicPartition tp) throws ExecutionException, InterruptedException {
        long earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset();
        long latest = admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get().offset();
        return new long[] {earliest, latest};
    }

    /** offsetsForTimes for each timestamp: the offset, or -1 when Kafka answers null. */
    static Map<Long, Long> offsetsForTimes(String bootstrap, TopicPartition tp, List<Long> timestamps) {
        Map<Long, Long> out = new LinkedHashMap<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, "read_uncommitted")) {
            for (long ts : timestamps) {
                Map<TopicPartition, OffsetAndTimestamp> r = c.offsetsForTimes(Map.of(tp, ts), Duration.ofSeconds(30));
                OffsetAndTimestamp o = r.get(tp);
                out.put(ts, o == null ? -1L : o.offset());
            }
        }
        return out;
    }

    /** Timestamps worth asking about: some record timestamps, one less and one more, and beyond the end. */
    static List<Long> sampleTimestamps(List<Rec> recs, long seed) {
        java.util.TreeSet<Long> ts = new java.util.TreeSet<>();
        ts.add(0L);
        if (recs.isEmpty()) return new ArrayList<>(ts);
        java.util.Random rnd = new java.util.Random(seed);
        long max = Long.MIN_VALUE;
        for (Rec r : recs) max = Math.max(max, r.timestamp());
        ts.add(max + 1);
        ts.add(max);
        for (int i = 0; i < 8; i++) {
            long t = recs.get(rnd.nextInt(recs.size())).timestamp();
            ts.add(t);
            ts.add(t - 1);
            ts.add(t + 1);
        }
        ts.add(recs.get(0).timestamp());
        ts.add(recs.get(recs.size() - 1).timestamp());
        return new ArrayList<>(ts);
    }
}
