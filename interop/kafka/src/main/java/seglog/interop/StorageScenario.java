package seglog.interop;

import java.nio.file.Path;

/** Scenario 3, Kafka storage code in-process. */
final class StorageScenario {
    private final Report report;
    private final Seglog seglog;
    private final Path work;

    StorageScenario(Report report, Seglog seglog, Path work) {
        this.report = report;
        this.seglog = seglog;
        this.work = work;
    }

    void run() throws Exception {
        report.scope("Kafka storage in-process");
        report.fail("not implemented yet");
    }
}
