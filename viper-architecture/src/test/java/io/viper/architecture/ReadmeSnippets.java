package io.viper.architecture;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The fenced code blocks of a Markdown text, for the tests that compile what the README tells users to paste. */
final class ReadmeSnippets {
    private static final Pattern FENCED = Pattern.compile("(?ms)^```(\\w*)\\n(.*?)^```\\s*$");

    private ReadmeSnippets() {}

    /**
     * The body of the first block fenced as {@code language} that contains {@code marker}.
     *
     * @throws IllegalArgumentException when there is none, naming what was looked for
     */
    static String block(String markdown, String language, String marker) {
        Matcher m = FENCED.matcher(markdown);
        while (m.find()) {
            if (m.group(1).equals(language) && m.group(2).contains(marker)) {
                return m.group(2);
            }
        }
        throw new IllegalArgumentException("no ```" + language + " block containing '" + marker + "'");
    }
}
