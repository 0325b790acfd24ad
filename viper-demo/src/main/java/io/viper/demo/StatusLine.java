package io.viper.demo;

import java.io.PrintWriter;

/**
 * The demo's status on stderr: a live line rewritten in place on a terminal, and permanent lines. Off a terminal only
 * the permanent lines are written. Any thread may call it.
 */
public final class StatusLine {
    private final PrintWriter err;
    private final boolean live;
    private int shown;

    /**
     * Writes to {@code err}.
     *
     * @param live whether {@code err} is a terminal, where the live line can be rewritten
     */
    public StatusLine(PrintWriter err, boolean live) {
        this.err = err;
        this.live = live;
    }

    /** Replaces the live line (terminal only). */
    public synchronized void live(String text) {
        if (!live) {
            return;
        }
        String t = text.length() > 150 ? text.substring(0, 150) : text;
        err.print("\r" + t + " ".repeat(Math.max(0, shown - t.length())));
        err.flush();
        shown = t.length();
    }

    /** Clears the live line. */
    public synchronized void clear() {
        if (live && shown > 0) {
            err.print("\r" + " ".repeat(shown) + "\r");
            err.flush();
            shown = 0;
        }
    }

    /** Prints a permanent line. */
    public synchronized void line(String text) {
        clear();
        err.println(text);
        err.flush();
    }
}
