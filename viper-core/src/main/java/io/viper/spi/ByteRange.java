package io.viper.spi;

/**
 * A contiguous run of bytes to copy: {@code length} bytes from {@code sourceOffset} in the checkpoint's data section to
 * {@code destinationOffset} in the caller's buffer.
 */
public record ByteRange(long sourceOffset, long length, long destinationOffset) {
    public ByteRange {
        if (sourceOffset < 0 || length < 0 || destinationOffset < 0) {
            throw new IllegalArgumentException(
                    "negative byte range " + sourceOffset + "+" + length + "->" + destinationOffset);
        }
    }
}
