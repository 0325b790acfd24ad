package io.viper.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.text.MessageFormat;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/** Log lines print plain numbers: {@link LogParameters} on the main classes of every module. */
class LogParametersTest {
    @Test
    void noLogCallHandsANumberToMessageFormat() {
        List<String> classes = new ClassFileImporter()
                        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                        .withImportOption(location -> !location.contains("-tests.jar"))
                        .importPackages("io.viper")
                        .stream()
                        .map(JavaClass::getName)
                        .toList();
        assertTrue(classes.size() > 100, "the project's classes were read: " + classes.size());
        assertEquals(
                List.of(),
                LogParameters.numbersFormattedByMessageFormat(
                        classes, getClass().getClassLoader()));
    }

    @Test
    void aLoggedNumberIsReportedAndAStringIsNot() {
        // what the rule is for: a number among the parameters reads "30,000" where the line is written
        assertEquals(
                "retrying in 30,000 ms",
                new MessageFormat("retrying in {0} ms", Locale.US).format(new Object[] {30_000L}));
        List<String> lines = LogParameters.numbersFormattedByMessageFormat(
                List.of(Fixtures.LogsNumbers.class.getName()), getClass().getClassLoader());
        String prefix = Fixtures.LogsNumbers.class.getName() + ".";
        assertEquals(
                List.of("aLong", "aDouble", "aLongBeforeItsOwnFormat"),
                lines.stream()
                        .map(l -> l.substring(prefix.length(), l.indexOf('(')))
                        .toList(),
                lines.toString());
        assertTrue(lines.getFirst().matches(".*\\(Fixtures\\.java:\\d+\\)"), "names the line: " + lines);
    }
}
