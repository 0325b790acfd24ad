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
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code viper config}: every configuration key that core and the installed transports and
 * notifiers declare, with its type, default, doc and who declares it; the README's table is this
 * command's {@code --markdown} output.
 */
@Command(name = "config", mixinStandardHelpOptions = true,
        description = {"List every configuration key (core and plugins) with its type, default, who declares it and what it does.",
            "Keys go in --config FILE or --set KEY=VALUE of publish and consume; kafka.<setting> keys pass Kafka client settings."})
final class ConfigCommand implements Callable<Integer> {
    @ArgGroup(exclusive = true)
    Format format;

    static final class Format {
        @Option(names = "--json", description = "One JSON array of {\"name\",\"type\",\"default\",\"declared_by\",\"doc\"}")
        boolean json;

        @Option(names = "--markdown", description = "The Markdown table of README.md's Configuration section")
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

    /** The README table: one row per key, in {@link ViperConfig#keys()} order. */
    static String markdown(List<ConfigKey<?>> keys) {
        StringBuilder b = new StringBuilder("| key | type | default | declared by | what |\n| --- | --- | --- | --- | --- |\n");
        for (ConfigKey<?> k : keys) {
            String dflt = k.defaultValue().isEmpty() ? "(empty)" : "`" + k.defaultValue() + "`";
            b.append("| `").append(k.name()).append("` | ").append(k.type()).append(" | ").append(dflt)
                    .append(" | ").append(k.component()).append(" | ").append(markdownText(k.doc())).append(" |\n");
        }
        return b.toString();
    }

    /** Doc text as Markdown shows it: pipes would end the cell, angle brackets start HTML. */
    private static String markdownText(String doc) {
        return doc.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;");
    }

    private static String text(List<ConfigKey<?>> keys) {
        StringBuilder b = new StringBuilder();
        for (ConfigKey<?> k : keys) {
            b.append(k.name()).append(" (").append(k.type()).append(", default ")
                    .append(k.defaultValue().isEmpty() ? "empty" : k.defaultValue()).append("; ").append(k.component()).append(")\n")
                    .append("    ").append(k.doc()).append('\n');
        }
        return b.toString();
    }
}
