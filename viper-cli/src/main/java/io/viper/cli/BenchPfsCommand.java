package io.viper.cli;

import io.viper.ViperConfig;
import io.viper.cli.bench.BenchReport;
import io.viper.cli.bench.PfsBench;
import io.viper.config.ConfigValues;
import io.viper.errors.ViperConfigException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.ToDoubleFunction;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code viper bench pfs}: the PFS path against the device ({@link PfsBench}): the flush of a version and cold loads by
 * one and by several consumers at once, beside plain sequential direct I/O (and fio) of the same bytes on the same file
 * system, in the same run.
 */
@Command(
        name = "pfs",
        mixinStandardHelpOptions = true,
        description = {
            "The PFS path against the disk: a producer flushes a model to a fresh repository (publish to durable), then"
                    + " with the page cache dropped one consumer, and then N at once, load it cold from there.",
            "In the same run the same bytes are written and read with plain sequential direct I/O (4 MiB, one in"
                    + " flight) on the same file system, and with fio (4 MiB, 16 in flight) where it is installed;"
                    + " the ratios compare Viper with them. The kernel's own fill of its page cache with the same"
                    + " file (16 streams of buffered reads, fill s) and the first touch of as much fresh memory as the"
                    + " loads need are measured too: a cold load's floor is the slowest of the disk's read, that"
                    + " fill and that touch (vs floor; the touch is in --json). Consumers at once share the disk and"
                    + " the page cache, not their own work (mapping, page tables, verifying): one more load with the"
                    + " page cache warm measures its processor time, and N own cpu s is N times that over the cores"
                    + " (vs cpu: the loads at once against it). Dropping the page cache needs root:"
                    + " the output says when it could not. Where the machine is a guest that returns free memory to"
                    + " its host, each cold read starts 3 s after the drop, once that memory is returned."
        })
final class BenchPfsCommand implements Callable<Integer> {
    @Option(
            names = "--size",
            paramLabel = "SIZE[,SIZE...]",
            defaultValue = "1g",
            description = "Model sizes, multiples of 4k (default: ${DEFAULT-VALUE})")
    String sizes;

    @Option(
            names = "--block-bytes",
            paramLabel = "SIZE[,SIZE...]",
            defaultValue = "1m,0",
            description = "The producer's viper.block.bytes, each measured (0: a safetensors file; default:"
                    + " ${DEFAULT-VALUE})")
    String blockBytes;

    @Option(
            names = "--consumers",
            paramLabel = "N",
            defaultValue = "4",
            description = "Consumers loading cold at once in the last step (0: skipped; default: ${DEFAULT-VALUE})")
    int consumers;

    @Option(
            names = "--dir",
            paramLabel = "DIR",
            description = "A directory on the file system to measure (default: a temporary one; what the bench writes"
                    + " there is removed after)")
    Path dir;

    @Option(
            names = "--keep-cache",
            description = "Do not drop the page cache before the reads (they are then warm, not cold)")
    boolean keepCache;

    @Option(
            names = "--repeat",
            paramLabel = "N",
            defaultValue = "1",
            description = "Rounds of every row, one after the other (a disk's speed swings from minute to minute);"
                    + " with more than one, each ratio's median over the rounds and its range follow the table"
                    + " (default: ${DEFAULT-VALUE})")
    int repeat;

    @Option(names = "--json", description = "Print one JSON object per run instead of the table")
    boolean json;

    @Option(
            names = {"-v", "--verbose"},
            description = "Log what Viper does on stderr (each load's transfer and verification times among it)")
    boolean verbose;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        CliLogging.configure(verbose);
        List<Long> sizeList = new ArrayList<>();
        for (String s : sizes.split(",")) {
            long bytes = BenchCommand.named("--size", () -> ConfigValues.parseSize(s.strip()));
            if (bytes < (1 << 20) || bytes % 4096 != 0) {
                throw new ViperConfigException("--size " + s + ": at least 1m, and a multiple of 4k");
            }
            BenchCommand.checkMemory("--size", bytes, 2 + Math.max(1, consumers), "the model, staging, consumers");
            sizeList.add(bytes);
        }
        List<Long> blocks = new ArrayList<>();
        for (String b : blockBytes.split(",")) {
            blocks.add(BenchCommand.named("--block-bytes", () -> ViperConfig.BLOCK_BYTES.parse(b.strip())));
        }
        if (consumers < 0 || consumers > 16) {
            throw new ViperConfigException("--consumers " + consumers + " must be between 0 and 16");
        }
        if (repeat < 1 || repeat > 20) {
            throw new ViperConfigException("--repeat " + repeat + " must be between 1 and 20");
        }
        Path base = dir != null ? BenchCommand.checkDir(dir) : Files.createTempDirectory("viper-bench-pfs");
        PrintWriter out = spec.commandLine().getOut();
        boolean dropped = true;
        if (!json) {
            out.println("size  blocks  flush s  direct-write s  ratio  fio-write s | cold load s  direct-read s  ratio"
                    + "  fio-read s   fill s  vs floor | " + consumers + " at once s  vs one  " + consumers
                    + " touches s  vs floor  " + consumers + " own cpu s  vs cpu");
        }
        // per size and block setting, its runs in round order
        Map<List<Long>, List<PfsBench.Result>> runs = new LinkedHashMap<>();
        for (int round = 1; round <= repeat; round++) {
            if (round > 1 && !json) {
                out.println();
            }
            for (long size : sizeList) {
                for (long block : blocks) {
                    Path run = Files.createTempDirectory(Files.createDirectories(base), "run");
                    try {
                        PfsBench.Result r = new PfsBench(size, block, consumers, run, !keepCache).run();
                        dropped &= r.cacheDropped();
                        runs.computeIfAbsent(List.of(size, block), k -> new ArrayList<>())
                                .add(r);
                        out.println(json ? json(r, round) : row(r));
                        out.flush();
                    } finally {
                        BenchCommand.deleteTree(run);
                    }
                }
            }
        }
        if (repeat > 1) {
            if (!json) {
                out.println();
                out.println("size  blocks | flush vs direct-write | cold load vs direct-read | floor vs direct-read"
                        + " | cold load vs floor | "
                        + consumers + " at once vs one | " + consumers + " at once vs floor | " + consumers
                        + " at once vs cpu   (medians of " + repeat
                        + " rounds, their range)");
            }
            for (List<PfsBench.Result> rs : runs.values()) {
                out.println(json ? summaryJson(rs) : summaryRow(rs));
            }
            out.flush();
        }
        if (dir == null) {
            BenchCommand.deleteTree(base);
        }
        if (!keepCache && dropped && PfsBench.guestReturnsFreeMemory()) {
            spec.commandLine()
                    .getErr()
                    .println("viper bench pfs: this machine returns free memory to its host (virtio-balloon free page"
                            + " reporting): each cold read began 3 s after the page cache was dropped, once that"
                            + " memory was returned, as a node that restarted meets it");
        }
        if (keepCache) {
            spec.commandLine().getErr().println("viper bench pfs: --keep-cache: the reads were warm, not cold");
        } else if (!dropped) {
            spec.commandLine()
                    .getErr()
                    .println("viper bench pfs: could not drop the page cache (needs root: echo 3 >"
                            + " /proc/sys/vm/drop_caches); the cold figures may be warm");
        }
        return 0;
    }

    private static String row(PfsBench.Result r) {
        var b = r.bound();
        return String.format(
                Locale.ROOT,
                "%-5s %-6s %8.2f %15.2f %6.2fx %12s | %11.2f %14.2f %6.2fx %11s %8.2f %8.2fx | %10s %7s %10s %9s"
                        + " %12s %7s%s",
                BenchReport.size(r.size()),
                r.blockBytes() == 0 ? "off" : BenchReport.size(r.blockBytes()),
                r.flushS(),
                b.writeS(),
                FLUSH_VS_DIRECT_WRITE.of(r),
                figure(b.fioWriteS()),
                r.coldLoadS(),
                b.readS(),
                COLD_LOAD_VS_DIRECT_READ.of(r),
                figure(b.fioReadS()),
                b.fillS(),
                COLD_LOAD_VS_FLOOR.of(r),
                figure(r.concurrentLoadS()),
                AT_ONCE_VS_ONE.times(r),
                figure(r.touchAtOnceS()),
                AT_ONCE_VS_FLOOR.times(r),
                figure(r.concurrentCpuS()),
                AT_ONCE_VS_CPU.times(r),
                b.direct() ? "" : "  (no O_DIRECT here: the bound is buffered I/O)");
    }

    /** A ratio a row reports, by its name in {@code --json} and how a run's figures give it. */
    private record Ratio(String name, ToDoubleFunction<PfsBench.Result> formula) {
        /** Its value in run {@code r} (NaN where not measured). */
        double of(PfsBench.Result r) {
            return formula.applyAsDouble(r);
        }

        /** Its value in run {@code r} as the table shows it: {@code 1.23x}, or {@code -} where not measured. */
        String times(PfsBench.Result r) {
            double v = of(r);
            return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.2fx", v);
        }

        /** Its values over {@code runs}, sorted (NaN, where not measured, last). */
        double[] sorted(List<PfsBench.Result> runs) {
            return runs.stream().mapToDouble(formula).sorted().toArray();
        }
    }

    private static final Ratio FLUSH_VS_DIRECT_WRITE =
            new Ratio("flush_vs_direct_write", r -> r.flushS() / r.bound().writeS());
    private static final Ratio COLD_LOAD_VS_DIRECT_READ =
            new Ratio("cold_load_vs_direct_read", r -> r.coldLoadS() / r.bound().readS());
    /**
     * How far the machine's own floor of a cold load lay above the disk's direct read: where the kernel's fill or the
     * first touch of fresh memory is slower than the disk, no load into memory comes nearer the direct read than this.
     */
    private static final Ratio FLOOR_VS_DIRECT_READ =
            new Ratio("floor_vs_direct_read", r -> r.coldFloorS() / r.bound().readS());

    private static final Ratio COLD_LOAD_VS_FLOOR =
            new Ratio("cold_load_vs_floor", r -> r.coldLoadS() / r.coldFloorS());
    private static final Ratio AT_ONCE_VS_ONE = new Ratio("at_once_vs_one", r -> r.concurrentLoadS() / r.coldLoadS());
    private static final Ratio AT_ONCE_VS_FLOOR =
            new Ratio("at_once_vs_floor", r -> r.concurrentLoadS() / r.concurrentFloorS());
    private static final Ratio AT_ONCE_VS_CPU =
            new Ratio("at_once_vs_cpu", r -> r.concurrentLoadS() / r.concurrentCpuS());

    /** The ratios each row reports, summed up over rounds in the table's order. */
    private static final List<Ratio> RATIOS = List.of(
            FLUSH_VS_DIRECT_WRITE,
            COLD_LOAD_VS_DIRECT_READ,
            FLOOR_VS_DIRECT_READ,
            COLD_LOAD_VS_FLOOR,
            AT_ONCE_VS_ONE,
            AT_ONCE_VS_FLOOR,
            AT_ONCE_VS_CPU);

    private static String summaryRow(List<PfsBench.Result> rs) {
        PfsBench.Result first = rs.getFirst();
        StringBuilder row = new StringBuilder(String.format(
                Locale.ROOT,
                "%-5s %-6s",
                BenchReport.size(first.size()),
                first.blockBytes() == 0 ? "off" : BenchReport.size(first.blockBytes())));
        for (Ratio ratio : RATIOS) {
            double[] v = ratio.sorted(rs);
            row.append(
                    Double.isNaN(v[0])
                            ? String.format(Locale.ROOT, " | %22s", "-")
                            : String.format(Locale.ROOT, " | %5.2fx (%.2f-%.2fx)", median(v), v[0], v[v.length - 1]));
        }
        return row.toString();
    }

    private static String summaryJson(List<PfsBench.Result> rs) {
        PfsBench.Result first = rs.getFirst();
        StringBuilder o = new StringBuilder(String.format(
                Locale.ROOT,
                "{\"medians_of_rounds\":%d,\"size_bytes\":%d,\"block_bytes\":%d",
                rs.size(),
                first.size(),
                first.blockBytes()));
        for (Ratio ratio : RATIOS) {
            o.append(",\"").append(ratio.name()).append("\":").append(jsonNumber(median(ratio.sorted(rs))));
        }
        return o.append('}').toString();
    }

    /** The median of the sorted {@code v}: its middle value, or the mean of its two middle ones. */
    static double median(double[] v) {
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    private static String figure(double seconds) {
        return Double.isNaN(seconds) ? "-" : String.format(Locale.ROOT, "%.2f", seconds);
    }

    private static String json(PfsBench.Result r, int round) {
        var b = r.bound();
        return String.format(
                Locale.ROOT,
                "{\"round\":%d,\"size_bytes\":%d,\"block_bytes\":%d,\"flush_s\":%.3f,\"direct_write_s\":%.3f,"
                        + "\"fio_write_s\":%s,"
                        + "\"cold_load_s\":%.3f,\"direct_read_s\":%.3f,\"fio_read_s\":%s,\"consumers\":%d,"
                        + "\"concurrent_load_s\":%s,\"fill_s\":%s,\"touch_s\":%.6f,\"touch_at_once_s\":%s,"
                        + "\"cold_floor_s\":%.6f,\"concurrent_floor_s\":%s,\"warm_load_cpu_s\":%s,\"cores\":%d,"
                        + "\"concurrent_cpu_s\":%s,\"direct\":%b,\"cache_dropped\":%b}",
                round,
                r.size(),
                r.blockBytes(),
                r.flushS(),
                b.writeS(),
                jsonNumber(b.fioWriteS()),
                r.coldLoadS(),
                b.readS(),
                jsonNumber(b.fioReadS()),
                r.consumers(),
                jsonNumber(r.concurrentLoadS()),
                jsonNumber(b.fillS()),
                r.touchS(),
                jsonNumber(r.touchAtOnceS()),
                r.coldFloorS(),
                jsonNumber(r.concurrentFloorS()),
                jsonNumber(r.warmLoadCpuS()),
                r.cores(),
                jsonNumber(r.concurrentCpuS()),
                b.direct(),
                r.cacheDropped());
    }

    private static String jsonNumber(double d) {
        return Double.isNaN(d) ? "null" : String.format(Locale.ROOT, "%.6f", d);
    }
}
