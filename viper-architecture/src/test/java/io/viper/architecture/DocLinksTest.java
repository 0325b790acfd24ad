package io.viper.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every relative link of the project's Markdown files resolves: {@link DocLinks}. */
class DocLinksTest {
    @Test
    void everyRelativeLinkAndAnchorOfTheDocsResolves() {
        Path root = Repository.root();
        assertTrue(
                Files.isRegularFile(root.resolve("README.md"))
                        && Files.isRegularFile(root.resolve("docs/architecture.md")),
                "the repository root was found: " + root);
        assertEquals(List.of(), DocLinks.broken(root));
    }

    @Test
    void anchorsAreMadeAsGitHubMakesThem() {
        assertEquals(
                "where-a-cold-updates-12-ms-goes-commit-707f16d",
                DocLinks.slug("Where a cold update's 1.2 ms goes (commit 707f16d)"));
        assertEquals("the-viper-command", DocLinks.slug("The `viper` command"));
        assertEquals("delta-updates-and-deduplicated-storage", DocLinks.slug("Delta updates and deduplicated storage"));
        assertEquals("see-the-readme", DocLinks.slug("See [the README](README.md)"));
        assertEquals("viperconsumerdevicegpu-or-gpun", DocLinks.slug("viper.consumer.device=gpu or gpu:N"));
    }

    @Test
    void aMissingFileOrHeadingIsReportedAndCodeIsNot(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("a.md"), """
                # Title
                ## Part one
                ## Part one
                [b](b.md#there), [gone](gone.md), [self](#part-one-1), [nowhere](#part-two), [web](https://x.io/x.md).
                `[not a link](nowhere.md)`
                ```
                [not a link either](nowhere.md)
                ```
                ![an image](missing.png)
                """);
        Files.writeString(dir.resolve("b.md"), "# B\n## There\n");
        assertEquals(
                List.of(
                        "a.md:4: gone.md (no such file gone.md)",
                        "a.md:4: #part-two (no heading with the anchor #part-two)",
                        "a.md:9: missing.png (no such file missing.png)"),
                DocLinks.broken(dir));
        Files.writeString(dir.resolve("b.md"), "# B\n");
        assertEquals(
                "a.md:4: b.md#there (no heading with the anchor #there)",
                DocLinks.broken(dir).getFirst());
    }
}
