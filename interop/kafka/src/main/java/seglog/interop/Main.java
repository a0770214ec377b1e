package seglog.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Kafka 4.4 as the oracle for seglog. Usage:
 * {@code Main broker|txn-compacted|adopt|storage|tiered|kafka-tiered|all|fixtures --seglog BIN --work DIR [--fixtures DIR] [--tiered-out DIR]}, or
 * {@code Main diff}: the differential histories' driver ({@link DiffDriver}, JSON lines on stdin/stdout).
 * Exit 0 when every check passed, 1 when any failed (each failure printed), 2 on bad usage.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) usage("no scenario");
        String scenario = args[0];
        if (scenario.equals("diff")) {
            // The differential histories' JVM side: a JSON-lines server driven by `interop/diff`.
            DiffDriver.main(java.util.Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        Path bin = null;
        Path work = null;
        Path fixtures = null;
        Path tieredOut = null;
        for (int i = 1; i < args.length; i += 2) {
            if (i + 1 >= args.length) usage(args[i] + " needs a value");
            switch (args[i]) {
                case "--seglog" -> bin = Path.of(args[i + 1]);
                case "--work" -> work = Path.of(args[i + 1]);
                case "--fixtures" -> fixtures = Path.of(args[i + 1]);
                case "--tiered-out" -> tieredOut = Path.of(args[i + 1]);
                default -> usage("unknown option " + args[i]);
            }
        }
        if (bin == null || work == null) usage("--seglog and --work are required");
        if (!List.of("broker", "txn-compacted", "adopt", "storage", "tiered", "kafka-tiered", "all", "fixtures").contains(scenario)) usage("unknown scenario " + scenario);
        if (scenario.equals("fixtures") && fixtures == null) usage("fixtures needs --fixtures DIR");
        if ((scenario.equals("kafka-tiered") || scenario.equals("all")) && tieredOut == null) {
            usage(scenario + " needs --tiered-out DIR (where seglog-tiered's kafka_tiered test reads the broker's tiers)");
        }
        Fs.deleteTree(work);
        Files.createDirectories(work);
        Report report = new Report();
        Seglog seglog = new Seglog(bin);
        int code;
        try {
            if (scenario.equals("broker") || scenario.equals("all") || scenario.equals("fixtures")) {
                new BrokerScenario(report, seglog, work).run(scenario.equals("fixtures") ? fixtures : null);
            }
            if (scenario.equals("txn-compacted")) {
                new BrokerScenario(report, seglog, work).runTxnCompacted(fixtures);
            }
            if (scenario.equals("adopt") || scenario.equals("all")) {
                new AdoptScenario(report, seglog, work).run();
            }
            if (scenario.equals("storage") || scenario.equals("all")) {
                new StorageScenario(report, seglog, work).run();
            }
            if (scenario.equals("tiered") || scenario.equals("all")) {
                new TieredScenario(report, seglog, work).run();
            }
            if (scenario.equals("kafka-tiered") || scenario.equals("all")) {
                new KafkaTieredScenario(report, seglog, work, tieredOut).run();
            }
        } catch (Exception e) {
            report.fail("the harness stopped on " + e);
            e.printStackTrace();
        }
        System.err.println();
        System.err.println("kafka interop: " + report.passed() + " checks passed, " + report.failures().size() + " failed");
        for (String n : report.notes()) System.err.println("  note: " + n);
        for (String f : report.failures()) System.err.println("  FAILED: " + f);
        code = report.failures().isEmpty() ? 0 : 1;
        if (code == 0) Fs.deleteTree(work);
        System.exit(code);
    }

    private static void usage(String why) {
        System.err.println("kafka interop: " + why
                + "\nusage: Main broker|txn-compacted|adopt|storage|tiered|kafka-tiered|all|fixtures --seglog BIN --work DIR [--fixtures DIR] [--tiered-out DIR]");
        System.exit(2);
    }
}
