package io.viper.architecture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Checks the relative links of the project's Markdown files: {@code [text](path)} names a file or directory that
 * exists, and {@code [text](path#anchor)} or {@code [text](#anchor)} a heading of that Markdown file, as GitHub makes
 * anchors: the heading's text in lower case, without punctuation, spaces turned into '-', a repeated one suffixed -1,
 * -2, ... Links inside fenced code blocks and code spans are not links; absolute URLs are not checked.
 */
final class DocLinks {
    private static final Pattern LINK =
            Pattern.compile("!?\\[(?:[^\\]\\[]|\\[[^\\]]*\\])*\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
    private static final Pattern HEADING = Pattern.compile("^ {0,3}(#{1,6})\\s+(.*?)\\s*#*\\s*$");
    private static final Pattern HTML_ANCHOR = Pattern.compile("<a\\s+(?:name|id)=\"([^\"]+)\"");
    private static final Pattern CODE_SPAN = Pattern.compile("(`+)(?:(?!\\1).)+?\\1");
    private static final Pattern INLINE_LINK = Pattern.compile("!?\\[([^\\]]*)\\]\\([^)]*\\)");

    private final Map<Path, Set<String>> anchors = new HashMap<>();

    private DocLinks() {}

    /**
     * One line per broken link of every Markdown file under {@code root} (build output and hidden directories left
     * out).
     */
    static List<String> broken(Path root) {
        DocLinks links = new DocLinks();
        List<String> broken = new ArrayList<>();
        for (Path file : markdownFiles(root)) {
            broken.addAll(links.brokenIn(root, file));
        }
        return broken;
    }

    /** Every Markdown file under {@code root}, build output and hidden directories left out, in order. */
    static List<Path> markdownFiles(Path root) {
        try (Stream<Path> walk = Files.walk(root)) {
            return walk.filter(p -> p.toString().endsWith(".md") && Files.isRegularFile(p))
                    .filter(p -> !excluded(root.relativize(p)))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Build output, dependencies and hidden directories (.git, .mvn, state a script keeps). */
    private static boolean excluded(Path relative) {
        for (Path part : relative) {
            String name = part.toString();
            if (name.equals("target") || name.equals("node_modules") || (name.startsWith(".") && !name.equals("."))) {
                return true;
            }
        }
        return false;
    }

    /** The broken links of one file, each as {@code file:line: link (why)}. */
    List<String> brokenIn(Path root, Path file) {
        List<String> broken = new ArrayList<>();
        List<String> lines = outsideCodeBlocks(file);
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            Matcher m = LINK.matcher(CODE_SPAN.matcher(line).replaceAll(""));
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*")) {
                    continue; // http:, https:, mailto:
                }
                String why = check(file, target);
                if (why != null) {
                    broken.add(root.relativize(file) + ":" + (i + 1) + ": " + target + " (" + why + ")");
                }
            }
        }
        return broken;
    }

    /** Why {@code target}, linked from {@code file}, does not resolve, or null when it does. */
    private String check(Path file, String target) {
        int hash = target.indexOf('#');
        String path = hash < 0 ? target : target.substring(0, hash);
        String anchor = hash < 0 ? null : target.substring(hash + 1);
        Path resolved = path.isEmpty() ? file : file.getParent().resolve(path).normalize();
        if (!Files.exists(resolved)) {
            return "no such file " + resolved.getFileName();
        }
        if (anchor == null || anchor.isEmpty()) {
            return null;
        }
        if (!resolved.toString().endsWith(".md") || Files.isDirectory(resolved)) {
            return null; // an anchor into a non-Markdown file: a line of source, nothing to check
        }
        Set<String> known = anchors.computeIfAbsent(resolved, DocLinks::anchorsOf);
        return known.contains(anchor) ? null : "no heading with the anchor #" + anchor;
    }

    /** The anchors GitHub gives the headings of a Markdown file, and any explicit HTML anchors. */
    static Set<String> anchorsOf(Path file) {
        Set<String> anchors = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String line : outsideCodeBlocks(file)) {
            Matcher h = HEADING.matcher(line);
            if (h.matches()) {
                String slug = slug(h.group(2));
                int n = seen.merge(slug, 1, Integer::sum) - 1;
                anchors.add(n == 0 ? slug : slug + "-" + n);
            }
            Matcher a = HTML_ANCHOR.matcher(line);
            while (a.find()) {
                anchors.add(a.group(1));
            }
        }
        return anchors;
    }

    /**
     * GitHub's anchor of a heading: its text (links by their text) in lower case, punctuation dropped, spaces to '-'.
     */
    static String slug(String heading) {
        String text = INLINE_LINK.matcher(heading).replaceAll("$1");
        StringBuilder slug = new StringBuilder();
        text.toLowerCase(Locale.ROOT).codePoints().forEach(c -> {
            if (Character.isLetterOrDigit(c) || c == '_' || c == '-') {
                slug.appendCodePoint(c);
            } else if (c == ' ') {
                slug.append('-');
            }
        });
        return slug.toString();
    }

    /** The file's lines, those of fenced code blocks (fences included) blank, so that line numbers hold. */
    static List<String> outsideCodeBlocks(Path file) {
        List<String> lines;
        try {
            lines = new ArrayList<>(Files.readAllLines(file, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String fence = null;
        for (int i = 0; i < lines.size(); i++) {
            String trimmed = lines.get(i).stripLeading();
            if (fence == null && (trimmed.startsWith("```") || trimmed.startsWith("~~~"))) {
                fence = trimmed.substring(0, 3);
                lines.set(i, "");
            } else if (fence != null) {
                if (trimmed.startsWith(fence)) {
                    fence = null;
                }
                lines.set(i, "");
            }
        }
        return lines;
    }
}
