package seglog.interop;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.storage.internals.log.BatchMetadata;
import org.apache.kafka.storage.internals.log.ProducerStateEntry;
import org.apache.kafka.storage.internals.log.ProducerStateManager;

/**
 * The broker's state beside the log (issue #16), seglog against a real broker's partition
 * directory after its clean shutdown: the {@code leader-epoch-checkpoint} (as {@code seglog info}
 * reads it, and as {@code seglog recover} rebuilds it on a copy holding only the segments), the
 * {@code .txnindex} files that copy's recovery rebuilds (byte for byte), the producer
 * {@code .snapshot} its clean close writes (entries as a set, read with Kafka's own
 * {@code ProducerStateManager.readSnapshot}, and named by the same offset), and
 * {@code seglog read --isolation read-committed} against Kafka's consumer in read_committed mode.
 */
final class StateCompare {
    private final Report report;
    private final Seglog seglog;
    private final Path scratch;

    StateCompare(Report report, Seglog seglog, Path scratch) {
        this.report = report;
        this.seglog = seglog;
        this.scratch = scratch;
    }

    /**
     * Every comparison for one partition directory (which must not change). {@code rebuildEpochs}
     * is false for compacted partitions: the cleaner may remove an epoch's first batch, so its
     * start offset is in the broker's checkpoint only and cannot be rebuilt from the batches.
     * Returns the broker's leader epochs.
     */
    List<List<Long>> partition(Path dir, List<Rec> readCommitted, boolean rebuildEpochs) throws Exception {
        String where = dir.getFileName().toString();
        Path copy = recoveredCopy(dir);
        List<List<Long>> epochs = leaderEpochs(dir, copy, rebuildEpochs);
        // The partitions whose epochs cannot be rebuilt are the compacted ones: their cleaner's
        // .txnindex may also hold entries no rebuild finds.
        if (rebuildEpochs) transactionIndexes(where, dir, copy);
        else cleanedTransactionIndexes(where, dir, copy);
        snapshots(where, dir, copy);
        readCommitted(where, dir, readCommitted);
        return epochs;
    }

    /**
     * A copy of {@code dir}'s {@code .log}, {@code .index} and {@code .timeindex} files (no
     * checkpoint, no {@code .txnindex}, no {@code .snapshot}), recovered by {@code seglog recover}.
     */
    Path recoveredCopy(Path dir) throws Exception {
        Path copy = scratch.resolve(dir.getFileName());
        Fs.deleteTree(copy);
        Files.createDirectories(copy);
        for (String n : Compare.segmentFiles(dir)) Files.copy(dir.resolve(n), copy.resolve(n));
        Seglog.Run r = seglog.run(List.of("recover", copy.toString(), "--json"));
        report.check(r.code() == 0, copy + ": `seglog recover` exited " + r.code() + ": " + r.stderr());
        return copy;
    }

    /**
     * The broker's {@code leader-epoch-checkpoint}: {@code seglog info --json}'s
     * {@code leader_epochs} on the broker's directory are its entries, and (when
     * {@code rebuild}) the file {@code seglog recover} rebuilt on the segment-only copy has its
     * bytes. Returns the broker's entries.
     */
    List<List<Long>> leaderEpochs(Path dir, Path copy, boolean rebuild) throws Exception {
        String where = dir.getFileName() + ": leader-epoch-checkpoint";
        Path file = dir.resolve("leader-epoch-checkpoint");
        if (!report.check(Files.exists(file), where + ": the broker wrote none")) return List.of();
        byte[] kafka = Files.readAllBytes(file);
        List<List<Long>> entries = parseEpochs(new String(kafka, StandardCharsets.UTF_8));
        if (entries == null) {
            report.fail(where + ": the broker's file does not parse as version 0: " + new String(kafka, StandardCharsets.UTF_8));
            return List.of();
        }
        JsonNode info = seglog.info(dir);
        List<List<Long>> ours = new ArrayList<>();
        for (JsonNode pair : info.path("leader_epochs")) ours.add(List.of(pair.path(0).asLong(), pair.path(1).asLong()));
        boolean same = report.equal(entries, ours,
                where + " ([epoch, start offset], the broker's file vs `seglog info --json` leader_epochs)");
        if (rebuild) {
            Path rebuilt = copy.resolve("leader-epoch-checkpoint");
            byte[] mine = Files.exists(rebuilt) ? Files.readAllBytes(rebuilt) : new byte[0];
            same &= report.check(Arrays.equals(kafka, mine), where + " rebuilt by `seglog recover` from the batches differs:"
                    + " Kafka " + show(kafka) + ", seglog " + (Files.exists(rebuilt) ? show(mine) : "wrote none"));
        }
        if (same) Log.info(where + " " + entries + ": seglog reads it" + (rebuild ? " and rebuilds its bytes" : ""));
        return entries;
    }

    /** Kafka's CheckpointFile, version 0: {@code 0}, the count, then {@code epoch startOffset} lines; null if not that. */
    static List<List<Long>> parseEpochs(String text) {
        String[] lines = text.split("\n", -1);
        if (lines.length < 2 || !lines[0].equals("0")) return null;
        int count;
        try {
            count = Integer.parseInt(lines[1]);
        } catch (NumberFormatException e) {
            return null;
        }
        // Entries, then the empty string after the last newline.
        if (lines.length != count + 3 || !lines[count + 2].isEmpty()) return null;
        List<List<Long>> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String[] f = lines[2 + i].split(" ");
            if (f.length != 2) return null;
            try {
                out.add(List.of(Long.parseLong(f[0]), Long.parseLong(f[1])));
            } catch (NumberFormatException e) {
                return null;
            }
        }
        return out;
    }

    /**
     * The {@code .txnindex} files of the recovered copy against the broker's: the same set of
     * non-empty files, the same bytes.
     */
    void transactionIndexes(String where, Path dir, Path copy) throws IOException {
        List<String> kafka = nonEmpty(dir, ".txnindex");
        List<String> ours = nonEmpty(copy, ".txnindex");
        if (!report.check(kafka.equals(ours), where + ": non-empty .txnindex files: Kafka " + kafka
                + ", seglog recover rebuilt " + ours)) {
            return;
        }
        boolean same = true;
        long entries = 0;
        for (String n : kafka) {
            byte[] k = Files.readAllBytes(dir.resolve(n));
            byte[] o = Files.readAllBytes(copy.resolve(n));
            entries += k.length / 34;
            same &= report.check(Arrays.equals(k, o), where + ": " + n + " rebuilt by `seglog recover` differs: Kafka "
                    + k.length + " bytes (" + k.length / 34 + " entries), seglog " + o.length + " bytes");
        }
        if (same && !kafka.isEmpty()) {
            Log.info(where + ": " + kafka.size() + " .txnindex files (" + entries + " aborted transactions) rebuilt byte for byte");
        }
    }

    /**
     * The producer snapshot of the broker's clean shutdown against the one {@code seglog recover}'s
     * clean close wrote on the copy: named by the same offset, the same entries as a set (both
     * read with Kafka's {@code ProducerStateManager.readSnapshot}).
     */
    void snapshots(String where, Path dir, Path copy) throws IOException {
        List<String> kafka = files(dir, ".snapshot");
        List<String> ours = files(copy, ".snapshot");
        if (!report.check(!kafka.isEmpty(), where + ": the broker's clean shutdown left no .snapshot")) return;
        String latest = kafka.get(kafka.size() - 1);
        if (!report.check(!ours.isEmpty() && ours.get(ours.size() - 1).equals(latest), where
                + ": latest .snapshot: Kafka " + latest + ", seglog recover wrote " + ours)) {
            return;
        }
        Set<String> k = entries(dir.resolve(latest));
        Set<String> o = entries(copy.resolve(latest));
        Set<String> missing = new TreeSet<>(k);
        missing.removeAll(o);
        Set<String> extra = new TreeSet<>(o);
        extra.removeAll(k);
        if (report.check(missing.isEmpty() && extra.isEmpty(), where + ": " + latest + " entries (producer id/epoch/last"
                + " seq/last offset/offset delta/timestamp/coordinator epoch/txn first offset): only Kafka's " + missing
                + ", only seglog's " + extra)) {
            Log.info(where + ": " + latest + ": the same " + k.size() + " producer entries");
        }
    }

    private static Set<String> entries(Path snapshot) throws IOException {
        Set<String> out = new TreeSet<>();
        for (ProducerStateEntry e : ProducerStateManager.readSnapshot(snapshot.toFile())) {
            StringBuilder sb = new StringBuilder();
            sb.append(e.producerId()).append('/').append(e.producerEpoch());
            for (BatchMetadata b : e.batchMetadata()) {
                sb.append('/').append(b.lastSeq()).append('/').append(b.lastOffset()).append('/').append(b.offsetDelta())
                        .append('/').append(b.timestamp());
            }
            sb.append('/').append(e.coordinatorEpoch()).append('/')
                    .append(e.currentTxnFirstOffset().isPresent() ? Long.toString(e.currentTxnFirstOffset().getAsLong()) : "-");
            out.add(sb.toString());
        }
        return out;
    }

    /**
     * {@code seglog read DIR --isolation read-committed} against what Kafka's consumer read in
     * read_committed mode: the same records (offsets, keys, values, headers, timestamps).
     */
    void readCommitted(String where, Path dir, List<Rec> kafka) throws Exception {
        if (kafka == null) return;
        Seglog.Run r = seglog.run(List.of("read", dir.toString(), "--isolation", "read-committed", "--json", "--encoding",
                "hex", "--quiet"));
        if (!report.check(r.code() == 0, "`" + r.command() + "` exited " + r.code() + ": " + r.stderr())) return;
        List<Rec> ours = new ArrayList<>();
        for (JsonNode n : r.lines()) ours.add(Rec.of(n));
        Compare.records(report, where + " read_committed (Kafka's consumer vs `seglog read --isolation read-committed`)",
                kafka, ours);
    }

    /**
     * The {@code .txnindex} files of a compacted partition. Kafka's cleaner
     * ({@code CleanedTransactionMetadata.onControlBatchRead}) keeps an aborted transaction's
     * entry in the round that removes its data, with the ABORT marker; a rebuild from the batches
     * finds that marker without an open transaction and makes no entry (Kafka 4.4's own recovery
     * likewise: {@code ProducerAppendInfo.appendEndTxnMarker} returns no {@code CompletedTxn}
     * then). And when the cleaner removed only the first part of an aborted transaction's data,
     * the entry the broker wrote at its marker starts earlier than the rebuilt one (which starts
     * at the first batch left). So every entry {@code seglog recover} rebuilds must be in the
     * broker's file of the same segment with the same producer and marker offset, its first and
     * last stable offsets no earlier than the broker's (as verify's rule); the others are named
     * in a note ({@code seglog verify} judges them on the broker's directory).
     */
    void cleanedTransactionIndexes(String where, Path dir, Path copy) throws IOException {
        List<String> missing = new ArrayList<>();
        List<String> kept = new ArrayList<>();
        long rebuilt = 0;
        for (String n : files(copy, ".txnindex")) {
            List<long[]> kafka = Files.exists(dir.resolve(n)) ? txnEntries(dir.resolve(n)) : List.of();
            for (long[] e : txnEntries(copy.resolve(n))) {
                rebuilt++;
                boolean found = kafka.stream().anyMatch(k -> k[0] == e[0] && k[1] == e[1] && k[3] == e[3] && k[4] <= e[4]
                        && k[2] <= e[2]);
                if (!found) missing.add(n + " " + show(e));
            }
        }
        for (String n : files(dir, ".txnindex")) {
            List<long[]> ours = Files.exists(copy.resolve(n)) ? txnEntries(copy.resolve(n)) : List.of();
            for (long[] k : txnEntries(dir.resolve(n))) {
                boolean same = ours.stream().anyMatch(e -> Arrays.equals(e, k));
                if (!same) kept.add(n + " " + show(k));
            }
        }
        if (report.check(missing.isEmpty(), where + ": entries `seglog recover` rebuilt that the broker's .txnindex lacks"
                + " (same producer and marker, first and last stable offsets no earlier): " + missing)) {
            Log.info(where + ": the " + rebuilt + " .txnindex entries `seglog recover` rebuilt are in the broker's files");
        }
        if (!kept.isEmpty()) {
            report.note(where + ": " + kept.size() + " .txnindex entries of the broker's that a rebuild from the batches"
                    + " (seglog's, as Kafka's recovery) does not make as they are, aborted transactions whose data Kafka's"
                    + " cleaner removed in whole or in part: " + kept);
        }
    }

    /** The 34-byte entries of a {@code .txnindex}: {version, producer id, first offset, last offset, last stable offset}. */
    private static List<long[]> txnEntries(Path file) throws IOException {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(Files.readAllBytes(file));
        List<long[]> out = new ArrayList<>();
        while (b.remaining() >= 34) out.add(new long[] {b.getShort(), b.getLong(), b.getLong(), b.getLong(), b.getLong()});
        return out;
    }

    private static String show(long[] e) {
        return "v" + e[0] + " producer " + e[1] + " " + e[2] + ".." + e[3] + " lso " + e[4];
    }

    private static List<String> files(Path dir, String suffix) {
        List<String> out = new ArrayList<>();
        for (Path p : Fs.list(dir)) {
            String n = p.getFileName().toString();
            if (n.endsWith(suffix)) out.add(n);
        }
        return out;
    }

    private static List<String> nonEmpty(Path dir, String suffix) {
        return files(dir, suffix).stream().filter(n -> dir.resolve(n).toFile().length() > 0).toList();
    }

    private static String show(byte[] text) {
        return "\"" + new String(text, StandardCharsets.UTF_8).replace("\n", "\\n") + "\"";
    }
}
