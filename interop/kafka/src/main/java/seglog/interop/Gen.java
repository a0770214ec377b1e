package seglog.interop;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;

/** Deterministic test records: null keys, null values, headers (one with a null value), binary bytes. */
final class Gen {
    private static final String WORDS = "offset segment index batch broker replica leader epoch compaction tombstone ";
    private final Random rnd;
    private final String topic;
    private final long baseTs;
    private int i;

    Gen(String topic, long seed, long baseTs) {
        this.rnd = new Random(seed);
        this.topic = topic;
        this.baseTs = baseTs;
    }

    /** Next record: every 5th key null, every 11th value null, every 3rd with headers, some timestamps out of order. */
    ProducerRecord<byte[], byte[]> next() {
        int n = i++;
        byte[] key = n % 5 == 0 ? null : ("key-" + (n % 97)).getBytes(StandardCharsets.UTF_8);
        byte[] value = n % 11 == 0 ? null : value(10 + rnd.nextInt(140));
        long ts = baseTs + n * 10L - (n % 13 == 0 ? 3000 : 0);
        RecordHeaders headers = new RecordHeaders();
        if (n % 3 == 0) {
            headers.add("trace", value(8));
            headers.add("empty", new byte[0]);
            headers.add("null", null);
        }
        return new ProducerRecord<>(topic, 0, ts, key, value, headers);
    }

    /** A compaction workload record: 60 keys, every 7th a tombstone. */
    ProducerRecord<byte[], byte[]> nextCompacted() {
        int n = i++;
        byte[] key = ("user-" + rnd.nextInt(60)).getBytes(StandardCharsets.UTF_8);
        byte[] value = n % 7 == 3 ? null : value(20 + rnd.nextInt(80));
        return new ProducerRecord<>(topic, 0, baseTs + n * 10L, key, value);
    }

    private byte[] value(int len) {
        byte[] b = new byte[len];
        for (int j = 0; j < len; j++) {
            // Mostly text (so the codecs compress), sometimes any byte.
            b[j] = rnd.nextInt(8) == 0 ? (byte) rnd.nextInt(256) : (byte) WORDS.charAt(rnd.nextInt(WORDS.length()));
        }
        return b;
    }
}
