package io.viper.cli.bench;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the file system under {@code file} gives for the bytes of {@code bytes} (4 KiB-aligned): a plain sequential
 * direct write (4 MiB per call, one in flight, then fsync) and, with the page cache dropped, a sequential direct read
 * the same way, then the kernel's fill of its page cache with the file ({@link PageCacheFill}); and fio's direct write
 * and read with 4 MiB blocks and 16 in flight where fio is on the PATH. The files are deleted after. The page cache is
 * dropped before each read when {@code dropCache}. One thread.
 */
public record DeviceBound(Path file, MemorySegment bytes, boolean dropCache) {
    private static final int PIECE = 4 << 20;
    private static final Pattern RUNTIME = Pattern.compile("\"runtime\"\\s*:\\s*(\\d+)");

    /**
     * Seconds for each (NaN where not measured: no fio).
     *
     * @param fillS the file read into the page cache, cold, by {@link PageCacheFill}
     * @param direct whether the file system took O_DIRECT (else the plain figures are buffered I/O)
     */
    public record Figures(
            double writeS,
            double readS,
            double fillS,
            double fioWriteS,
            double fioReadS,
            boolean direct,
            boolean cacheDropped) {}

    public Figures run() throws IOException, InterruptedException {
        OpenOption directOption = directOption();
        boolean direct = directOption != null;
        long size = bytes.byteSize();
        double write;
        double read;
        try {
            long t0 = System.nanoTime();
            try (FileChannel ch = open(directOption, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                for (long at = 0; at < size; at += PIECE) {
                    ByteBuffer b = bytes.asSlice(at, Math.min(PIECE, size - at)).asByteBuffer();
                    for (long pos = at; b.hasRemaining(); ) {
                        pos += ch.write(b, pos);
                    }
                }
                ch.force(true);
            } catch (IOException e) {
                if (!direct) {
                    throw e;
                }
                Files.deleteIfExists(file); // the file system refused O_DIRECT: measure buffered I/O instead
                return buffered();
            }
            write = PfsBench.seconds(t0);
            boolean dropped = drop();
            read = readBack(directOption);
            dropped &= drop();
            double fill = PageCacheFill.fillS(file);
            Files.deleteIfExists(file);
            double[] fio = fio(size);
            dropped &= fio.length == 0 || fio[2] > 0;
            return new Figures(
                    write,
                    read,
                    fill,
                    fio.length == 0 ? Double.NaN : fio[0],
                    fio.length == 0 ? Double.NaN : fio[1],
                    true,
                    dropped);
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private Figures buffered() throws IOException, InterruptedException {
        long size = bytes.byteSize();
        long t0 = System.nanoTime();
        try (FileChannel ch = open(null, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            ByteBuffer b = bytes.asByteBuffer();
            for (long pos = 0; b.hasRemaining(); ) {
                pos += ch.write(b, pos);
            }
            ch.force(true);
        }
        double write = PfsBench.seconds(t0);
        boolean dropped = drop();
        double read = readBack(null);
        dropped &= drop();
        double fill = PageCacheFill.fillS(file);
        Files.deleteIfExists(file);
        return new Figures(write, read, fill, Double.NaN, Double.NaN, false, dropped && size > 0);
    }

    private boolean drop() {
        return dropCache && PageCache.drop();
    }

    private double readBack(OpenOption directOption) throws IOException {
        try (Arena arena = Arena.ofConfined();
                FileChannel ch = open(directOption, StandardOpenOption.READ)) {
            ByteBuffer buffer = arena.allocate(PIECE, 4096).asByteBuffer();
            long t0 = System.nanoTime();
            long size = ch.size();
            for (long at = 0; at < size; ) {
                buffer.clear();
                int n = ch.read(buffer, at);
                if (n < 0) {
                    break;
                }
                at += n;
            }
            return PfsBench.seconds(t0);
        }
    }

    private FileChannel open(OpenOption direct, OpenOption... mode) throws IOException {
        List<OpenOption> options = new ArrayList<>(List.of(mode));
        if (direct != null) {
            options.add(direct);
        }
        return FileChannel.open(file, options.toArray(OpenOption[]::new));
    }

    /** fio's write and read seconds and 1 when the cache was dropped between them; empty when fio is missing. */
    private double[] fio(long size) throws IOException, InterruptedException {
        Path target = file.resolveSibling("fio.bin");
        try {
            String written = runFio(target, size, "write");
            if (written == null) {
                return new double[0];
            }
            boolean dropped = drop();
            String read = runFio(target, size, "read");
            return new double[] {runtime(written), read == null ? Double.NaN : runtime(read), dropped ? 1 : 0};
        } finally {
            Files.deleteIfExists(target);
        }
    }

    /** fio's JSON output of one direct sequential job, null when fio cannot be run. */
    private static String runFio(Path target, long size, String rw) throws IOException, InterruptedException {
        List<String> cmd = List.of(
                "fio",
                "--name=viper-bound",
                "--filename=" + target,
                "--size=" + size,
                "--bs=4m",
                "--direct=1",
                "--ioengine=libaio",
                "--iodepth=16",
                "--rw=" + rw,
                "--end_fsync=" + ("write".equals(rw) ? 1 : 0),
                "--output-format=json");
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        } catch (IOException notInstalled) {
            return null;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
            return null;
        }
        Matcher section = Pattern.compile("\"" + rw + "\"\\s*:\\s*\\{").matcher(out);
        return section.find() ? out.substring(section.start()) : null;
    }

    /** The job's runtime in seconds, from the first {@code runtime} of its section. */
    private static double runtime(String section) {
        Matcher m = RUNTIME.matcher(section);
        return m.find() ? Long.parseLong(m.group(1)) / 1000.0 : Double.NaN;
    }

    /** {@code com.sun.nio.file.ExtendedOpenOption.DIRECT} by name (a reference to it is a compiler warning). */
    private static OpenOption directOption() {
        try {
            return (OpenOption) Class.forName("com.sun.nio.file.ExtendedOpenOption")
                    .getField("DIRECT")
                    .get(null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
