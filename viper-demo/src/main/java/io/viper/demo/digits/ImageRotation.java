package io.viper.demo.digits;

/**
 * Rotation of an 8x8 image about its centre (3.5, 3.5), bilinear, zero outside. The sampling plan (four source pixels
 * and weights per output pixel) is computed once per rotation, so that rotating a batch costs 256 multiply-adds per
 * image.
 */
final class ImageRotation {
    private static final int N = DigitsDataset.SIDE;
    private static final int PIXELS = N * N;
    private static final ImageRotation IDENTITY = new ImageRotation(null, null);
    private final int[] source; // 4 per output pixel; -1 = outside the frame
    private final float[] weight; // 4 per output pixel

    private ImageRotation(int[] source, float[] weight) {
        this.source = source;
        this.weight = weight;
    }

    static ImageRotation of(double degrees) {
        if (degrees == 0) {
            return IDENTITY;
        }
        double rad = Math.toRadians(degrees);
        double sin = Math.sin(rad);
        double cos = Math.cos(rad);
        int[] source = new int[4 * PIXELS];
        float[] weight = new float[4 * PIXELS];
        final double c = (N - 1) / 2.0;
        for (int r = 0; r < N; r++) {
            double y = c - r; // up is positive
            for (int col = 0; col < N; col++) {
                double x = col - c;
                // inverse rotation: where does this output pixel come from?
                double sx = cos * x + sin * y;
                double sy = -sin * x + cos * y;
                double srcCol = sx + c;
                double srcRow = c - sy;
                int r0 = (int) Math.floor(srcRow);
                int c0 = (int) Math.floor(srcCol);
                double fr = srcRow - r0;
                double fc = srcCol - c0;
                int k = 4 * (r * N + col);
                tap(source, weight, k, r0, c0, (1 - fr) * (1 - fc));
                tap(source, weight, k + 1, r0, c0 + 1, (1 - fr) * fc);
                tap(source, weight, k + 2, r0 + 1, c0, fr * (1 - fc));
                tap(source, weight, k + 3, r0 + 1, c0 + 1, fr * fc);
            }
        }
        return new ImageRotation(source, weight);
    }

    private static void tap(int[] source, float[] weight, int k, int r, int c, double w) {
        boolean inside = r >= 0 && r < N && c >= 0 && c < N;
        source[k] = inside ? r * N + c : -1;
        weight[k] = inside ? (float) w : 0f;
    }

    /** Writes {@code src} (64 values) rotated counter-clockwise into {@code dst[off, off + 64)}. */
    void apply(float[] src, float[] dst, int off) {
        if (source == null) {
            System.arraycopy(src, 0, dst, off, PIXELS);
            return;
        }
        for (int p = 0; p < PIXELS; p++) {
            float v = 0f;
            for (int t = 4 * p; t < 4 * p + 4; t++) {
                int from = source[t];
                if (from >= 0) {
                    v += weight[t] * src[from];
                }
            }
            dst[off + p] = v;
        }
    }
}
