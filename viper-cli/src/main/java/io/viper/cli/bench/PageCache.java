package io.viper.cli.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * Drops the kernel's page cache before a cold read: {@code sync}, then {@code 3} into drop_caches (root only). Where
 * the guest returns free memory to its host ({@link #returnsFreeMemory}), it then waits {@link #SETTLE_MS} for the
 * memory just freed to be returned, so that every cold read meets memory as a node that restarted meets it, not
 * depending on how soon after the drop it starts.
 */
final class PageCache {
    /**
     * How long the kernel waits before it reports free memory to the host is 2 s ({@code PAGE_REPORTING_DELAY}); one
     * more for the reports. Measured on this machine kind, a cold 1 GiB file brought into memory by 4 streams:
     * 0.31-0.50 s right after the drop, 0.56-0.76 s 4 s after it; with the reporting off (its order raised past the
     * largest), 0.30-0.44 s either way (and 1.11 s once, the first round).
     */
    static final long SETTLE_MS = 3_000;

    private static final Path DROP = Path.of("/proc/sys/vm/drop_caches");
    private static final Path VIRTIO_DEVICES = Path.of("/sys/bus/virtio/devices");
    /** The virtio device id of a memory balloon. */
    private static final String BALLOON = "0x0005";
    /** {@code VIRTIO_BALLOON_F_REPORTING}: the balloon takes reports of free pages, which the host then reclaims. */
    private static final int FREE_PAGE_REPORTING = 5;

    private PageCache() {}

    /** Whether the cache was dropped: false without root or outside Linux, and the read that follows is not cold. */
    static boolean drop() {
        try {
            Process sync = new ProcessBuilder("sync").inheritIO().start();
            sync.waitFor();
            Files.writeString(DROP, "3\n", StandardCharsets.US_ASCII);
            if (returnsFreeMemory()) {
                Thread.sleep(SETTLE_MS);
            }
            return true;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Whether this machine is a guest that reports its free memory to its host (a virtio balloon with that feature).
     */
    static boolean returnsFreeMemory() {
        return returnsFreeMemory(VIRTIO_DEVICES);
    }

    /**
     * As {@link #returnsFreeMemory()}, reading the virtio devices under {@code devices}: each a directory whose file
     * "device" holds its id and whose file "features" holds one {@code 0} or {@code 1} per feature bit, from bit 0.
     */
    static boolean returnsFreeMemory(Path devices) {
        if (!Files.isDirectory(devices)) {
            return false;
        }
        try (Stream<Path> all = Files.list(devices)) {
            return all.anyMatch(PageCache::reportingBalloon);
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private static boolean reportingBalloon(Path device) {
        try {
            String features = Files.readString(device.resolve("features")).strip();
            return BALLOON.equals(Files.readString(device.resolve("device")).strip())
                    && features.length() > FREE_PAGE_REPORTING
                    && features.charAt(FREE_PAGE_REPORTING) == '1';
        } catch (IOException e) {
            return false;
        }
    }
}
