package io.viper.hash;

/** Placeholder replaced by the XXH3-128 implementation at merge. */
public record ContentHash(long high, long low) {
    public String toHex() {
        return String.format("%016x%016x", high, low);
    }

    public static ContentHash parseHex(String hex) {
        if (hex == null || hex.length() != 32) {
            throw new io.viper.errors.ViperConfigException("content hash must be 32 hex characters, got '" + hex + "'");
        }
        return new ContentHash(Long.parseUnsignedLong(hex.substring(0, 16), 16), Long.parseUnsignedLong(hex.substring(16), 16));
    }
}
