package io.viper.notify.kafka.internal;

import io.viper.errors.ViperConfigException;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A parsed, validated {@code kafka://host:port[,host:port...][?topic=name]} URI.
 *
 * <p>Rules: scheme {@code kafka}; one or more brokers separated by commas, each a host name, an IPv4 address or a
 * bracketed IPv6 address, with an explicit port 1-65535; no user info, path or fragment; the only query parameter is
 * {@code topic} (default {@value #DEFAULT_TOPIC}), a legal Kafka topic name (1-249 characters from letters, digits,
 * '.', '_' and '-', not "." or ".."). Every violation is a {@link ViperConfigException} that names the URI and the
 * problem.
 *
 * @param brokers the brokers as {@code host:port}, in the order given
 * @param topic the topic holding the manifests
 */
public record KafkaUri(List<String> brokers, String topic) {
    /** The topic used when the URI names none. */
    public static final String DEFAULT_TOPIC = "viper.models";

    private static final Pattern HOST =
            Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_-]{0,62}(\\.[A-Za-z0-9_][A-Za-z0-9_-]{0,62})*\\.?");
    private static final Pattern IPV6 = Pattern.compile("\\[[0-9A-Fa-f:.]+(%[A-Za-z0-9]+)?]");
    private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9._-]{1,249}");

    /** Validates and copies. */
    public KafkaUri {
        brokers = List.copyOf(brokers);
        if (brokers.isEmpty()) {
            throw new ViperConfigException("kafka URI names no broker");
        }
        validateTopic(topic, "kafka URI");
    }

    /** Parses {@code uri}; see the class comment for the rules. */
    public static KafkaUri parse(URI uri) {
        if (uri == null) {
            throw new ViperConfigException("kafka URI is missing");
        }
        String text = uri.toString();
        if (uri.getScheme() == null || !uri.getScheme().toLowerCase(Locale.ROOT).equals("kafka")) {
            throw new ViperConfigException(
                    "'" + text + "' is not a kafka URI (expected kafka://host:port[,host:port...][?topic=name])");
        }
        if (uri.isOpaque()) {
            throw new ViperConfigException(
                    "kafka URI '" + text + "' must start with kafka:// (expected kafka://host:port[,host:port...])");
        }
        if (uri.getRawFragment() != null) {
            throw new ViperConfigException(
                    "kafka URI '" + text + "' must not have a fragment ('#" + uri.getRawFragment() + "')");
        }
        String path = uri.getRawPath();
        if (path != null && !path.isEmpty() && !path.equals("/")) {
            throw new ViperConfigException(
                    "kafka URI '" + text + "' must not have a path ('" + path + "'); name the topic with ?topic=name");
        }
        String authority = uri.getRawAuthority();
        if (authority == null || authority.isEmpty()) {
            throw new ViperConfigException("kafka URI '" + text + "' names no broker (expected kafka://host:port)");
        }
        if (authority.contains("@")) {
            throw new ViperConfigException("kafka URI '" + text
                    + "' must not carry user info; pass credentials as kafka.sasl.* settings or in"
                    + " viper.kafka.properties.file");
        }
        List<String> brokers = new ArrayList<>();
        for (String part : authority.split(",", -1)) {
            brokers.add(parseBroker(part, text));
        }
        String topic = DEFAULT_TOPIC;
        Map<String, String> params = parseQuery(uri.getRawQuery(), text);
        for (Map.Entry<String, String> e : params.entrySet()) {
            if (!e.getKey().equals("topic")) {
                throw new ViperConfigException(
                        "kafka URI '" + text + "': unknown query parameter '" + e.getKey() + "' (known: topic)");
            }
            topic = e.getValue();
        }
        validateTopic(topic, "kafka URI '" + text + "'");
        return new KafkaUri(brokers, topic);
    }

    /** Checks a Kafka topic name; {@code where} prefixes the error message. */
    public static String validateTopic(String topic, String where) {
        if (topic == null || !TOPIC.matcher(topic).matches() || topic.equals(".") || topic.equals("..")) {
            throw new ViperConfigException(where + ": invalid topic name '" + topic
                    + "' (use 1-249 characters from letters, digits, '.', '_' and '-', not '.' or '..')");
        }
        return topic;
    }

    private static String parseBroker(String part, String text) {
        if (part.isEmpty()) {
            throw new ViperConfigException(
                    "kafka URI '" + text + "' has an empty broker entry (brokers are separated by single commas)");
        }
        String host;
        String port;
        if (part.startsWith("[")) {
            int close = part.indexOf(']');
            if (close < 0) {
                throw new ViperConfigException(
                        "kafka URI '" + text + "': broker '" + part + "' has an unclosed IPv6 bracket");
            }
            host = part.substring(0, close + 1);
            if (!IPV6.matcher(host).matches()) {
                throw new ViperConfigException(
                        "kafka URI '" + text + "': broker '" + part + "' is not a valid IPv6 address");
            }
            if (close + 1 >= part.length() || part.charAt(close + 1) != ':') {
                throw new ViperConfigException(
                        "kafka URI '" + text + "': broker '" + part + "' has no port (write " + host + ":9092)");
            }
            port = part.substring(close + 2);
        } else {
            int colon = part.lastIndexOf(':');
            if (colon < 0) {
                throw new ViperConfigException(
                        "kafka URI '" + text + "': broker '" + part + "' has no port (write " + part + ":9092)");
            }
            host = part.substring(0, colon);
            port = part.substring(colon + 1);
            if (host.isEmpty() || !HOST.matcher(host).matches() || host.length() > 253) {
                throw new ViperConfigException(
                        "kafka URI '" + text + "': broker '" + part + "' has an invalid host name '" + host + "'");
            }
        }
        int p;
        try {
            p = Integer.parseInt(port);
        } catch (NumberFormatException e) {
            p = -1;
        }
        if (p < 1 || p > 65535 || !port.chars().allMatch(Character::isDigit)) {
            throw new ViperConfigException("kafka URI '" + text + "': broker '" + part + "' has an invalid port '"
                    + port + "' (expected 1-65535)");
        }
        return host + ":" + p;
    }

    private static Map<String, String> parseQuery(String raw, String text) {
        Map<String, String> params = new LinkedHashMap<>();
        if (raw == null || raw.isEmpty()) {
            return params;
        }
        for (String pair : raw.split("&", -1)) {
            int eq = pair.indexOf('=');
            if (pair.isEmpty() || eq <= 0) {
                throw new ViperConfigException(
                        "kafka URI '" + text + "': malformed query parameter '" + pair + "' (expected name=value)");
            }
            String name = URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8);
            String value = URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            if (params.put(name, value) != null) {
                throw new ViperConfigException(
                        "kafka URI '" + text + "': query parameter '" + name + "' is given twice");
            }
        }
        return params;
    }

    /** The brokers as Kafka's {@code bootstrap.servers} value. */
    public String bootstrapServers() {
        return String.join(",", brokers);
    }

    /** The canonical URI: {@code kafka://brokers?topic=topic}. */
    public URI toUri() {
        return URI.create("kafka://" + bootstrapServers() + "?topic=" + topic);
    }

    @Override
    public String toString() {
        return toUri().toString();
    }
}
