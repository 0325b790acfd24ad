package io.viper.architecture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Checks that the project's Markdown can be skimmed: the README, the front door, stays under {@link #README_LINES}
 * lines (results and their history belong in docs/), and no line outside fenced code blocks is longer than
 * {@link #LINE_CHARS} characters (a table cell that long is a paragraph: it links to one instead). Code blocks are left
 * out: a command or an output is copied as it is. Files are chosen as {@link DocLinks} chooses them.
 */
final class DocShape {
    /** The most lines README.md may have. */
    static final int README_LINES = 300;
    /** The most characters (code points) a Markdown line outside code blocks may have. */
    static final int LINE_CHARS = 400;

    private DocShape() {}

    /** One line per problem of the Markdown files under {@code root}, each as {@code file[:line]: what}. */
    static List<String> problems(Path root) {
        List<String> problems = new ArrayList<>();
        Path readme = root.resolve("README.md");
        if (Files.isRegularFile(readme)) {
            int lines = lineCount(readme);
            if (lines > README_LINES) {
                problems.add("README.md: " + lines + " lines (at most " + README_LINES
                        + "; move results and detail into docs/)");
            }
        }
        for (Path file : DocLinks.markdownFiles(root)) {
            List<String> lines = DocLinks.outsideCodeBlocks(file);
            for (int i = 0; i < lines.size(); i++) {
                int chars = lines.get(i).codePointCount(0, lines.get(i).length());
                if (chars > LINE_CHARS) {
                    problems.add(root.relativize(file) + ":" + (i + 1) + ": " + chars + " characters (at most "
                            + LINE_CHARS + " outside code blocks; wrap prose, or link a short cell to a paragraph)");
                }
            }
        }
        return problems;
    }

    private static int lineCount(Path file) {
        try {
            return Files.readAllLines(file).size();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
