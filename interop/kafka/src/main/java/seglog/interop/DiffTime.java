package seglog.interop;

import org.apache.kafka.common.utils.Time;

/**
 * The clock of {@link DiffDriver}'s log: the system clock, except while an operation that reads
 * the time (retention, a cleaning round) runs at the "now" the Rust side chose for both logs
 * ({@code pin}); seglog's side reads the same pinned time ({@code interop/diff/src/ours/clock.rs}).
 */
final class DiffTime implements Time {
    private volatile long pinnedMs = -1;

    /** From now on {@link #milliseconds()} answers {@code nowMs}, until {@link #unpin()}. */
    void pin(long nowMs) {
        pinnedMs = nowMs;
    }

    /** Back to the system clock. */
    void unpin() {
        pinnedMs = -1;
    }

    @Override
    public long milliseconds() {
        long pinned = pinnedMs;
        return pinned >= 0 ? pinned : System.currentTimeMillis();
    }

    @Override
    public long nanoseconds() {
        return System.nanoTime();
    }

    @Override
    public void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
