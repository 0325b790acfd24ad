package io.viper.hash;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperFormatException;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ContentHashTest {
    @Test
    void hexIsBigEndianHighHalfFirst() {
        ContentHash h = new ContentHash(0x0123456789abcdefL, 0xfedcba9876543210L);
        assertEquals("0123456789abcdeffedcba9876543210", h.toHex());
        assertEquals(h.toHex(), h.toString());
        assertEquals("00000000000000000000000000000001", new ContentHash(0, 1).toHex());
        assertEquals("ffffffffffffffffffffffffffffffff", new ContentHash(-1, -1).toHex());
    }

    @Test
    void parseHexRoundTrips() {
        ContentHash h = new ContentHash(0x99aa06d3014798d8L, 0x6001c324468d497fL);
        assertEquals(h, ContentHash.parseHex("99aa06d3014798d86001c324468d497f"));
        assertEquals(h, ContentHash.parseHex("99AA06D3014798D86001C324468D497F"));
        Random rnd = new Random(1);
        for (int i = 0; i < 1000; i++) {
            ContentHash r = new ContentHash(rnd.nextLong(), rnd.nextLong());
            assertEquals(r, ContentHash.parseHex(r.toHex()));
        }
    }

    @Test
    void parseHexRejectsMalformedTextWithAOneLineMessage() {
        String[] bad = {
            "",
            "99aa06d3014798d86001c324468d497",
            "99aa06d3014798d86001c324468d497f0",
            "99aa06d3014798d86001c324468d497g",
            " 99aa06d3014798d86001c324468d497",
            "0x9aa06d3014798d86001c324468d497f",
            "99aa06d3014798d86001c324468d497\n",
            "99aa06d3014798d86001c324468d49\u0663\u0663", // Arabic-Indic digits
            "99aa06d3014798d8-6001c324468d497",
            "line one\nline two\r\n and a very long tail that goes on and on and on"
        };
        for (String s : bad) {
            ViperFormatException e = assertThrows(ViperFormatException.class, () -> ContentHash.parseHex(s), s);
            assertFalse(e.getMessage().contains("\n") || e.getMessage().contains("\r"), e.getMessage());
            assertTrue(e.getMessage().startsWith("content hash: "), e.getMessage());
        }
        assertThrows(NullPointerException.class, () -> ContentHash.parseHex(null));
    }
}
