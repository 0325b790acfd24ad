package io.viper.cli;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * {@code viper consume --out-keep N}: the files this command wrote, the oldest deleted once more than {@code N} are
 * kept (0: none is), so that following a model for hours does not fill the disk with every version. Only files it wrote
 * itself are ever deleted. The consume loop's thread only.
 */
final class OutRetention {
    private final int keep;
    private final Deque<Path> written = new ArrayDeque<>();

    OutRetention(int keep) {
        this.keep = keep;
    }

    /** Records {@code file} as written, and deletes the oldest files past the newest {@code keep}. */
    void wrote(Path file) {
        written.remove(file);
        written.addLast(file);
        while (keep > 0 && written.size() > keep) {
            Path old = written.removeFirst();
            try {
                Files.deleteIfExists(old);
            } catch (IOException e) {
                throw new ViperException(
                        ViperException.Reason.IO, "--out-keep: cannot delete " + old + ": " + IoProblems.reason(e), e);
            }
        }
    }
}
