package io.viper.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ConfigDefTest {
    private static final ConfigKey.Declarer A = ConfigKey.declaredBy("module-a");
    private static final ConfigKey<Integer> IN_FLIGHT = A.intKey("viper.a.inflight", 4, 1, 1024, "GETs outstanding.");
    private static final ConfigKey<Long> CHUNK =
            A.sizeKey("viper.a.chunk.bytes", "64m", 4096, 1L << 40, "Largest GET.");
    private static final ConfigKey<Boolean> COPY = A.booleanKey("viper.a.copy", true, "Copy first.");

    @Test
    void typedKeysParseTheirDefaultsAndRefuseBadValuesNamingTheKey() {
        assertEquals(4, IN_FLIGHT.parse(null));
        assertEquals(64L << 20, CHUNK.parse(null));
        assertEquals(8192L, CHUNK.parse(" 8k "));
        assertEquals(false, COPY.parse("FALSE"));
        assertEquals(ConfigType.SIZE, CHUNK.type());
        assertEquals("module-a", CHUNK.component());
        assertEquals(
                "invalid value '0' for viper.a.inflight: must be at least 1",
                assertThrows(ViperConfigException.class, () -> IN_FLIGHT.parse("0"))
                        .getMessage());
        assertEquals(
                "invalid value '2000' for viper.a.inflight: must be at most 1024",
                assertThrows(ViperConfigException.class, () -> IN_FLIGHT.parse("2000"))
                        .getMessage());
        assertEquals(
                "invalid value 'yes' for viper.a.copy: must be true or false",
                assertThrows(ViperConfigException.class, () -> COPY.parse("yes"))
                        .getMessage());
        assertTrue(assertThrows(ViperConfigException.class, () -> CHUNK.parse("lots"))
                .getMessage()
                .contains("is not a byte size"));
        assertThrows(IllegalArgumentException.class, () -> A.intKey("ucx.inflight", 1, 0, 1, "not under viper."));
    }

    @Test
    void findsKeysAndSuggestsTheNearestName() {
        ConfigDef def = ConfigDef.of(List.of(IN_FLIGHT, CHUNK, COPY));
        assertEquals(List.of(IN_FLIGHT, CHUNK, COPY), def.keys());
        assertEquals(Optional.of(CHUNK), def.find("viper.a.chunk.bytes"));
        assertEquals(Optional.empty(), def.find("viper.a.inflght"));
        assertEquals(Optional.of("viper.a.inflight"), def.nearest("viper.a.inflght"));
        assertEquals(Optional.of("viper.a.copy"), def.nearest("viper.a.cpoy"));
        assertEquals(Optional.empty(), ConfigDef.of(List.of()).nearest("viper.x"));
        assertEquals(3, ConfigDef.editDistance("kitten", "sitting"));
        assertEquals(0, ConfigDef.editDistance("", ""));
    }

    @Test
    void theSameDeclarationTwiceIsOneKeyTwoDifferentOnesAreRefused() {
        assertEquals(
                List.of(IN_FLIGHT),
                ConfigDef.of(List.of(IN_FLIGHT, IN_FLIGHT)).keys(),
                "ucx and ucx-cuda share their constants");
        ConfigKey<Integer> other =
                ConfigKey.declaredBy("module-b").intKey("viper.a.inflight", 8, 1, 8, "Another meaning.");
        ViperConfigException e =
                assertThrows(ViperConfigException.class, () -> ConfigDef.of(List.of(IN_FLIGHT, other)));
        assertEquals(
                "configuration key viper.a.inflight is declared twice, by module-a and by module-b", e.getMessage());
    }
}
