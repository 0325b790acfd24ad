package io.viper.demo;

import java.util.SplittableRandom;

/**
 * Where and how the demo's requests are drawn, in one place for the consumer that serves them and for
 * {@link Hindsight}, which scores versions on other replicas of them. Request k of a run is due {@code k / rate}
 * seconds after the clock starts and drawn at the stream position training has reached then, {@code s + floor(k / rate
 * / pace)}. A <em>replica</em> is an independent set of requests at the same moments and positions: replica r draws
 * request k with its own generator, seeded by (seed, r, k), so every run answers the same requests of every replica.
 * Stateless.
 */
public final class Requests {
    private Requests() {}

    /** How many requests a run serves: {@code floor((e - s) * pace * rate)}. */
    public static int count(long end, long warmup, long paceNanos, double rate) {
        double runSeconds = (end - warmup) * paceNanos / 1e9;
        return (int) Math.min(Integer.MAX_VALUE - 8, Math.floor(runSeconds * rate));
    }

    /** The stream position request {@code k} is drawn at: {@code s + floor(k / rate / pace)}. */
    public static long position(long warmup, long k, double rate, long paceNanos) {
        return warmup + (long) Math.floor(k / rate * 1e9 / paceNanos);
    }

    /** The first request due at or after {@code seconds} from the start of the clock. */
    public static long firstAt(double seconds, double rate) {
        return Math.max(0, (long) Math.ceil(seconds * rate - 1e-9));
    }

    /** The generator of request {@code k} of replica {@code replica} (replica 0: the requests of earlier demos). */
    public static SplittableRandom generator(long seed, int replica, long k) {
        return new SplittableRandom(mix(replica == 0 ? seed : mix(seed, -replica), k));
    }

    /** SplitMix64 over (seed, k). */
    static long mix(long seed, long k) {
        long z = seed * 0x632BE59BD9B4E019L + 0x9E3779B97F4A7C15L * (k + 1);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
