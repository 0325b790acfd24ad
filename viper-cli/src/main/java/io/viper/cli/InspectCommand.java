package io.viper.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.format.SafetensorsFile;
import io.viper.format.TensorStats;
import io.viper.tensor.Tensor;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code viper inspect FILE [--json] [--stats]}: validates a safetensors file and prints its tensors (in data order)
 * and metadata, as a table or as one JSON object.
 *
 * <p>The JSON object has the fields {@code file} (the path as given), {@code header_bytes}, {@code data_bytes},
 * {@code metadata} and {@code tensors} (each with {@code name}, {@code dtype}, {@code shape}, {@code offset},
 * {@code length}); {@code --stats} adds {@code min}, {@code max} and {@code mean} to every tensor that has elements
 * (see {@link TensorStats}). Non-finite statistics are written as the strings {@code "NaN"}, {@code "Infinity"} and
 * {@code "-Infinity"}, so that the output stays strict JSON.
 *
 * <p>A refused file fails with the reader's {@link io.viper.errors.ViperFormatException}, which {@link ViperMain}
 * prints as one line {@code viper: FILE: REASON} with exit code 2. One instance per command line; not shared between
 * threads.
 */
@Command(
        name = "inspect",
        mixinStandardHelpOptions = true,
        description = {
            "Validates a safetensors file and prints its tensors (in data order) and metadata.",
            "A file that breaks the format is refused with one line naming the problem (exit code 2)."
        })
public final class InspectCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "FILE", description = "The safetensors file to inspect.")
    Path file;

    @Option(names = "--json", description = "Print one JSON object instead of a table.")
    boolean json;

    @Option(names = "--stats", description = "Also compute min, max and mean of every tensor (reads all data).")
    boolean stats;

    @Override
    public Integer call() throws JsonProcessingException {
        PrintWriter out = spec.commandLine().getOut();
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            List<Optional<TensorStats>> all = new ArrayList<>();
            for (Tensor t : f.tensors()) {
                all.add(stats ? TensorStats.of(t) : Optional.empty());
            }
            if (json) {
                out.println(JSON.writeValueAsString(toJson(f, all)));
            } else {
                printTable(out, f, all);
            }
        }
        out.flush();
        return 0;
    }

    private ObjectNode toJson(SafetensorsFile f, List<Optional<TensorStats>> all) {
        ObjectNode root = JSON.createObjectNode();
        root.put("file", file.toString());
        root.put("header_bytes", f.headerBytes());
        root.put("data_bytes", f.dataBytes());
        ObjectNode meta = root.putObject("metadata");
        f.metadata().forEach(meta::put);
        ArrayNode tensors = root.putArray("tensors");
        for (int i = 0; i < f.tensors().size(); i++) {
            Tensor t = f.tensors().get(i);
            ObjectNode node = tensors.addObject();
            node.put("name", t.name());
            node.put("dtype", t.dtype().safetensorsName());
            ArrayNode shape = node.putArray("shape");
            for (long d : t.shape()) {
                shape.add(d);
            }
            node.put("offset", t.info().offset());
            node.put("length", t.byteSize());
            all.get(i).ifPresent(s -> {
                putDouble(node, "min", s.min());
                putDouble(node, "max", s.max());
                putDouble(node, "mean", s.mean());
            });
        }
        return root;
    }

    private static void putDouble(ObjectNode node, String field, double value) {
        if (Double.isFinite(value)) {
            node.put(field, value);
        } else {
            node.put(field, Double.toString(value)); // "NaN", "Infinity", "-Infinity"
        }
    }

    private void printTable(PrintWriter out, SafetensorsFile f, List<Optional<TensorStats>> all) {
        int count = f.tensors().size();
        out.printf(
                "%s: %d %s, %d data bytes (%s), header %d bytes%n",
                printable(file.toString()),
                count,
                count == 1 ? "tensor" : "tensors",
                f.dataBytes(),
                humanBytes(f.dataBytes()),
                f.headerBytes());
        List<String[]> rows = new ArrayList<>();
        rows.add(
                stats
                        ? new String[] {"NAME", "DTYPE", "SHAPE", "SIZE", "MIN", "MAX", "MEAN"}
                        : new String[] {"NAME", "DTYPE", "SHAPE", "SIZE"});
        for (int i = 0; i < f.tensors().size(); i++) {
            Tensor t = f.tensors().get(i);
            String[] base = {
                printable(t.name()), t.dtype().safetensorsName(), Arrays.toString(t.shape()), humanBytes(t.byteSize())
            };
            if (stats) {
                Optional<TensorStats> s = all.get(i);
                rows.add(new String[] {
                    base[0],
                    base[1],
                    base[2],
                    base[3],
                    s.map(x -> number(x.min())).orElse("-"),
                    s.map(x -> number(x.max())).orElse("-"),
                    s.map(x -> number(x.mean())).orElse("-")
                });
            } else {
                rows.add(base);
            }
        }
        if (!f.tensors().isEmpty()) {
            out.println();
            printColumns(out, rows);
        }
        out.println();
        if (f.metadata().isEmpty()) {
            out.println("metadata: none");
        } else {
            out.println("metadata:");
            for (Map.Entry<String, String> e : f.metadata().entrySet()) {
                out.println("  " + printable(e.getKey()) + " = " + printable(e.getValue()));
            }
        }
    }

    private static void printColumns(PrintWriter out, List<String[]> rows) {
        int columns = rows.getFirst().length;
        int[] width = new int[columns];
        for (String[] row : rows) {
            for (int c = 0; c < columns; c++) {
                width[c] = Math.max(width[c], row[c].codePointCount(0, row[c].length()));
            }
        }
        for (String[] row : rows) {
            StringBuilder line = new StringBuilder();
            for (int c = 0; c < columns; c++) {
                line.append(row[c]);
                if (c < columns - 1) {
                    line.append(" ".repeat(width[c] - row[c].codePointCount(0, row[c].length()) + 2));
                }
            }
            out.println(line);
        }
    }

    private static String number(double v) {
        return String.format(Locale.ROOT, "%.6g", v);
    }

    /** 512 B, 1.5 KiB, 2.50 GiB. */
    static String humanBytes(long bytes) {
        if (bytes < 1024) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    }

    /** Control characters escaped, so that a name cannot break the table. */
    private static String printable(String s) {
        StringBuilder b = new StringBuilder(s.length());
        s.codePoints().forEach(c -> {
            if (c < 0x20 || c == 0x7f || c == 0x2028 || c == 0x2029) {
                b.append(String.format(Locale.ROOT, "\\u%04x", c));
            } else {
                b.appendCodePoint(c);
            }
        });
        return b.toString();
    }
}
