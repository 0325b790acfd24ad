package io.viper.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** {@link ReadmeSnippets}: the block is found by language and content, and a missing one is named. */
class ReadmeSnippetsTest {
    private static final String MD = "text\n```java\nclass A {}\n```\n\n```xml\n<a/>\n```\n```java\nclass B {}\n```\n";

    @Test
    void findsTheFirstBlockOfTheLanguageThatHoldsTheMarker() {
        assertEquals("class B {}\n", ReadmeSnippets.block(MD, "java", "class B"));
        assertEquals("<a/>\n", ReadmeSnippets.block(MD, "xml", "<a"));
    }

    @Test
    void aMissingBlockIsNamed() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ReadmeSnippets.block(MD, "xml", "class A"));
        assertEquals("no ```xml block containing 'class A'", e.getMessage());
    }
}
