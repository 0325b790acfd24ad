package io.viper.transfer.ucx.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The UCX memory-type probe answers in one line whether or not UCX loads, and never throws. */
class UcxMemoryTypesTest {
    @Test
    void describesMemoryTypesOrWhyUcxCannotBeAsked() {
        String d = UcxMemoryTypes.describe();
        System.out.println(d);
        assertTrue(d.startsWith("UCX memory types: ") || d.startsWith("UCX not usable: "), d);
        assertFalse(d.contains("\n"), d);
        if (d.startsWith("UCX memory types: ")) {
            assertTrue(d.contains("host"), "UCX always handles host memory: " + d);
            assertEquals(d.contains("cuda,") || d.endsWith("cuda"), UcxMemoryTypes.cuda());
        } else {
            assertFalse(UcxMemoryTypes.cuda());
        }
        assertEquals(d, UcxMemoryTypes.describe(), "probed once");
    }
}
