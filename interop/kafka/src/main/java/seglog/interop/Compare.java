package seglog.interop;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** seglog's answers on one partition directory against Kafka's. */
final class Compare {
    private Compare() {}

    /**
     * Opens {@code dir} with seglog (read-only: the bytes must not change) and checks records,
     * verify, log start/end offsets and offset-for-timestamp against {@code kafka}.
     *
     * @param verifyMustBeClean false for a directory a killed broker left (a crash leaves
     *     preallocated indexes, which verify reports); then its problems are only noted
     */
    static void partition(Report report, Seglog seglog, Path dir, Expect kafka, boolean verifyMustBeClean)
            throws IOException, InterruptedException {
        Map<String, String> before = Fs.hashTree(dir);
        String where = kafka.name() + " (" + dir + ")";

        List<Rec> ours = seglog.read(dir, report);
        records(report, where, kafka.records(), ours);

        Seglog.Run v = seglog.verify(dir);
        JsonNode vr = v.lines().isEmpty() ? null : v.first();
        boolean clean = v.code() == 0 && vr != null && vr.path("ok").asBoolean(false);
        if (verifyMustBeClean) {
            report.check(clean, where + ": `seglog verify` is not clean (exit " + v.code() + "): "
                    + (vr == null ? v.stderr() : vr.path("problems").toString()));
        } else if (!clean) {
            report.note(where + ": verify after SIGKILL (before any recovery) reports "
                    + (vr == null ? v.stderr() : vr.path("problems").toString()));
        }
        if (vr != null) {
            long dataAndControl = vr.path("records").asLong(-1);
            report.check(dataAndControl >= kafka.records().size(),
                    where + ": verify counted " + dataAndControl + " records, fewer than the consumer's " + kafka.records().size());
        }

        JsonNode info = seglog.info(dir);
        report.equal(kafka.earliest(), info.path("log_start_offset").asLong(), where + ": log start offset (ListOffsets EARLIEST vs info)");
        report.equal(kafka.latest(), info.path("log_end_offset").asLong(), where + ": log end offset (ListOffsets LATEST vs info)");

        offsetsForTimes(report, seglog, dir, where, kafka.offsetsForTimes());
        Map<String, String> after = Fs.hashTree(dir);
        report.check(before.equals(after), where + ": seglog changed the directory it only read: before "
                + before.keySet() + ", after " + after.keySet());
    }

    /** offsetsForTimes against {@code read --from-timestamp}: one failure per partition, with a diagnosis. */
    static void offsetsForTimes(Report report, Seglog seglog, Path dir, String where, Map<Long, Long> kafka)
            throws IOException, InterruptedException {
        List<String> diffs = new java.util.ArrayList<>();
        for (Map.Entry<Long, Long> e : kafka.entrySet()) {
            long ours = seglog.offsetForTimestamp(dir, e.getKey());
            if (ours != e.getValue()) diffs.add("ts " + e.getKey() + ": Kafka " + e.getValue() + ", seglog " + ours);
        }
        if (diffs.isEmpty()) {
            report.check(true, "");
            return;
        }
        StringBuilder why = new StringBuilder();
        List<Path> empty = Fs.list(dir).stream()
                .filter(p -> p.getFileName().toString().endsWith(".log") && p.toFile().length() == 0).toList();
        if (!empty.isEmpty()) {
            why.append("; DIAGNOSIS: ").append(empty.size()).append(" empty segment(s) (first ")
                    .append(empty.get(0).getFileName()).append(", mtime ").append(empty.get(0).toFile().lastModified())
                    .append(") precede the records. Kafka's LogSegment.largestTimestamp() falls back to the .log file's")
                    .append(" mtime when a segment holds no timestamp, and UnifiedLog.searchOffsetInLocalLog picks the")
                    .append(" first segment whose largestTimestamp >= target, so Kafka answers none (-1) for every target")
                    .append(" up to that mtime; seglog skips segments without records");
        }
        report.fail(where + ": offset for timestamp (offsetsForTimes vs `read --from-timestamp T --max-records 1"
                + " --include-control`, -1 = none) differs for " + diffs.size() + " of " + kafka.size()
                + " sampled timestamps: " + String.join("; ", diffs.subList(0, Math.min(3, diffs.size()))) + why);
    }

    static void records(Report report, String where, List<Rec> kafka, List<Rec> ours) {
        int mismatches = 0;
        int n = Math.min(kafka.size(), ours.size());
        for (int i = 0; i < n; i++) {
            String d = kafka.get(i).diff(ours.get(i));
            if (d != null) {
                mismatches++;
                if (mismatches <= 3) {
                    report.fail(where + ": record #" + i + " (Kafka offset " + kafka.get(i).offset() + ") differs: Kafka vs seglog " + d);
                }
            }
        }
        if (mismatches > 3) report.fail(where + ": " + (mismatches - 3) + " more records differ");
        report.check(kafka.size() == ours.size(), where + ": the consumer read " + kafka.size()
                + " records, seglog read " + ours.size()
                + (kafka.size() > n ? "; first missing in seglog: " + kafka.get(n) : "")
                + (ours.size() > n ? "; first extra in seglog: " + ours.get(n) : ""));
        if (mismatches == 0 && kafka.size() == ours.size()) {
            Log.info(where + ": " + ours.size() + " records identical");
        }
    }
}
