package io.viper.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The project's Markdown can be skimmed: {@link DocShape}. */
class DocShapeTest {
    @Test
    void theReadmeIsShortAndNoDocsLineIsLong() {
        // The repository root: the parent of testdata/, which the parent pom names.
        Path root = Path.of(System.getProperty("viper.testdata", "../testdata"))
                .toAbsolutePath()
                .normalize()
                .getParent();
        assertTrue(
                Files.isRegularFile(root.resolve("README.md")) && Files.isDirectory(root.resolve("docs")),
                "the repository root was found: " + root);
        assertEquals(List.of(), DocShape.problems(root));
    }

    @Test
    void aLongReadmeAndALongLineOutsideCodeAreReported(@TempDir Path dir) throws IOException {
        String line400 = "x".repeat(400);
        Files.writeString(dir.resolve("README.md"), (line400 + "\n").repeat(300));
        Files.createDirectory(dir.resolve("docs"));
        Files.writeString(dir.resolve("docs/a.md"), docWithATableRowOf(400));
        assertEquals(List.of(), DocShape.problems(dir), "300 lines of 400 characters, and long lines in code, pass");

        Files.writeString(dir.resolve("README.md"), (line400 + "\n").repeat(301));
        Files.writeString(dir.resolve("docs/a.md"), docWithATableRowOf(401));
        assertEquals(
                List.of(
                        "README.md: 301 lines (at most 300; move results and detail into docs/)",
                        Path.of("docs", "a.md") + ":5: 401 characters (at most 400 outside code blocks; "
                                + "wrap prose, or link a short cell to a paragraph)"),
                DocShape.problems(dir));
    }

    /** A heading, a code block with a line of 900 characters, and a table row of {@code chars} code points. */
    private static String docWithATableRowOf(int chars) {
        String wide = "\uD835\uDC65"; // one code point in two chars: lines are measured in code points
        return "# A\n```\n" + "y".repeat(900) + "\n```\n|" + wide.repeat(chars - 2) + "|\n";
    }
}
