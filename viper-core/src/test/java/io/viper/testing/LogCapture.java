package io.viper.testing;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/** Captures warnings logged through System.Logger (backed by java.util.logging) under a logger name prefix. */
public final class LogCapture implements AutoCloseable {
    private final Logger logger;
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final List<String> formatted = new CopyOnWriteArrayList<>();
    private final SimpleFormatter formatter = new SimpleFormatter();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
                lines.add(r.getMessage());
                formatted.add(formatter.formatMessage(r));
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    /** Starts capturing warnings of {@code loggerName} and its children. */
    public LogCapture(String loggerName) {
        this.logger = Logger.getLogger(loggerName);
        logger.addHandler(handler);
    }

    /** The captured messages so far. */
    public List<String> lines() {
        return List.copyOf(lines);
    }

    /** The captured messages so far with their parameters filled in, as a log shows them. */
    public List<String> formattedLines() {
        return List.copyOf(formatted);
    }

    /** Waits up to 5 s for a captured line containing {@code text}. */
    public boolean await(String text) throws InterruptedException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (System.nanoTime() < deadline) {
            if (lines.stream().anyMatch(l -> l.contains(text))) {
                return true;
            }
            Thread.sleep(10);
        }
        return false;
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }
}
