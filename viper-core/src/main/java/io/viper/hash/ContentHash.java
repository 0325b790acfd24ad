package io.viper.hash;

import io.viper.errors.ViperFormatException;
import java.util.Objects;

/**
 * The hash of a tensor's bytes, by the {@link HashAlgorithm} that computed it: an XXH3-128 value ({@link Xxh3#hash128})
 * with its {@linkplain #high() high} and {@linkplain #low() low} 64-bit halves ({@code XXH128_hash_t.high64} and
 * {@code low64} in xxHash's C API), or a CRC32C ({@link Crc32c}) in the low 32 bits of {@link #low()}.
 *
 * <p>The text form ({@link #toHex()}, {@link #parseHex(String)}) of XXH3-128 is xxHash's canonical one, the form
 * {@code xxhsum -H2} prints: 32 lowercase hex digits, big-endian, high half first. For example the hash of no bytes is
 * {@code 99aa06d3014798d86001c324468d497f}. A CRC32C is 8 lowercase hex digits, the form {@code crc32c} tools print
 * (the CRC of {@code "123456789"} is {@code e3069283}).
 *
 * <p>Immutable and thread-safe.
 *
 * @param algorithm what computed it
 * @param high the upper 64 bits of an XXH3-128 hash; 0 for CRC32C
 * @param low the lower 64 bits of an XXH3-128 hash; the unsigned CRC for CRC32C
 */
public record ContentHash(HashAlgorithm algorithm, long high, long low) {
    /** Length of {@link #toHex()} of an XXH3-128 hash: 32 hex digits. */
    public static final int HEX_LENGTH = 32;

    private static final char[] DIGITS = "0123456789abcdef".toCharArray();

    /** Checks that a CRC32C fits in 32 bits. */
    public ContentHash {
        Objects.requireNonNull(algorithm, "algorithm");
        if (algorithm == HashAlgorithm.CRC32C && (high != 0 || (low >>> 32) != 0)) {
            throw new IllegalArgumentException("a CRC32C has 32 bits");
        }
    }

    /** An XXH3-128 hash. */
    public ContentHash(long high, long low) {
        this(HashAlgorithm.XXH3_128, high, low);
    }

    /** A CRC32C, as {@link java.util.zip.CRC32C} or {@link Crc32c} compute it. */
    public static ContentHash crc32c(int crc) {
        return new ContentHash(HashAlgorithm.CRC32C, 0, crc & 0xFFFFFFFFL);
    }

    /**
     * The canonical text form: for XXH3-128 32 lowercase hex digits, big-endian (the high half first), exactly as
     * {@code xxhsum -H2} prints the hash; for CRC32C 8 lowercase hex digits.
     *
     * @return {@link HashAlgorithm#hexLength()} lowercase hex digits
     */
    public String toHex() {
        if (algorithm == HashAlgorithm.CRC32C) {
            char[] out = new char[8];
            for (int i = 0; i < 8; i++) {
                out[i] = DIGITS[(int) (low >>> (28 - 4 * i)) & 0xf];
            }
            return new String(out);
        }
        char[] out = new char[HEX_LENGTH];
        for (int i = 0; i < 16; i++) {
            out[i] = DIGITS[(int) (high >>> (60 - 4 * i)) & 0xf];
            out[16 + i] = DIGITS[(int) (low >>> (60 - 4 * i)) & 0xf];
        }
        return new String(out);
    }

    /**
     * Parses the canonical text form, as {@link #toHex()} writes it and {@code xxhsum -H2} prints it. Upper-case hex
     * digits are accepted too.
     *
     * @param hex exactly 32 ASCII hex digits, nothing around them
     * @return the hash
     * @throws ViperFormatException if {@code hex} is not exactly 32 ASCII hex digits; the message is one line
     * @throws NullPointerException if {@code hex} is null
     */
    public static ContentHash parseHex(String hex) {
        return parseHex(HashAlgorithm.XXH3_128, hex);
    }

    /**
     * Parses the text form of a hash of {@code algorithm}, as {@link #toHex()} writes it. Upper-case hex digits are
     * accepted too.
     *
     * @throws ViperFormatException if {@code hex} is not exactly {@link HashAlgorithm#hexLength()} ASCII hex digits;
     *     the message is one line
     */
    public static ContentHash parseHex(HashAlgorithm algorithm, String hex) {
        int digits = algorithm.hexLength();
        if (hex.length() != digits) {
            throw new ViperFormatException(
                    "content hash",
                    "expected " + digits + " hex digits, got " + hex.length() + " characters: " + quote(hex));
        }
        long high = 0;
        long low = 0;
        for (int i = 0; i < digits; i++) {
            int d = digit(hex.charAt(i));
            if (d < 0) {
                throw new ViperFormatException("content hash", "not a hex digit at index " + i + ": " + quote(hex));
            }
            if (i < digits - 16) {
                high = (high << 4) | d;
            } else {
                low = (low << 4) | d;
            }
        }
        return new ContentHash(algorithm, high, low);
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
