package io.viper.cli;

import java.util.Locale;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * One-line log records on stderr. Quiet by default (warnings only, so that stdout stays JSON); {@code --verbose} shows
 * Viper's INFO lines. Third-party libraries stay at WARNING.
 */
public final class CliLogging {
    /*
     * The loggers given a level here, held for the life of the process: JUL holds loggers weakly, so a level set on
     * one nobody references is lost with it at the next GC, and a long consume or agent would then print, say,
     * Kafka's NetworkClient warnings again.
     */
    private static final Logger VIPER = Logger.getLogger("io.viper");
    private static final Logger KAFKA = Logger.getLogger("org.apache.kafka");
    private static final Logger NETTY = Logger.getLogger("io.netty");

    private CliLogging() {}

    /** Installs the one-line stderr handler; INFO lines of Viper only when {@code verbose}. */
    public static void configure(boolean verbose) {
        Logger root = Logger.getLogger("");
        for (var h : root.getHandlers()) {
            root.removeHandler(h);
        }
        ConsoleHandler handler = new ConsoleHandler();
        handler.setLevel(Level.ALL);
        handler.setFormatter(new Formatter() {
            @Override
            public String format(LogRecord r) {
                String logger = r.getLoggerName() == null
                        ? ""
                        : r.getLoggerName().substring(r.getLoggerName().lastIndexOf('.') + 1);
                String msg = formatMessage(r);
                String thrown =
                        r.getThrown() != null && System.getenv("VIPER_DEBUG") != null ? " " + r.getThrown() : "";
                return String.format(
                        "viper %-7s %s: %s%s%n", r.getLevel().getName().toLowerCase(Locale.ROOT), logger, msg, thrown);
            }
        });
        root.addHandler(handler);
        root.setLevel(Level.WARNING);
        VIPER.setLevel(verbose ? Level.INFO : Level.WARNING);
        KAFKA.setLevel(Level.SEVERE);
        NETTY.setLevel(Level.SEVERE);
    }
}
