package io.viper.cli.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Drops the kernel's page cache before a cold read: {@code sync}, then {@code 3} into drop_caches (root only). */
final class PageCache {
    private static final Path DROP = Path.of("/proc/sys/vm/drop_caches");

    private PageCache() {}

    /** Whether the cache was dropped: false without root or outside Linux, and the read that follows is not cold. */
    static boolean drop() {
        try {
            Process sync = new ProcessBuilder("sync").inheritIO().start();
            sync.waitFor();
            Files.writeString(DROP, "3\n", StandardCharsets.US_ASCII);
            return true;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
