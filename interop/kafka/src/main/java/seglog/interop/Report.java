package seglog.interop;

import java.util.ArrayList;
import java.util.List;

/** Every check the harness makes: passes are counted, failures are kept with a precise message. */
final class Report {
    private final List<String> failures = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private int passed;
    private String scope = "";

    void scope(String scope) {
        this.scope = scope;
        Log.info("--- " + scope);
    }

    /** Records one check; {@code message} says what was compared and what each side said. */
    boolean check(boolean ok, String message) {
        if (ok) {
            passed++;
        } else {
            String line = "[" + scope + "] " + message;
            failures.add(line);
            Log.info("FAIL " + line);
        }
        return ok;
    }

    void fail(String message) {
        check(false, message);
    }

    /** Compares two values; the message names both. */
    boolean equal(Object kafka, Object seglog, String what) {
        return check(java.util.Objects.equals(kafka, seglog),
                what + ": Kafka says " + kafka + ", seglog says " + seglog);
    }

    void note(String message) {
        notes.add("[" + scope + "] " + message);
        Log.info("note: " + message);
    }

    int passed() {
        return passed;
    }

    List<String> failures() {
        return failures;
    }

    List<String> notes() {
        return notes;
    }
}
