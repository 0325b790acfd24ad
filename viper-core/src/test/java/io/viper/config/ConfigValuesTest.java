package io.viper.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ConfigValuesTest {
    @Test
    void listsOfUrisAndNames() {
        assertEquals(
                List.of(URI.create("tcp://127.0.0.1:0"), URI.create("ucx://h:1")),
                ConfigValues.parseUriList("tcp://127.0.0.1:0, ucx://h:1"));
        assertEquals(List.of("tcp", "file"), ConfigValues.parseNameList(" TCP ,file"));
        assertEquals(List.of(), ConfigValues.parseUriList(""), "a blank value is an empty list");
        assertEquals(List.of(), ConfigValues.parseNameList("  "));
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "'tcp://127.0.0.1:0,,ucx://127.0.0.1:0' | 2",
                "'tcp://127.0.0.1:0,'                   | 2",
                "',tcp://127.0.0.1:0'                   | 1",
                "'tcp://a:1, ucx://b:2 ,  '             | 3",
            })
    void anEmptyEntryIsRefusedNamingItsPosition(String value, int position) {
        // viper.transports=tcp,,ucx or a trailing comma was silently taken as the entries around it
        String problem = "an empty entry at position " + position + " (a comma too many)";
        assertEquals(
                problem,
                assertThrows(ViperConfigException.class, () -> ConfigValues.parseUriList(value))
                        .getMessage());
        assertEquals(
                problem,
                assertThrows(ViperConfigException.class, () -> ConfigValues.parseNameList(value.replace("://", "-")))
                        .getMessage());
        assertEquals(
                "invalid value '" + value.trim() + "' for viper.transports: " + problem,
                assertThrows(ViperConfigException.class, () -> ViperConfig.TRANSPORTS.parse(value))
                        .getMessage());
    }

    @Test
    void anEntryThatIsNoUriIsNamed() {
        assertEquals(
                "'tcp' is not a URI with a scheme (e.g. tcp://127.0.0.1:0)",
                assertThrows(ViperConfigException.class, () -> ConfigValues.parseUriList("tcp://a:1,tcp"))
                        .getMessage());
    }
}
