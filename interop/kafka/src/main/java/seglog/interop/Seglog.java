package seglog.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The seglog binary, run as a child process with {@code --json}. */
final class Seglog {
    static final ObjectMapper JSON = new ObjectMapper();

    /** One run: exit code, stdout lines parsed as JSON, stderr. */
    record Run(String command, int code, List<JsonNode> lines, String stderr) {
        JsonNode first() {
            if (lines.isEmpty()) throw new IllegalStateException("`" + command + "` printed nothing; stderr: " + stderr);
            return lines.get(0);
        }
    }

    private final Path binary;

    Seglog(Path binary) {
        this.binary = binary;
    }

    Run run(List<String> args) throws IOException, InterruptedException {
        return run(args, null);
    }

    /** Runs {@code seglog ARGS}, feeding {@code stdin} (when not null) as its input. */
    Run run(List<String> args, Path stdin) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(binary.toString());
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command);
        Path out = Files.createTempFile("seglog-out", ".jsonl");
        Path err = Files.createTempFile("seglog-err", ".txt");
        pb.redirectOutput(out.toFile());
        pb.redirectError(err.toFile());
        if (stdin != null) pb.redirectInput(stdin.toFile());
        Process p = pb.start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("`" + String.join(" ", command) + "` did not finish in 120 s");
        }
        List<JsonNode> lines = new ArrayList<>();
        String shown = String.join(" ", command);
        for (String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
            if (line.isBlank()) continue;
            try {
                lines.add(JSON.readTree(line));
            } catch (IOException e) {
                throw new IOException("`" + shown + "` printed a line that is not JSON: " + line, e);
            }
        }
        String stderr = Files.readString(err, StandardCharsets.UTF_8).strip();
        Files.deleteIfExists(out);
        Files.deleteIfExists(err);
        return new Run(shown, p.exitValue(), lines, stderr);
    }

    /** Runs {@code seglog ARGS} and returns its stdout as text (exit code must be 0). */
    String text(List<String> args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(binary.toString());
        command.addAll(args);
        Path out = Files.createTempFile("seglog-out", ".txt");
        Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("`" + String.join(" ", command) + "` did not finish in 120 s");
        }
        String text = Files.readString(out, StandardCharsets.UTF_8);
        Files.deleteIfExists(out);
        if (p.exitValue() != 0) throw new IOException("`" + String.join(" ", command) + "` exited " + p.exitValue());
        return text;
    }

    /** {@code seglog read DIR --json --encoding hex}: every data record. */
    List<Rec> read(Path dir, Report report) throws IOException, InterruptedException {
        Run r = run(List.of("read", dir.toString(), "--json", "--encoding", "hex", "--quiet"));
        if (!report.check(r.code() == 0, "`" + r.command() + "` exited " + r.code() + ": " + r.stderr())) {
            return List.of();
        }
        List<Rec> recs = new ArrayList<>();
        for (JsonNode n : r.lines()) recs.add(Rec.of(n));
        return recs;
    }

    /** {@code seglog info DIR --json}. */
    JsonNode info(Path dir) throws IOException, InterruptedException {
        Run r = run(List.of("info", dir.toString(), "--json"));
        if (r.code() != 0) throw new IOException("`" + r.command() + "` exited " + r.code() + ": " + r.stderr());
        return r.first();
    }

    /** {@code seglog verify DIR --json}. */
    Run verify(Path dir) throws IOException, InterruptedException {
        return run(List.of("verify", dir.toString(), "--json"));
    }

    /**
     * The offset {@code seglog read --from-timestamp MS --max-records 1 --include-control} starts at,
     * or -1 when it prints nothing (no record at or after MS).
     */
    long offsetForTimestamp(Path dir, long ts) throws IOException, InterruptedException {
        Run r = run(List.of("read", dir.toString(), "--from-timestamp", Long.toString(ts), "--max-records", "1",
                "--include-control", "--json", "--encoding", "hex", "--quiet"));
        if (r.code() != 0) throw new IOException("`" + r.command() + "` exited " + r.code() + ": " + r.stderr());
        return r.lines().isEmpty() ? -1 : r.first().get("offset").asLong();
    }
}
