package io.viper.demo.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.List;

/**
 * The protocol between {@code viper demo} (the driver) and its producer and consumer processes, in one place for both
 * sides: each event is a record below, written by the process as one JSON object per line on its standard output
 * ({@code {"event":"ready",...}}, {@code "progress"}, {@code "result"}), with the record's components as snake_case
 * fields, and read back into the same record by the driver. The driver's commands go the other way, one per line on the
 * process's standard input: {@link #notifier(String)} (to a consumer started before the producer's notifier existed),
 * {@link #start(long)} and {@link #STOP}.
 *
 * <p>Stateless; any thread may call it.
 */
public final class DemoEvents {
    /** The command that ends a producer's serving after its result. */
    public static final String STOP = "stop";

    private static final String START = "start ";
    private static final String NOTIFIER = "notifier ";
    private static final String EVENT = "event";
    private static final ObjectMapper JSON =
            new ObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);

    /** The producer's events. */
    public static final Protocol<ProducerReady, ProducerProgress, ProducerResult> PRODUCER =
            new Protocol<>(ProducerReady.class, ProducerProgress.class, ProducerResult.class);
    /** The consumer's events. */
    public static final Protocol<ConsumerReady, ConsumerProgress, ConsumerResult> CONSUMER =
            new Protocol<>(ConsumerReady.class, ConsumerProgress.class, ConsumerResult.class);

    private DemoEvents() {}

    /** The producer has trained the warm-up and announced it; consumers find it through {@code notifier}. */
    public record ProducerReady(String notifier, long version, long bytes) {}

    /** The producer's latest iteration, its newest version and that iteration's training loss. */
    public record ProducerProgress(long iteration, long version, double loss) {}

    /**
     * The producer's run: the iterations it published and their versions, the training stall they cost (in all and
     * each), how far the loop fell behind its pace at worst, and, for the online policy, the CIL its staleness probes
     * predict and the changes it detected (NaN and none otherwise).
     */
    public record ProducerResult(
            int checkpoints,
            long[] iterations,
            long[] versions,
            double stallMs,
            double[] stallsMs,
            double maxLateMs,
            double predictedCil,
            long[] changes) {}

    /** The consumer holds the warm-up model, {@code version}, and has warmed up its serving path. */
    public record ConsumerReady(long version) {}

    /**
     * Requests served so far of all, the stream position and model version of the latest, and their mean loss since the
     * last progress.
     */
    public record ConsumerProgress(long served, long of, long position, long version, double loss) {}

    /**
     * The consumer's run: the requests of each replica, each replica's summed loss (its CIL), how many answers were
     * right over all replicas, every request's loss (mean over the replicas) and answering version, and every model
     * update Viper reported.
     */
    public record ConsumerResult(
            int requests, double[] cils, int correct, double[] losses, long[] versions, List<Update> updates) {}

    /** One model update the consumer saw: its version, the latency from publish to swap, the path it came by. */
    public record Update(long version, double latencyMs, String path) {}

    /**
     * The three events of one kind of process, by their name on the wire: {@code ready}, {@code progress},
     * {@code result}.
     */
    public record Protocol<R, P, S>(Class<R> ready, Class<P> progress, Class<S> result) {
        /** One event as a JSON line (no line end). */
        public String encode(Object event) {
            ObjectNode line = JSON.createObjectNode().put(EVENT, name(event.getClass()));
            line.setAll((ObjectNode) JSON.valueToTree(event));
            return line.toString();
        }

        /**
         * The event on {@code line}: a {@link #ready}, {@link #progress} or {@link #result} instance.
         *
         * @throws IOException if the line is not JSON or not one of the three events
         */
        public Object decode(String line) throws IOException {
            JsonNode n = JSON.readTree(line);
            String name = n.path(EVENT).asText();
            Class<?> type = switch (name) {
                case "ready" -> ready;
                case "progress" -> progress;
                case "result" -> result;
                default -> throw new IOException("not a demo event: " + line);
            };
            ((ObjectNode) n).remove(EVENT);
            return JSON.treeToValue(n, type);
        }

        private String name(Class<?> type) {
            if (type == ready) {
                return "ready";
            }
            if (type == progress) {
                return "progress";
            }
            if (type == result) {
                return "result";
            }
            throw new IllegalArgumentException(type.getName() + " is not an event of this protocol");
        }
    }

    /** The command that tells a consumer the notifier to subscribe to. */
    public static String notifier(String uri) {
        return NOTIFIER + uri;
    }

    /**
     * The notifier of a {@link #notifier(String)} command.
     *
     * @throws IOException when {@code line} is null (input closed) or not a notifier command
     */
    public static String parseNotifier(String line) throws IOException {
        if (line == null
                || !line.startsWith(NOTIFIER)
                || line.substring(NOTIFIER.length()).isBlank()) {
            throw new IOException("expected '" + NOTIFIER + "URI' on standard input, got " + line);
        }
        return line.substring(NOTIFIER.length()).strip();
    }

    /** The command that starts the clock at {@code epochMs} (wall-clock milliseconds, one host). */
    public static String start(long epochMs) {
        return START + epochMs;
    }

    /**
     * The instant of a {@link #start(long)} command.
     *
     * @throws IOException when {@code line} is null (input closed) or not a start command
     */
    public static long parseStart(String line) throws IOException {
        if (line == null || !line.startsWith(START)) {
            throw new IOException("expected '" + START + "EPOCH_MS' on standard input, got " + line);
        }
        try {
            return Long.parseLong(line.substring(START.length()).strip());
        } catch (NumberFormatException e) {
            throw new IOException("expected '" + START + "EPOCH_MS' on standard input, got " + line, e);
        }
    }
}
