package io.viper.scheduler;

/**
 * Whether the model as trained now is at a low of its own: each version is a draw around the trend of the training (the
 * batches just before it move it a little one way or the other), the draw wanders over a few iterations and stays with
 * a version for as long as it serves. Followed on a fixed panel ({@link StalenessProbe.Measurement#panel()}, the
 * current model's loss on the same images every iteration), a low shows when the loss turns up again: the version of
 * the iteration before was the lowest of the last {@code span} iterations. A fresh sample every iteration cannot see
 * such a draw (on the demo's drifting stream a version's own standing has a spread of about 0.006 in mean loss, a
 * 64-image sample one of 0.067).
 *
 * <p>Not thread-safe: the training thread owns it.
 */
final class PanelLows {
    private final double[] ring;
    private int count;
    private int head;

    /** @param span how many iterations before a low it must be lower than, at least 1 */
    PanelLows(int span) {
        this.ring = new double[Math.max(1, span) + 2];
    }

    /** Adds the current model's panel loss of this iteration; NaN (no panel) forgets what came before. */
    void observe(double panel) {
        if (!Double.isFinite(panel)) {
            reset();
            return;
        }
        ring[head] = panel;
        head = (head + 1) % ring.length;
        count = Math.min(ring.length, count + 1);
    }

    /** Forgets every loss (the stream changed, and with it what the panel scores). */
    void reset() {
        count = 0;
        head = 0;
    }

    /** Whether it holds {@code span + 2} losses in a row, so that {@link #turnedUp()} can say yes. */
    boolean ready() {
        return count == ring.length;
    }

    /**
     * Whether the loss just turned up after a low: the one before it is above the previous iteration's, which is below
     * every one of the {@code span} before it. False until {@code span + 2} losses were seen.
     */
    boolean turnedUp() {
        if (count < ring.length) {
            return false;
        }
        double now = at(0);
        double low = at(1);
        if (!(now > low)) {
            return false;
        }
        for (int k = 2; k < ring.length; k++) {
            if (at(k) <= low) {
                return false;
            }
        }
        return true;
    }

    /** The loss {@code back} iterations before the latest. */
    private double at(int back) {
        return ring[Math.floorMod(head - 1 - back, ring.length)];
    }
}
