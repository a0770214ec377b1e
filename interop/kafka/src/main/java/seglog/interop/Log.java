package seglog.interop;

import java.time.Duration;
import java.time.Instant;

/** The harness's own progress lines (stderr, with seconds since start). */
final class Log {
    private static final Instant START = Instant.now();

    private Log() {}

    static void info(String message) {
        long ms = Duration.between(START, Instant.now()).toMillis();
        System.err.printf("[kafka-interop %6.1fs] %s%n", ms / 1000.0, message);
    }
}
