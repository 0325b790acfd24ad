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
    private final List<String> lines = new ArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
                synchronized (lines) {
                    lines.add(r.getMessage());
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
        logger = Logger.getLogger(name);
        logger.addHandler(handler);
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
    }
}
