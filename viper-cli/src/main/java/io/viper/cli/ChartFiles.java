package io.viper.cli;

import io.viper.errors.ViperConfigException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.VectorGraphicsEncoder;
import org.knowm.xchart.internal.chartpart.Chart;

/** The files a {@code --plot FILE} option writes: PNG or SVG by the file name's extension. */
final class ChartFiles {
    private ChartFiles() {
    }

    /** Fails early for an extension other than .png or .svg, or a missing directory. */
    static void checkPath(Path file) {
        String name = file.getFileName() == null ? "" : file.getFileName().toString().toLowerCase(Locale.ROOT);
        if (!name.endsWith(".png") && !name.endsWith(".svg")) {
            throw new ViperConfigException("--plot " + file + ": the file name must end in .png or .svg");
        }
        Path dir = file.toAbsolutePath().getParent();
        if (dir != null && !Files.isDirectory(dir)) {
            throw new ViperConfigException("--plot " + file + ": directory " + dir + " does not exist");
        }
    }

    /** Writes {@code chart} to {@code file} as SVG or PNG. */
    static void save(Chart<?, ?> chart, Path file) {
        try {
            String name = file.toString();
            if (name.toLowerCase(Locale.ROOT).endsWith(".svg")) {
                VectorGraphicsEncoder.saveVectorGraphic(chart, name, VectorGraphicsEncoder.VectorGraphicsFormat.SVG);
            } else {
                BitmapEncoder.saveBitmap(chart, name, BitmapEncoder.BitmapFormat.PNG);
            }
        } catch (IOException e) {
            throw new ViperConfigException("--plot " + file + ": cannot write (" + e.getMessage() + ")", e);
        }
    }
}
