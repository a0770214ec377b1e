package seglog.interop;

import org.apache.kafka.common.utils.Time;

/**
 * The clock of {@link DiffDriver}'s log: the system clock, except while a request runs at the
 * "now" the Rust side chose for both logs ({@code pin}): its held clock, the wall clock at the
 * history's start plus a fixed step per step, carried by every request; seglog's side reads the
 * same time from its {@code ManualClock}. Only file mtimes (an empty segment's largest
 * timestamp) still come from the wall clock.
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
