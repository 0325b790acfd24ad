package io.viper.errors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The error model: each reason has one type, and the reason alone says whether to retry. */
class ErrorModelTest {
    /** Reason, the type it is thrown as, and whether it is retriable; one row per reason. */
    record Row(ViperException.Reason reason, Class<? extends ViperException> type, boolean retriable) {}

    static final List<Row> TABLE = List.of(
            new Row(ViperException.Reason.FORMAT, ViperFormatException.class, false),
            new Row(ViperException.Reason.CONFIG, ViperConfigException.class, false),
            new Row(ViperException.Reason.NOT_FOUND, ViperNotFoundException.class, false),
            new Row(ViperException.Reason.UNSUPPORTED, ViperUnsupportedException.class, false),
            new Row(ViperException.Reason.CLOSED, ViperClosedException.class, false),
            new Row(ViperException.Reason.IO, ViperException.class, false),
            new Row(ViperException.Reason.INTERNAL, ViperException.class, false),
            new Row(ViperException.Reason.TRANSFER, RetriableViperException.class, true),
            new Row(ViperException.Reason.UNAVAILABLE, RetriableViperException.class, true),
            new Row(ViperException.Reason.TIMEOUT, ViperTimeoutException.class, true),
            new Row(ViperException.Reason.CORRUPT, ViperCorruptDataException.class, true));

    static Row row(ViperException.Reason reason) {
        return TABLE.stream()
                .filter(r -> r.reason() == reason)
                .findFirst()
                .orElseThrow(() -> new AssertionError("no row for " + reason));
    }

    @Test
    void theTableHasOneRowForEveryReason() {
        Set<ViperException.Reason> covered = TABLE.stream().map(Row::reason).collect(Collectors.toSet());
        assertEquals(EnumSet.allOf(ViperException.Reason.class), covered);
        assertEquals(ViperException.Reason.values().length, TABLE.size());
    }

    @ParameterizedTest
    @EnumSource(ViperException.Reason.class)
    void ofBuildsTheTypeOfTheReasonAndItsRetriability(ViperException.Reason reason) {
        Row expected = row(reason);
        IllegalStateException cause = new IllegalStateException("underneath");
        ViperException e = ViperException.of(reason, "m v1: what went wrong", cause);
        assertSame(expected.type(), e.getClass(), reason.name());
        assertEquals(reason, e.reason());
        assertEquals("m v1: what went wrong", e.getMessage());
        assertSame(cause, e.getCause());
        assertEquals(expected.retriable(), reason.isRetriable(), reason.name());
        assertEquals(expected.retriable(), e.isRetriable(), reason.name());
        assertEquals(expected.retriable(), e instanceof RetriableViperException, "the type says it too: " + reason);

        ViperException noCause = ViperException.of(reason, "no cause");
        assertSame(expected.type(), noCause.getClass());
        assertNull(noCause.getCause());
    }

    @Test
    void subtypeConstructorsFixTheirReason() {
        Map<ViperException, ViperException.Reason> built = Map.of(
                new ViperFormatException("f.safetensors", "bad header"), ViperException.Reason.FORMAT,
                new ViperConfigException("viper.x: bad"), ViperException.Reason.CONFIG,
                new ViperNotFoundException("no m v9"), ViperException.Reason.NOT_FOUND,
                new ViperUnsupportedException("no CUDA"), ViperException.Reason.UNSUPPORTED,
                new ViperClosedException("closed"), ViperException.Reason.CLOSED,
                new ViperTimeoutException("too slow"), ViperException.Reason.TIMEOUT,
                new ViperCorruptDataException("hash mismatch"), ViperException.Reason.CORRUPT);
        built.forEach((e, reason) -> {
            assertEquals(reason, e.reason());
            assertSame(row(reason).type(), e.getClass());
            assertEquals(row(reason).retriable(), e.isRetriable());
        });
    }

    @ParameterizedTest
    @EnumSource(ViperException.Reason.class)
    void theRetriableTypeRefusesAReasonThatIsNot(ViperException.Reason reason) {
        if (reason.isRetriable()) {
            assertTrue(new RetriableViperException(reason, "x").isRetriable());
        } else {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> new RetriableViperException(reason, "x"));
            assertTrue(e.getMessage().contains(reason.name()), e.getMessage());
        }
    }

    @Test
    void aFormatErrorBuiltFromAReasonKeepsItsWholeMessageAsTheProblem() {
        ViperFormatException e = (ViperFormatException)
                ViperException.of(ViperException.Reason.FORMAT, "peer 1: manifest does not parse");
        assertEquals("", e.source());
        assertEquals("peer 1: manifest does not parse", e.problem());
        ViperFormatException named = new ViperFormatException("peer 1", "manifest does not parse");
        assertEquals("peer 1", named.source());
        assertEquals("manifest does not parse", named.problem());
        assertFalse(named.isRetriable());
    }
}
