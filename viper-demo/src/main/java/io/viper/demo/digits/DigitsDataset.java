package io.viper.demo.digits;

import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.errors.ViperNotFoundException;
import java.io.BufferedReader;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * The optical recognition of handwritten digits data set: 1,797 images of 8x8 pixels with values 0..16, each labelled
 * with its digit 0..9 (the UCI test set as packaged by scikit-learn, BSD licence; see {@code NOTICE.md} and
 * {@code digits.rst} next to the data in this package).
 *
 * <p>The file is a gzip-compressed CSV without header: each line holds 64 pixel values (row-major, row 0 first) and
 * then the label, all plain decimal integers. Every row is validated on reading; a malformed row fails the whole read
 * with a {@link ViperFormatException} that names the source and the 1-based line number.
 *
 * <p>Instances are immutable and may be used from any thread. {@link #load()} parses the bundled file once per JVM and
 * returns the same instance afterwards.
 */
public final class DigitsDataset {
    /** Pixels per image (8 x 8). */
    public static final int PIXELS = 64;
    /** Side of the square image. */
    public static final int SIDE = 8;
    /** Number of classes (digits 0..9). */
    public static final int CLASSES = 10;
    /** Largest pixel value; pixels are 0..MAX_PIXEL. */
    public static final int MAX_PIXEL = 16;
    /** Class-path location of the bundled data. */
    public static final String RESOURCE = "/io/viper/demo/digits/digits.csv.gz";

    private static final int FIELDS = PIXELS + 1;

    private final byte[] pixels; // size * PIXELS, values 0..16
    private final byte[] labels; // size, values 0..9

    private DigitsDataset(byte[] pixels, byte[] labels) {
        this.pixels = pixels;
        this.labels = labels;
    }

    private static final class Bundled {
        static final DigitsDataset INSTANCE = readBundled();

        private static DigitsDataset readBundled() {
            try (InputStream in = DigitsDataset.class.getResourceAsStream(RESOURCE)) {
                if (in == null) {
                    throw new ViperNotFoundException(
                            "class path resource " + RESOURCE + ": not found (is the viper-demo jar complete?)");
                }
                return readGzip(in, "classpath:" + RESOURCE);
            } catch (IOException e) {
                throw new UncheckedIOException("closing " + RESOURCE, e);
            }
        }
    }

    /**
     * The bundled data set, read from the class path on first use (about 10 ms) and shared after.
     *
     * @throws ViperFormatException if the bundled file is malformed
     * @throws ViperException with reason {@code NOT_FOUND} if the resource is missing
     */
    public static DigitsDataset load() {
        return Bundled.INSTANCE;
    }

    /**
     * Reads a gzip-compressed digits CSV. Does not close {@code in}.
     *
     * @param source names the input in error messages (a file name or URI)
     * @throws ViperFormatException if the stream is not gzip or a row is malformed
     */
    public static DigitsDataset readGzip(InputStream in, String source) {
        try {
            return readCsv(new GZIPInputStream(in, 1 << 16), source);
        } catch (ZipException e) {
            throw new ViperFormatException(source, "not a valid gzip stream (" + e.getMessage() + ")", e);
        } catch (IOException e) {
            throw new ViperException(ViperException.Reason.IO, source + ": read failed: " + e.getMessage(), e);
        }
    }

    /**
     * Reads an uncompressed digits CSV (UTF-8 or ASCII, {@code \n} or {@code \r\n} line ends). Does not close
     * {@code in}.
     *
     * @param source names the input in error messages (a file name or URI)
     * @throws ViperFormatException naming the 1-based line of the first malformed row, or if there is no row at all
     */
    public static DigitsDataset readCsv(InputStream in, String source) {
        BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        byte[] px = new byte[2048 * PIXELS];
        byte[] lb = new byte[2048];
        int n = 0;
        int lineNo = 0;
        try {
            String line;
            while ((line = reader.readLine()) != null) {
                lineNo++;
                if (n == lb.length) {
                    lb = Arrays.copyOf(lb, n * 2);
                    px = Arrays.copyOf(px, n * 2 * PIXELS);
                }
                parseRow(line, lineNo, source, px, n * PIXELS, lb, n);
                n++;
            }
        } catch (ZipException e) {
            throw new ViperFormatException(
                    source, "corrupt gzip data after line " + lineNo + " (" + e.getMessage() + ")", e);
        } catch (EOFException e) {
            throw new ViperFormatException(source, "truncated after line " + lineNo, e);
        } catch (IOException e) {
            throw new ViperException(
                    ViperException.Reason.IO, source + ": read failed after line " + lineNo + ": " + e.getMessage(), e);
        }
        if (n == 0) {
            throw new ViperFormatException(source, "no rows");
        }
        return new DigitsDataset(Arrays.copyOf(px, n * PIXELS), Arrays.copyOf(lb, n));
    }

    private static void parseRow(String line, int lineNo, String source, byte[] px, int pxOffset, byte[] lb, int row) {
        int len = line.length();
        if (len > 0 && line.charAt(len - 1) == '\r') {
            len--;
        }
        if (len == 0) {
            throw new ViperFormatException(source, "line " + lineNo + ": empty row, expected " + FIELDS + " fields");
        }
        int field = 0;
        int pos = 0;
        while (true) {
            int end = pos;
            while (end < len && line.charAt(end) != ',') {
                end++;
            }
            if (field >= FIELDS) {
                throw new ViperFormatException(
                        source,
                        "line " + lineNo + ": more than " + FIELDS + " fields, expected " + PIXELS
                                + " pixels and a label");
            }
            int value = parseSmallInt(line, pos, end);
            if (field < PIXELS) {
                if (value < 0 || value > MAX_PIXEL) {
                    throw new ViperFormatException(
                            source,
                            "line " + lineNo + ": pixel " + field + " is '" + line.substring(pos, end)
                                    + "', expected an integer 0.." + MAX_PIXEL);
                }
                px[pxOffset + field] = (byte) value;
            } else {
                if (value < 0 || value >= CLASSES) {
                    throw new ViperFormatException(
                            source,
                            "line " + lineNo + ": label is '" + line.substring(pos, end) + "', expected an integer 0.."
                                    + (CLASSES - 1));
                }
                lb[row] = (byte) value;
            }
            field++;
            if (end >= len) {
                break;
            }
            pos = end + 1;
        }
        if (field != FIELDS) {
            throw new ViperFormatException(
                    source,
                    "line " + lineNo + ": " + field + " fields, expected " + FIELDS + " (" + PIXELS
                            + " pixels and a label)");
        }
    }

    /** The decimal integer in {@code s[from, to)} if it has 1..3 digits and nothing else, else -1. */
    private static int parseSmallInt(String s, int from, int to) {
        int n = to - from;
        if (n < 1 || n > 3) {
            return -1;
        }
        int v = 0;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            v = v * 10 + (c - '0');
        }
        return v;
    }

    /** Number of images. */
    public int size() {
        return labels.length;
    }

    /** The label (0..9) of image {@code index}. */
    public int label(int index) {
        return labels[checkIndex(index)];
    }

    /** Raw pixel {@code pixel} (0..63, row-major) of image {@code index}, 0..16. */
    public int pixel(int index, int pixel) {
        checkIndex(index);
        return pixels[index * PIXELS + Objects.checkIndex(pixel, PIXELS)];
    }

    /** A new array with image {@code index} scaled to [0, 1] (pixel / 16), row-major. */
    public float[] image(int index) {
        float[] out = new float[PIXELS];
        copyImage(index, out, 0);
        return out;
    }

    /** Writes image {@code index}, scaled to [0, 1], into {@code dst[offset, offset + 64)}. */
    public void copyImage(int index, float[] dst, int offset) {
        int base = checkIndex(index) * PIXELS;
        for (int p = 0; p < PIXELS; p++) {
            dst[offset + p] = pixels[base + p] * (1f / MAX_PIXEL);
        }
    }

    /** How many images carry each label; index = label. */
    public int[] labelCounts() {
        int[] counts = new int[CLASSES];
        for (byte b : labels) {
            counts[b]++;
        }
        return counts;
    }

    private int checkIndex(int index) {
        return Objects.checkIndex(index, labels.length);
    }
}
