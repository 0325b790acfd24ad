package io.viper.hash;

import io.viper.errors.ViperFormatException;

/**
 * A 128-bit content hash, as computed by {@link Xxh3#hash128}: the XXH128 value with its
 * {@linkplain #high() high} and {@linkplain #low() low} 64-bit halves ({@code XXH128_hash_t.high64}
 * and {@code low64} in xxHash's C API).
 *
 * <p>The text form ({@link #toHex()}, {@link #parseHex(String)}) is xxHash's canonical one, the form
 * {@code xxhsum -H2} prints: 32 lowercase hex digits, big-endian, high half first. For example the
 * hash of no bytes is {@code 99aa06d3014798d86001c324468d497f}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param high the upper 64 bits of the 128-bit hash
 * @param low the lower 64 bits of the 128-bit hash
 */
public record ContentHash(long high, long low) {
    /** Length of {@link #toHex()}: 32 hex digits. */
    public static final int HEX_LENGTH = 32;

    private static final char[] DIGITS = "0123456789abcdef".toCharArray();

    /**
     * The canonical text form: 32 lowercase hex digits, big-endian (the high half first), exactly as
     * {@code xxhsum -H2} prints the hash.
     *
     * @return 32 lowercase hex digits
     */
    public String toHex() {
        char[] out = new char[HEX_LENGTH];
        for (int i = 0; i < 16; i++) {
            out[i] = DIGITS[(int) (high >>> (60 - 4 * i)) & 0xf];
            out[16 + i] = DIGITS[(int) (low >>> (60 - 4 * i)) & 0xf];
        }
        return new String(out);
    }

    /**
     * Parses the canonical text form, as {@link #toHex()} writes it and {@code xxhsum -H2} prints it.
     * Upper-case hex digits are accepted too.
     *
     * @param hex exactly 32 ASCII hex digits, nothing around them
     * @return the hash
     * @throws ViperFormatException if {@code hex} is not exactly 32 ASCII hex digits; the message is
     *     one line
     * @throws NullPointerException if {@code hex} is null
     */
    public static ContentHash parseHex(String hex) {
        if (hex.length() != HEX_LENGTH) {
            throw new ViperFormatException("content hash", "expected " + HEX_LENGTH + " hex digits, got "
                    + hex.length() + " characters: " + quote(hex));
        }
        long high = 0;
        long low = 0;
        for (int i = 0; i < HEX_LENGTH; i++) {
            int d = digit(hex.charAt(i));
            if (d < 0) {
                throw new ViperFormatException("content hash", "not a hex digit at index " + i + ": "
                        + quote(hex));
            }
            if (i < 16) {
                high = (high << 4) | d;
            } else {
                low = (low << 4) | d;
            }
        }
        return new ContentHash(high, low);
    }

    /** Same as {@link #toHex()}. */
    @Override
    public String toString() {
        return toHex();
    }

    private static int digit(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }

    /** Quotes untrusted text for a one-line message: shortened, control characters escaped. */
    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        int n = Math.min(s.length(), 48);
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        if (n < s.length()) {
            b.append("...");
        }
        return b.append('"').toString();
    }
}
