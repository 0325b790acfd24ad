package io.viper.cli;

import io.viper.errors.IoProblems;
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
    private ChartFiles() {}

    /**
     * Fails early, before the command does its work, for an extension other than .png or .svg, a missing or read-only
     * directory, or a path that exists and is not a writable regular file (a directory; a FIFO, which writing would
     * block on).
     */
    static void checkPath(Path file) {
        String name =
                file.getFileName() == null ? "" : file.getFileName().toString().toLowerCase(Locale.ROOT);
        if (!name.endsWith(".png") && !name.endsWith(".svg")) {
            throw new ViperConfigException("--plot " + file + ": the file name must end in .png or .svg");
        }
        IoProblems.notARegularFile(file).ifPresent(problem -> {
            throw new ViperConfigException("--plot " + file + ": " + problem);
        });
        if (Files.exists(file) && !Files.isWritable(file)) {
            throw new ViperConfigException("--plot " + file + ": permission denied (the file is not writable)");
        }
        Path dir = file.toAbsolutePath().getParent();
        if (dir != null && !Files.isDirectory(dir)) {
            throw new ViperConfigException("--plot " + file
                    + (Files.exists(dir)
                            ? ": " + dir + " is not a directory"
                            : ": directory " + dir + " does not exist"));
        }
        if (dir != null && !Files.exists(file) && !Files.isWritable(dir)) {
            throw new ViperConfigException(
                    "--plot " + file + ": permission denied (directory " + dir + " is not writable)");
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
            throw new ViperConfigException("--plot " + file + ": cannot write: " + IoProblems.reason(e), e);
        }
    }
}
