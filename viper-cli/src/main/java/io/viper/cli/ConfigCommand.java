package io.viper.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.ViperConfig;
import io.viper.config.ConfigKey;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code viper config}: every configuration key that core and the installed transports and notifiers declare, with its
 * type, default, doc and who declares it; the key list of docs/configuration.md is this command's {@code --markdown}
 * output.
 */
@Command(
        name = "config",
        mixinStandardHelpOptions = true,
        description = {
            "List every configuration key (core and plugins) with its type, default, who declares it and what it does.",
            "Keys go in --config FILE or --set KEY=VALUE of publish and consume; kafka.<setting> keys pass Kafka"
                    + " client settings."
        })
final class ConfigCommand implements Callable<Integer> {
    /** The width the docs of the Markdown key list are wrapped to, continuation indent included. */
    private static final int WIDTH = 100;

    @ArgGroup(exclusive = true)
    Format format;

    static final class Format {
        @Option(
                names = "--json",
                description = "One JSON array of {\"name\",\"type\",\"default\",\"declared_by\",\"doc\"}")
        boolean json;

        @Option(names = "--markdown", description = "The Markdown key list of docs/configuration.md")
        boolean markdown;
    }

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        List<ConfigKey<?>> keys = ViperConfig.keys();
        PrintWriter out = spec.commandLine().getOut();
        if (format != null && format.json) {
            out.println(json(keys));
        } else if (format != null && format.markdown) {
            out.print(markdown(keys));
        } else {
            out.print(text(keys));
        }
        out.flush();
        return 0;
    }

    static String json(List<ConfigKey<?>> keys) {
        ObjectMapper mapper = new ObjectMapper();
        ArrayNode all = mapper.createArrayNode();
        for (ConfigKey<?> k : keys) {
            ObjectNode o = all.addObject();
            o.put("name", k.name());
            o.put("type", k.type().toString());
            o.put("default", k.defaultValue());
            o.put("declared_by", k.component());
            o.put("doc", k.doc());
        }
        return all.toString();
    }

    /**
     * The key list of docs/configuration.md: a heading per declaring component, then one list item per key, in
     * {@link ViperConfig#keys()} order, its doc wrapped so that no line of the page is long (a table row would hold the
     * whole doc on one line).
     */
    static String markdown(List<ConfigKey<?>> keys) {
        StringBuilder b = new StringBuilder();
        String component = null;
        for (ConfigKey<?> k : keys) {
            if (!k.component().equals(component)) {
                component = k.component();
                b.append(b.isEmpty() ? "" : "\n")
                        .append("### ")
                        .append(component)
                        .append("\n\n");
            }
            String dflt = k.defaultValue().isEmpty() ? "empty" : "`" + k.defaultValue() + "`";
            wrap(b, "- `" + k.name() + "` (" + k.type() + ", default " + dflt + "):", markdownText(k.doc()));
        }
        return b.toString();
    }

    /**
     * Appends {@code head}, whole on its first line (what a reader looks for: the key, its type and default), then the
     * words of {@code text} in lines of at most {@link #WIDTH} characters, continued indented.
     */
    private static void wrap(StringBuilder b, String head, String text) {
        StringBuilder line = new StringBuilder(head);
        boolean wordless = false;
        for (String word : text.split(" ")) {
            // A continuation line that starts like a list item, a heading or a quote would read as one:
            // such a word stays on the line before.
            boolean startsBlock = word.matches("[-+*#>]|\\d+[.)]");
            if (!wordless && !startsBlock && line.length() + 1 + word.length() > WIDTH) {
                b.append(line).append('\n');
                line.setLength(0);
                line.append("  ");
                wordless = true;
            }
            line.append(wordless ? "" : " ").append(word);
            wordless = false;
        }
        b.append(line).append('\n');
    }

    /** Doc text as Markdown shows it: angle brackets would start HTML. */
    private static String markdownText(String doc) {
        return doc.replace("<", "&lt;").replace(">", "&gt;");
    }

    private static String text(List<ConfigKey<?>> keys) {
        StringBuilder b = new StringBuilder();
        for (ConfigKey<?> k : keys) {
            b.append(k.name())
                    .append(" (")
                    .append(k.type())
                    .append(", default ")
                    .append(k.defaultValue().isEmpty() ? "empty" : k.defaultValue())
                    .append("; ")
                    .append(k.component())
                    .append(")\n")
                    .append("    ")
                    .append(k.doc())
                    .append('\n');
        }
        return b.toString();
    }
}
