package io.viper.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.logging.ConsoleHandler;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * What a command writes to {@code System.err} itself, outside the writer {@link ViperMain#execute} is given: log
 * records and progress lines. Starts with the JDK's default logging, which the viper command starts with (INFO records
 * to stderr; the test JVM's is quieter), and puts System.err and the logging back on close: the log handler a command
 * installs writes to the System.err of then.
 */
final class StderrCapture implements AutoCloseable {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final PrintStream savedErr = System.err;
    private final Logger root = Logger.getLogger("");
    private final Handler[] savedHandlers = root.getHandlers();
    private final Level savedRootLevel = root.getLevel();
    private final Level savedViperLevel = Logger.getLogger("io.viper").getLevel();

    StderrCapture() {
        System.setErr(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        setHandlers(new Handler[] {new ConsoleHandler()});
        root.setLevel(Level.INFO);
    }

    /** Everything written so far. */
    String text() {
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        System.setErr(savedErr);
        setHandlers(savedHandlers);
        root.setLevel(savedRootLevel);
        Logger.getLogger("io.viper").setLevel(savedViperLevel);
    }

    private void setHandlers(Handler[] handlers) {
        for (Handler h : root.getHandlers()) {
            root.removeHandler(h);
        }
        for (Handler h : handlers) {
            root.addHandler(h);
        }
    }
}
