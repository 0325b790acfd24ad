package io.viper.demo.digits;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * What an inference server measured: one entry per answered request (when, at which stream position, with which model
 * version, the loss, whether the answer was right), and the totals Viper optimises: the cumulative inference loss
 * ({@link #cil()}, the sum of per-request losses) and the accuracy.
 *
 * <p>Threading: thread-safe. Any number of inference threads may {@link #record} concurrently while another thread
 * reads totals or exports; every read sees a consistent prefix of the recorded entries.
 */
public final class ServingStats {
    /**
     * One answered request.
     *
     * @param timeNanos {@link System#nanoTime()} when it was recorded (or a caller-given time)
     * @param position stream position (training iteration) the request was drawn at
     * @param modelVersion version of the model that answered it (0 = none or the initial model)
     * @param loss its cross-entropy loss
     * @param correct whether the predicted digit was the true one
     */
    public record Entry(long timeNanos, long position, long modelVersion, double loss, boolean correct) {}

    /**
     * Aggregate of the entries whose position lies in {@code [startPosition, endPosition)}.
     *
     * @param cumulativeCil CIL of all entries up to and including this bucket
     */
    public record Bucket(
            long startPosition, long endPosition, int count, double meanLoss, double accuracy, double cumulativeCil) {}

    private long[] time = new long[1024];
    private long[] position = new long[1024];
    private long[] version = new long[1024];
    private double[] loss = new double[1024];
    private boolean[] correct = new boolean[1024];
    private int size;
    private double cil;
    private long correctCount;

    /** Records a request answered now ({@link System#nanoTime()}). */
    public void record(long position, long modelVersion, double loss, boolean correct) {
        record(System.nanoTime(), position, modelVersion, loss, correct);
    }

    /**
     * Records a request.
     *
     * @throws IllegalArgumentException if {@code loss} is negative or not finite
     */
    public synchronized void record(long timeNanos, long position, long modelVersion, double loss, boolean correct) {
        if (!(loss >= 0) || Double.isInfinite(loss)) {
            throw new IllegalArgumentException("loss " + loss + ", expected a finite value >= 0");
        }
        if (size == this.loss.length) {
            int n = size * 2;
            time = Arrays.copyOf(time, n);
            this.position = Arrays.copyOf(this.position, n);
            version = Arrays.copyOf(version, n);
            this.loss = Arrays.copyOf(this.loss, n);
            this.correct = Arrays.copyOf(this.correct, n);
        }
        time[size] = timeNanos;
        this.position[size] = position;
        version[size] = modelVersion;
        this.loss[size] = loss;
        this.correct[size] = correct;
        size++;
        cil += loss;
        if (correct) {
            correctCount++;
        }
    }

    /** Answers {@code request} with {@code model}, records the outcome, and returns the model's predicted digit. */
    public int serve(DigitClassifier model, long modelVersion, ContinualDigitsStream.Example request) {
        float[] p = model.predictProba(request.x());
        int predicted = DigitClassifier.argmax(p);
        record(
                request.position(),
                modelVersion,
                DigitClassifier.crossEntropy(p, request.label()),
                predicted == request.label());
        return predicted;
    }

    /** Number of recorded requests. */
    public synchronized int count() {
        return size;
    }

    /** Cumulative inference loss: the sum of all recorded losses (0 when empty). */
    public synchronized double cil() {
        return cil;
    }

    /** Mean loss per request, NaN when empty. */
    public synchronized double meanLoss() {
        return size == 0 ? Double.NaN : cil / size;
    }

    /** Fraction of correct answers, NaN when empty. */
    public synchronized double accuracy() {
        return size == 0 ? Double.NaN : (double) correctCount / size;
    }

    /** A copy of all entries in recording order. */
    public synchronized List<Entry> entries() {
        List<Entry> out = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            out.add(new Entry(time[i], position[i], version[i], loss[i], correct[i]));
        }
        return out;
    }

    /**
     * Entries grouped by position into buckets {@code [k*width, (k+1)*width)}, ascending, from the bucket of the
     * smallest position to that of the largest; empty buckets in between are included with count 0 and NaN mean loss
     * and accuracy. Empty list when nothing was recorded.
     */
    public List<Bucket> timeSeries(long width) {
        if (width < 1) {
            throw new IllegalArgumentException("bucket width " + width + ", expected >= 1");
        }
        List<Entry> all = entries();
        if (all.isEmpty()) {
            return List.of();
        }
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        for (Entry e : all) {
            min = Math.min(min, e.position());
            max = Math.max(max, e.position());
        }
        long first = Math.floorDiv(min, width);
        int buckets = Math.toIntExact(Math.floorDiv(max, width) - first + 1);
        int[] n = new int[buckets];
        double[] l = new double[buckets];
        int[] ok = new int[buckets];
        for (Entry e : all) {
            int b = (int) (Math.floorDiv(e.position(), width) - first);
            n[b]++;
            l[b] += e.loss();
            ok[b] += e.correct() ? 1 : 0;
        }
        List<Bucket> out = new ArrayList<>(buckets);
        double cum = 0;
        for (int b = 0; b < buckets; b++) {
            cum += l[b];
            long start = (first + b) * width;
            out.add(new Bucket(
                    start,
                    start + width,
                    n[b],
                    n[b] == 0 ? Double.NaN : l[b] / n[b],
                    n[b] == 0 ? Double.NaN : (double) ok[b] / n[b],
                    cum));
        }
        return out;
    }

    /**
     * Writes every entry as CSV: header {@code time_ns,position,model_version,loss,correct}, then one row per entry;
     * {@code correct} is 1 or 0.
     */
    public void writeEntriesCsv(Appendable out) {
        try {
            out.append("time_ns,position,model_version,loss,correct\n");
            for (Entry e : entries()) {
                out.append(Long.toString(e.timeNanos()))
                        .append(',')
                        .append(Long.toString(e.position()))
                        .append(',')
                        .append(Long.toString(e.modelVersion()))
                        .append(',')
                        .append(fmt(e.loss()))
                        .append(',')
                        .append(e.correct() ? "1" : "0")
                        .append('\n');
            }
        } catch (IOException e) {
            throw new UncheckedIOException("writing serving entries", e);
        }
    }

    /**
     * Writes {@link #timeSeries(long)} as CSV: header
     * {@code start_position,end_position,count,mean_loss,accuracy,cumulative_cil}.
     */
    public void writeTimeSeriesCsv(Appendable out, long width) {
        try {
            out.append("start_position,end_position,count,mean_loss,accuracy,cumulative_cil\n");
            for (Bucket b : timeSeries(width)) {
                out.append(Long.toString(b.startPosition()))
                        .append(',')
                        .append(Long.toString(b.endPosition()))
                        .append(',')
                        .append(Integer.toString(b.count()))
                        .append(',')
                        .append(fmt(b.meanLoss()))
                        .append(',')
                        .append(fmt(b.accuracy()))
                        .append(',')
                        .append(fmt(b.cumulativeCil()))
                        .append('\n');
            }
        } catch (IOException e) {
            throw new UncheckedIOException("writing serving time series", e);
        }
    }

    private static String fmt(double v) {
        return Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%.6g", v);
    }

    @Override
    public synchronized String toString() {
        return String.format(
                Locale.ROOT,
                "ServingStats[%d requests, CIL %.4f, mean loss %.4f, accuracy %.4f]",
                size,
                cil,
                meanLoss(),
                accuracy());
    }
}
