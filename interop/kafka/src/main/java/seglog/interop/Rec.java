package seglog.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.TimestampType;

/**
 * One record as a consumer sees it, in the shape of {@code seglog read --json --encoding hex}:
 * keys, values and header values are hex (null stays null).
 */
record Rec(long offset, long timestamp, String timestampType, String key, String value, List<List<String>> headers) {
    private static final HexFormat HEX = HexFormat.of();

    static String hex(byte[] bytes) {
        return bytes == null ? null : HEX.formatHex(bytes);
    }

    static byte[] unhex(String text) {
        return text == null ? null : HEX.parseHex(text);
    }

    static Rec of(ConsumerRecord<byte[], byte[]> r) {
        List<List<String>> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            List<String> pair = new ArrayList<>();
            pair.add(h.key());
            pair.add(hex(h.value()));
            headers.add(pair);
        }
        String type = r.timestampType() == TimestampType.LOG_APPEND_TIME ? "log_append"
                : r.timestampType() == TimestampType.CREATE_TIME ? "create" : null;
        return new Rec(r.offset(), r.timestamp(), type, hex(r.key()), hex(r.value()), headers);
    }

    /** A producer record as the record it will be (offset {@code offset}, CreateTime). */
    static Rec of(org.apache.kafka.clients.producer.ProducerRecord<byte[], byte[]> r, long offset) {
        List<List<String>> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            List<String> pair = new ArrayList<>();
            pair.add(h.key());
            pair.add(hex(h.value()));
            headers.add(pair);
        }
        return new Rec(offset, r.timestamp(), "create", hex(r.key()), hex(r.value()), headers);
    }

    static Rec of(JsonNode n) {
        List<List<String>> headers = new ArrayList<>();
        for (JsonNode h : n.path("headers")) {
            List<String> pair = new ArrayList<>();
            pair.add(h.get(0).asText());
            pair.add(h.get(1).isNull() ? null : h.get(1).asText());
            headers.add(pair);
        }
        return new Rec(n.get("offset").asLong(),
                n.get("timestamp").isNull() ? -1 : n.get("timestamp").asLong(),
                n.get("timestamp_type").isNull() ? null : n.get("timestamp_type").asText(),
                n.get("key").isNull() ? null : n.get("key").asText(),
                n.get("value").isNull() ? null : n.get("value").asText(),
                headers);
    }

    /** The line {@code seglog produce --encoding hex} takes for this record. */
    ObjectNode toProduceJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("timestamp", timestamp);
        if (key == null) o.putNull("key"); else o.put("key", key);
        if (value == null) o.putNull("value"); else o.put("value", value);
        ArrayNode hs = o.putArray("headers");
        for (List<String> h : headers) {
            ArrayNode pair = hs.addArray();
            pair.add(h.get(0));
            if (h.get(1) == null) pair.addNull(); else pair.add(h.get(1));
        }
        return o;
    }

    ObjectNode toJson() {
        ObjectNode o = toProduceJson();
        o.put("offset", offset);
        o.put("timestamp_type", timestampType);
        return o;
    }

    /** The first field where {@code this} (Kafka) and {@code other} (seglog) differ, or null. */
    String diff(Rec other) {
        if (offset != other.offset) return "offset " + offset + " vs " + other.offset;
        if (timestamp != other.timestamp) return "timestamp " + timestamp + " vs " + other.timestamp;
        if (!Objects.equals(timestampType, other.timestampType)) return "timestamp_type " + timestampType + " vs " + other.timestampType;
        if (!Objects.equals(key, other.key)) return "key " + key + " vs " + other.key;
        if (!Objects.equals(value, other.value)) return "value " + abbreviate(value) + " vs " + abbreviate(other.value);
        if (!Objects.equals(headers, other.headers)) return "headers " + headers + " vs " + other.headers;
        return null;
    }

    private static String abbreviate(String s) {
        return s == null ? "null" : s.length() <= 40 ? s : s.substring(0, 40) + "...(" + s.length() / 2 + " bytes)";
    }
}
