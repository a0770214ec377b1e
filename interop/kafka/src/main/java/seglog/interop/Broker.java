package seglog.interop;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;

/**
 * A single-node KRaft Kafka (combined broker + controller) in a child JVM, on 127.0.0.1 with
 * ports picked free at format time, its log.dirs in {@code root/logs}.
 */
final class Broker implements AutoCloseable {
    final Path root;
    final Path logDir;
    private final Path props;
    private final Path log4j;
    private final int port;
    private final int controllerPort;
    private Process process;
    private int starts;

    /** Every broker JVM still running; a shutdown hook kills them if the harness itself is stopped. */
    private static final java.util.Set<Process> LIVE = java.util.concurrent.ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly)));
    }

    private Broker(Path root, int port, int controllerPort) {
        this.root = root;
        this.logDir = root.resolve("logs");
        this.props = root.resolve("server.properties");
        this.log4j = root.resolve("log4j2.properties");
        this.port = port;
        this.controllerPort = controllerPort;
    }

    /** Writes server.properties and formats the storage with Kafka's StorageTool. */
    static Broker format(Path root) throws IOException, InterruptedException {
        return format(root, Map.of());
    }

    /** As {@link #format(Path)}, with {@code extra} broker properties added (or overriding). */
    static Broker format(Path root, Map<String, String> extra) throws IOException, InterruptedException {
        Files.createDirectories(root);
        Broker b = new Broker(root, freePort(), freePort());
        Properties p = new Properties();
        p.putAll(Map.ofEntries(
                Map.entry("process.roles", "broker,controller"),
                Map.entry("node.id", "1"),
                Map.entry("controller.quorum.voters", "1@127.0.0.1:" + b.controllerPort),
                Map.entry("listeners", "PLAINTEXT://127.0.0.1:" + b.port + ",CONTROLLER://127.0.0.1:" + b.controllerPort),
                Map.entry("advertised.listeners", "PLAINTEXT://127.0.0.1:" + b.port),
                Map.entry("controller.listener.names", "CONTROLLER"),
                Map.entry("inter.broker.listener.name", "PLAINTEXT"),
                Map.entry("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"),
                Map.entry("log.dirs", b.logDir.toString()),
                Map.entry("num.partitions", "1"),
                Map.entry("auto.create.topics.enable", "false"),
                Map.entry("offsets.topic.replication.factor", "1"),
                Map.entry("offsets.topic.num.partitions", "1"),
                Map.entry("transaction.state.log.replication.factor", "1"),
                Map.entry("transaction.state.log.min.isr", "1"),
                Map.entry("transaction.state.log.num.partitions", "1"),
                Map.entry("share.coordinator.state.topic.replication.factor", "1"),
                Map.entry("share.coordinator.state.topic.min.isr", "1"),
                Map.entry("group.initial.rebalance.delay.ms", "0"),
                Map.entry("log.retention.check.interval.ms", "300"),
                Map.entry("log.initial.task.delay.ms", "0"),
                Map.entry("log.segment.delete.delay.ms", "0"),
                Map.entry("log.cleaner.backoff.ms", "200"),
                Map.entry("log.cleaner.threads", "1"),
                Map.entry("log.cleaner.dedupe.buffer.size", "4194304"),
                Map.entry("log.cleaner.io.buffer.size", "65536"),
                Map.entry("num.network.threads", "2"),
                Map.entry("num.io.threads", "2"),
                Map.entry("background.threads", "2"),
                Map.entry("num.recovery.threads.per.data.dir", "1"),
                Map.entry("log.index.size.max.bytes", "65536")));
        p.putAll(extra);
        try (var w = Files.newBufferedWriter(b.props, StandardCharsets.UTF_8)) {
            p.store(w, "seglog interop broker");
        }
        Files.writeString(b.log4j, String.join("\n",
                "status = warn",
                "appender.out.type = Console",
                "appender.out.name = OUT",
                "appender.out.layout.type = PatternLayout",
                "appender.out.layout.pattern = [%d] %p %m (%c)%n",
                "rootLogger.level = info",
                "rootLogger.appenderRef.out.ref = OUT",
                "logger.state.name = state.change.logger",
                "logger.state.level = warn",
                ""), StandardCharsets.UTF_8);
        String clusterId = Uuid.randomUuid().toString();
        List<String> cmd = b.java("kafka.tools.StorageTool", "format", "--cluster-id", clusterId, "--config", b.props.toString());
        Path out = root.resolve("format.log");
        Process f = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        if (!f.waitFor(120, TimeUnit.SECONDS) || f.exitValue() != 0) {
            f.destroyForcibly();
            throw new IOException("StorageTool format failed:\n" + Files.readString(out));
        }
        return b;
    }

    private List<String> java(String mainClass, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(List.of("-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.awt.headless=true", "-Dlog4j2.configurationFile=" + log4j,
                "-cp", System.getProperty("java.class.path"), mainClass));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Runs a Kafka tool's main class in a child JVM; returns its output (stdout and stderr). */
    String runTool(String mainClass, List<String> args) throws IOException, InterruptedException {
        Path out = Files.createTempFile(root, "tool", ".out");
        Process t = new ProcessBuilder(java(mainClass, args.toArray(new String[0])))
                .redirectErrorStream(true).redirectOutput(out.toFile()).start();
        if (!t.waitFor(120, TimeUnit.SECONDS)) {
            t.destroyForcibly();
            throw new IOException(mainClass + " did not finish in 120 s");
        }
        String text = Files.readString(out, StandardCharsets.UTF_8);
        if (t.exitValue() != 0) throw new IOException(mainClass + " " + args + " exited " + t.exitValue() + ":\n" + text);
        return text;
    }

    String bootstrap() {
        return "127.0.0.1:" + port;
    }

    Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 20000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60000));
    }

    /** Starts the broker and waits until it answers (at most 90 s). */
    void start() throws IOException, InterruptedException {
        starts++;
        Path out = root.resolve("broker-" + starts + ".log");
        Log.info("starting broker " + bootstrap() + " (log " + out + ")");
        process = new ProcessBuilder(java("kafka.Kafka", props.toString()))
                .redirectErrorStream(true).redirectOutput(out.toFile()).start();
        LIVE.add(process);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("the broker exited with " + process.exitValue() + "\n" + tail());
            }
            if (portOpen() && ready()) {
                Log.info("broker up");
                return;
            }
            Thread.sleep(300);
        }
        throw new IOException("the broker did not come up in 90 s\n" + tail());
    }

    private boolean portOpen() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private boolean ready() {
        try (Admin a = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(),
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 3000, AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 2000))) {
            return !a.describeCluster().nodes().get(3, TimeUnit.SECONDS).isEmpty();
        } catch (Exception e) {
            return false;
        }
    }

    /** SIGTERM (Kafka's clean shutdown), then checks the clean-shutdown marker is written. */
    void stopClean() throws IOException, InterruptedException {
        Log.info("stopping broker cleanly");
        process.destroy();
        if (!process.waitFor(90, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            throw new IOException("the broker did not stop in 90 s after SIGTERM\n" + tail());
        }
        LIVE.remove(process);
        if (!Files.exists(logDir.resolve(".kafka_cleanshutdown"))) {
            throw new IOException("the broker stopped without writing .kafka_cleanshutdown\n" + tail());
        }
    }

    /** SIGKILL. */
    void kill() throws InterruptedException {
        Log.info("killing broker (SIGKILL)");
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
        LIVE.remove(process);
    }

    /** The last 60 lines of the newest broker log. */
    String tail() {
        try {
            List<String> lines = Files.readAllLines(root.resolve("broker-" + starts + ".log"), StandardCharsets.UTF_8);
            return "--- broker log tail (" + root.resolve("broker-" + starts + ".log") + ") ---\n"
                    + String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
        } catch (IOException e) {
            return "(no broker log: " + e + ")";
        }
    }

    /** The broker log lines (of every start so far) containing {@code needle}. */
    List<String> grepLogs(String needle) throws IOException {
        List<String> hits = new ArrayList<>();
        for (int i = 1; i <= starts; i++) {
            for (String line : Files.readAllLines(root.resolve("broker-" + i + ".log"), StandardCharsets.UTF_8)) {
                if (line.contains(needle)) hits.add(line);
            }
        }
        return hits;
    }

    /** The lines of the current (last) start's broker log containing {@code needle}. */
    List<String> grepLastLog(String needle) throws IOException {
        List<String> hits = new ArrayList<>();
        for (String line : Files.readAllLines(root.resolve("broker-" + starts + ".log"), StandardCharsets.UTF_8)) {
            if (line.contains(needle)) hits.add(line);
        }
        return hits;
    }

    boolean alive() {
        return process != null && process.isAlive();
    }

    @Override
    public void close() throws InterruptedException {
        if (alive()) {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }
}
