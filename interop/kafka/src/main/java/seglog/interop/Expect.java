package seglog.interop;

import java.util.List;
import java.util.Map;

/** What Kafka says about one partition: the consumer's records, ListOffsets, offsetsForTimes. */
record Expect(String name, List<Rec> records, long earliest, long latest, Map<Long, Long> offsetsForTimes) {}
