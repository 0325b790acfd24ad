package io.viper.cli;

import io.viper.ViperConfig;
import io.viper.errors.IoProblems;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperCorruptDataException;
import io.viper.errors.ViperNotFoundException;
import io.viper.format.SafetensorsWriter;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.ByteRange;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.Providers;
import io.viper.spi.TransportClient;
import io.viper.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code viper export}: writes a version of the PFS repository as a standard safetensors file, whether the repository
 * keeps it as one or as blocks, after checking every tensor's hash.
 */
@Command(
        name = "export",
        description = {
            "Write a version stored in a PFS repository as a standard safetensors file.",
            "A version kept as blocks has none on disk; every tensor is checked against its manifest before it is"
                    + " written."
        })
final class ExportCommand implements Callable<Integer> {
    // Not mixinStandardHelpOptions: picocli leaves the whole mixin out of a command that declares one of
    // its names itself (--version here), and --help then failed on the missing required options.
    @Option(
            names = {"-h", "--help"},
            usageHelp = true,
            description = "Show this help message and exit.")
    boolean help;

    @Option(names = "--pfs", required = true, paramLabel = "DIR", description = "PFS repository root")
    Path pfs;

    @Option(names = "--model", required = true, paramLabel = "NAME", description = "Model name")
    String model;

    @Option(names = "--version", paramLabel = "N", description = "Version to export (default: the newest)")
    Long version;

    @Option(
            names = "--out",
            required = true,
            paramLabel = "FILE",
            description = "The safetensors file to write (replaced if it exists)")
    Path out;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        if (!Files.isDirectory(pfs)) {
            throw new ViperConfigException("--pfs " + pfs + ": not a directory");
        }
        // A FIFO, a device or a socket: refused before the model is read, not only by the writer after.
        IoProblems.notARegularFile(out).ifPresent(problem -> {
            throw new ViperConfigException("--out " + out + ": " + problem + ", not a file");
        });
        // Before the model is read and checked, not only when it is written.
        Path parent = out.toAbsolutePath().getParent();
        if (!Files.isDirectory(parent)) {
            throw new ViperConfigException("--out " + out + ": "
                    + (Files.exists(parent) ? parent + " is not a directory" : "no directory " + parent));
        }
        ViperConfig config = ViperConfig.defaults();
        try (CheckpointRepository repo =
                        Providers.repository("file").open(pfs.toAbsolutePath().toUri(), config);
                TransportClient files = Providers.transport("file")
                        .orElseThrow(() -> new ViperConfigException("no file:// transport is installed"))
                        .openClient(config);
                Arena arena = Arena.ofConfined();
                Progress progress = new Progress(spec.commandLine().getErr(), Progress.onTerminal(), false)) {
            Manifest m = (version == null ? repo.latest(model) : repo.find(model, version))
                    .orElseThrow(() -> new ViperNotFoundException(
                            "model " + model + (version == null ? " has no version" : " v" + version + " is not stored")
                                    + " in " + pfs));
            MemorySegment data = arena.allocate(Math.max(1, m.totalBytes()), 64).asSlice(0, m.totalBytes());
            progress.stage("export " + model + " v" + m.version() + ": reading", m.totalBytes());
            files.read(
                    m,
                    m.locations().getFirst(),
                    List.of(new ByteRange(0, m.totalBytes(), 0)),
                    data,
                    (offset, length) -> progress.add(length));
            progress.stage("export " + model + " v" + m.version() + ": checking hashes", m.totalBytes());
            List<Tensor> tensors = new ArrayList<>();
            for (TensorEntry e : m.tensors()) {
                MemorySegment bytes = data.asSlice(e.info().offset(), e.info().length());
                if (!e.hash().algorithm().hash(bytes).equals(e.hash())) {
                    throw new ViperCorruptDataException(model + " v" + m.version() + " in " + pfs + ": tensor '"
                            + e.name() + "' does not match its manifest's "
                            + e.hash().algorithm().fieldName());
                }
                tensors.add(new Tensor(e.info(), bytes));
                progress.add(e.info().length());
            }
            progress.stage("export " + model + " v" + m.version() + ": writing " + out, m.totalBytes());
            long written = SafetensorsWriter.replace(
                    out, tensors, m.metadata()); // a failure leaves a file already there as it was
            progress.close();
            System.out.println("wrote " + model + " v" + m.version() + " ("
                    + m.tensors().size() + " tensors, " + written + " bytes) to " + out);
        }
        return 0;
    }
}
