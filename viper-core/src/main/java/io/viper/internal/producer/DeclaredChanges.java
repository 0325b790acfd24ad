package io.viper.internal.producer;

import io.viper.Snapshot;
import io.viper.tensor.TensorInfo;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the training code said changed ({@link Snapshot.Changes}) between the snapshots a producer staged, kept for the
 * last {@value #KEPT} versions: a staging buffer that holds an older version learns from it which ranges to copy,
 * without comparing every byte ({@link StagingCopy#changed}). A declaration is relative to the snapshot staged before
 * it; the ranges between a buffer's version and a new one are the union of the declarations of every version staged in
 * between, and unknown as soon as one of them was not declared, had another layout, or a staging failed (the training
 * code's own record of changes was handed over and lost).
 *
 * <p>Training thread only.
 */
final class DeclaredChanges {
    /** Versions whose declarations are kept: far more than a producer keeps staging buffers. */
    static final int KEPT = 64;

    /**
     * A staged version's declarations: the version before it, its layout, and per tensor its merged ranges (null: not
     * declared).
     */
    private record Entry(long previous, List<TensorInfo> layout, List<long[]> ranges) {}

    private final Map<Long, Entry> byVersion = new LinkedHashMap<>();
    /** The version staged last, to which the next declarations are relative; -1: none, or unknown after a failure. */
    private long lastStaged = -1;

    /**
     * Per tensor of {@code layout}, the merged {@code [start, end)} ranges (two longs each, sorted) that may differ
     * between version {@code held} and a snapshot declaring {@code pending}; null when that is not known (then the
     * snapshot must be compared).
     *
     * @param pending per tensor, its {@link Snapshot.Changes} bounds, null where not declared
     */
    List<long[]> since(long held, List<TensorInfo> layout, List<long[]> pending) {
        if (pending.contains(null)) {
            return null;
        }
        List<long[]> union = new ArrayList<>(pending);
        for (long v = lastStaged; v != held; ) {
            Entry e = v < held ? null : byVersion.get(v);
            if (e == null || e.ranges == null || !e.layout.equals(layout)) {
                return null;
            }
            for (int t = 0; t < union.size(); t++) {
                union.set(t, concat(union.get(t), e.ranges.get(t)));
            }
            v = e.previous;
        }
        List<long[]> merged = new ArrayList<>(union.size());
        for (long[] r : union) {
            merged.add(merge(r));
        }
        return merged;
    }

    /**
     * {@code version} was staged, laid out as {@code layout}, with {@code declared} (per tensor its bounds, null where
     * not declared): the next declarations are relative to it.
     */
    void staged(long version, List<TensorInfo> layout, List<long[]> declared) {
        List<long[]> ranges = null;
        if (!declared.contains(null)) {
            ranges = new ArrayList<>(declared.size());
            for (long[] d : declared) {
                ranges.add(merge(d));
            }
        }
        byVersion.put(version, new Entry(lastStaged, List.copyOf(layout), ranges));
        lastStaged = version;
        for (Iterator<Long> it = byVersion.keySet().iterator(); byVersion.size() > KEPT; ) {
            it.next();
            it.remove();
        }
    }

    /** A snapshot was described but not staged: what it declared is lost, so nothing before it can be built on. */
    void lost() {
        lastStaged = -1;
        byVersion.clear();
    }

    private static long[] concat(long[] a, long[] b) {
        long[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    /** {@code bounds} (start and end per range, any order, empty ranges allowed) sorted and merged. */
    static long[] merge(long[] bounds) {
        int n = bounds.length / 2;
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (x, y) -> Long.compare(bounds[2 * x], bounds[2 * y]));
        long[] out = new long[bounds.length];
        int k = 0;
        for (int i : order) {
            long start = bounds[2 * i];
            long end = bounds[2 * i + 1];
            if (end <= start) {
                continue;
            }
            if (k > 0 && start <= out[k - 1]) {
                out[k - 1] = Math.max(out[k - 1], end);
            } else {
                out[k++] = start;
                out[k++] = end;
            }
        }
        return Arrays.copyOf(out, k);
    }

    /** Whether merged {@code ranges} ({@link #merge}) touch any byte of {@code [from, to)}. */
    static boolean touches(long[] ranges, long from, long to) {
        int lo = 0;
        int hi = ranges.length / 2;
        while (lo < hi) { // the first range that ends after from
            int mid = (lo + hi) >>> 1;
            if (ranges[2 * mid + 1] <= from) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo < ranges.length / 2 && ranges[2 * lo] < to;
    }
}
