package io.viper.agent.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.errors.ViperFormatException;
import java.util.Locale;
import java.util.OptionalDouble;
import java.util.OptionalLong;

/**
 * One request from a client: its operation, its id (echoed in the reply) and typed access to its fields, each refusing
 * a missing or mistyped field as FORMAT naming the field. Immutable.
 *
 * @param peer names the client in error messages
 */
record Request(ObjectNode body, String peer) {
    /** The operation ({@code "op"}). */
    String op() {
        return text("op");
    }

    /** The request id, or null when the request carries none (a request that wants no reply). */
    Long id() {
        JsonNode id = body.get("id");
        return id != null && id.isIntegralNumber() && id.canConvertToLong() ? id.asLong() : null;
    }

    String text(String field) {
        JsonNode v = body.get(field);
        if (v == null || !v.isTextual()) {
            throw bad(field, "a string");
        }
        return v.asText();
    }

    long longValue(String field) {
        JsonNode v = body.get(field);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
            throw bad(field, "an integer");
        }
        return v.asLong();
    }

    /** A non-negative integer field. */
    long count(String field) {
        long v = longValue(field);
        if (v < 0) {
            throw new ViperFormatException(peer, op() + ": field \"" + field + "\" must not be negative, got " + v);
        }
        return v;
    }

    OptionalLong optionalLong(String field) {
        JsonNode v = body.get(field);
        return v == null || v.isNull() ? OptionalLong.empty() : OptionalLong.of(longValue(field));
    }

    /**
     * A number field: a JSON number, or a non-finite value as the string Java writes it ({@code "NaN"},
     * {@code "Infinity"}, {@code "-Infinity"}), JSON having no token for them.
     */
    OptionalDouble optionalDouble(String field) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) {
            return OptionalDouble.empty();
        }
        if (v.isNumber()) {
            return OptionalDouble.of(v.asDouble());
        }
        return switch (v.isTextual() ? v.asText() : "") {
            case "NaN" -> OptionalDouble.of(Double.NaN);
            case "Infinity" -> OptionalDouble.of(Double.POSITIVE_INFINITY);
            case "-Infinity" -> OptionalDouble.of(Double.NEGATIVE_INFINITY);
            default -> throw bad(field, "a number (or \"NaN\", \"Infinity\", \"-Infinity\")");
        };
    }

    private ViperFormatException bad(String field, String what) {
        String op = body.path("op").isTextual() ? body.get("op").asText() : "request";
        JsonNode v = body.get(field);
        return new ViperFormatException(
                peer,
                op + ": field \"" + field + "\" must be " + what
                        + (v == null
                                ? " and is missing"
                                : ", got " + v.getNodeType().name().toLowerCase(Locale.ROOT) + " "
                                        + abbreviate(
                                                v.isNumber()
                                                        ? v.asText()
                                                        : v.toString()))); // a number as sent: NaN, not "NaN"
    }

    private static String abbreviate(String s) {
        return s.length() <= 40 ? s : s.substring(0, 40) + "...";
    }
}
