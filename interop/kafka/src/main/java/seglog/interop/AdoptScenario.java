package seglog.interop;

import java.nio.file.Path;

/** Scenario 2, seglog -> broker. */
final class AdoptScenario {
    private final Report report;
    private final Seglog seglog;
    private final Path work;

    AdoptScenario(Report report, Seglog seglog, Path work) {
        this.report = report;
        this.seglog = seglog;
        this.work = work;
    }

    void run() throws Exception {
        report.scope("seglog->broker (adopt)");
        report.fail("not implemented yet");
    }
}
