package io.viper.agent;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** The agent's warnings (or another package's) while a test runs, one string per log record. */
final class AgentLog implements AutoCloseable {
    private final Logger logger;
    private final Level threshold;
    private final Level levelBefore;
    private final List<String> lines = new ArrayList<>();
    private final List<String> levels = new ArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            if (r.getLevel().intValue() >= threshold.intValue()) {
                synchronized (lines) {
                    lines.add(r.getMessage());
                    levels.add(r.getLevel().getName());
                }
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    AgentLog() {
        this("io.viper.agent");
    }

    /** The warnings of the loggers under {@code name} instead (such as the notifier an agent's SDK opens). */
    AgentLog(String name) {
        this(name, Level.WARNING);
    }

    private AgentLog(String name, Level threshold) {
        this.threshold = threshold;
        logger = Logger.getLogger(name);
        levelBefore = logger.getLevel();
        if (!logger.isLoggable(threshold)) {
            logger.setLevel(threshold); // the test JVMs log warnings only
        }
        logger.addHandler(handler);
    }

    /** The agent's records from INFO up, for a test of what is no warning. */
    static AgentLog fromInfo() {
        return new AgentLog("io.viper.agent", Level.INFO);
    }

    /** The level (INFO, WARNING, ...) of the first record containing {@code text}, or null. */
    String levelOf(String text) {
        synchronized (lines) {
            for (int i = 0; i < lines.size(); i++) {
                if (lines.get(i).contains(text)) {
                    return levels.get(i);
                }
            }
            return null;
        }
    }

    /** The warnings so far that contain {@code text}. */
    List<String> matching(String text) {
        synchronized (lines) {
            return lines.stream().filter(l -> l.contains(text)).toList();
        }
    }

    /** Waits up to 10 s for a warning containing {@code text}; returns all such warnings. */
    List<String> await(String text) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (matching(text).isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        return matching(text);
    }

    List<String> all() {
        synchronized (lines) {
            return List.copyOf(lines);
        }
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
        logger.setLevel(levelBefore);
    }
}
