package io.viper.transfer.pfs.internal;

import io.viper.errors.IoProblems;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperCorruptDataException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.errors.ViperNotFoundException;
import io.viper.hash.ContentHash;
import io.viper.manifest.BlockList;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.TensorEntry;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads byte ranges of a version the PFS repository keeps as blocks ({@link BlockStore}): the version directory holds
 * only its manifest, which must list exactly the tensors and blocks of the manifest asked for; each range is read from
 * the files of the blocks it covers, straight into the destination (positional reads, no intermediate buffer), up to
 * {@link DirectIo#READS_IN_FLIGHT} blocks at once from the I/O threads, the kernel reading
 * {@link DirectIo#READ_AHEAD_BYTES} of the blocks to come ahead of them, each reported to the caller's arrivals as it
 * lands. A missing version or block is a {@link ViperNotFoundException} (the consumer moves to its next location); a
 * block file shorter than its block a {@link ViperCorruptDataException}. One read at a time per instance, from one
 * caller thread.
 */
final class BlockReader implements AutoCloseable {
    private final Manifest manifest;
    private final Path root;
    private final Path versionDir;
    /** Per block in data order: where it starts in the data section, its length and id. */
    private final long[] start;

    private final long[] length;
    private final ContentHash[] id;

    /**
     * @param versionFile the location's path: {@code <root>/<model>/<version>/model.safetensors}, which for a version
     *     kept as blocks does not exist
     */
    BlockReader(Manifest manifest, Path versionFile) {
        this.manifest = manifest;
        this.versionDir = versionFile.getParent();
        this.root = versionDir.getParent().getParent();
        checkStored();
        List<long[]> blocks = new ArrayList<>();
        List<ContentHash> ids = new ArrayList<>();
        for (TensorEntry e : manifest.tensors()) {
            BlockList b = e.blocks();
            for (int j = 0; j < b.ids().size(); j++) {
                blocks.add(new long[] {
                    e.info().offset() + b.start(j), b.length(j, e.info().length())
                });
                ids.add(b.ids().get(j));
            }
        }
        start = blocks.stream().mapToLong(b -> b[0]).toArray();
        length = blocks.stream().mapToLong(b -> b[1]).toArray();
        id = ids.toArray(ContentHash[]::new);
    }

    /** The version directory's manifest must describe the same tensors and blocks as the one asked for. */
    private void checkStored() {
        Path file = versionDir.resolve(PfsRepository.MANIFEST_FILE);
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new ViperNotFoundException(
                    versionDir + ": not found: " + manifest.model() + " v" + manifest.version()
                            + " was deleted by retention or is not stored yet",
                    e);
        } catch (IOException e) {
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER, file + ": cannot read: " + IoProblems.describe(e), e);
        }
        Manifest stored = ManifestCodec.decode(bytes, file.toString());
        if (!stored.tensors().equals(manifest.tensors())) {
            throw new ViperFormatException(
                    file.toString(),
                    "does not match the manifest of " + manifest.model() + " v" + manifest.version()
                            + ": other tensors or blocks");
        }
    }

    /**
     * Copies {@code ranges} of the data section into {@code destination}, telling {@code arrivals} of each piece read.
     */
    void read(List<ByteRange> ranges, MemorySegment destination, TransportClient.Arrivals arrivals) {
        TransportClient.Arrivals serial = ParallelReader.serialized(arrivals);
        List<Piece> pieces = new ArrayList<>();
        for (ByteRange r : ranges) {
            long end = r.sourceOffset() + r.length();
            for (int b = firstEndingAfter(r.sourceOffset()); b < start.length && start[b] < end; b++) {
                long from = Math.max(r.sourceOffset(), start[b]);
                long to = Math.min(end, start[b] + length[b]);
                long at = r.destinationOffset() + (from - r.sourceOffset());
                pieces.add(new Piece(b, from - start[b], destination.asSlice(at, to - from), at));
            }
        }
        try (InFlight inFlight = new InFlight(DirectIo.READS_IN_FLIGHT, InFlight.parallelFor(destination))) {
            int ahead = 0; // pieces[0, ahead) are handed to the kernel's readahead
            long aheadBytes = 0; // their bytes less those of the pieces submitted
            for (Piece p : pieces) {
                for (; ahead < pieces.size() && aheadBytes < DirectIo.READ_AHEAD_BYTES; ahead++) {
                    Piece next = pieces.get(ahead);
                    FileDescriptors.readAhead(
                            file(next.block()), next.position(), next.into().byteSize());
                    aheadBytes += next.into().byteSize();
                }
                aheadBytes -= p.into().byteSize();
                inFlight.submit(() -> {
                    readBlock(p.block(), p.position(), p.into());
                    serial.arrived(p.at(), p.into().byteSize());
                });
            }
            inFlight.await();
        } catch (IOException e) {
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER,
                    versionDir + ": cannot read the blocks of " + manifest.model() + " v" + manifest.version() + ": "
                            + IoProblems.describe(e),
                    e);
        }
    }

    /**
     * A part of block {@code block} from {@code position}, read into {@code into}, at {@code at} in the destination.
     */
    private record Piece(int block, long position, MemorySegment into, long at) {}

    private int firstEndingAfter(long pos) {
        int lo = 0;
        int hi = start.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (start[mid] + length[mid] <= pos) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    private void readBlock(int b, long position, MemorySegment into) {
        Path file = file(b);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buf = into.asByteBuffer();
            long pos = position;
            while (buf.hasRemaining()) {
                int n = ch.read(buf, pos);
                if (n < 0) {
                    throw new ViperCorruptDataException(file + ": block of " + manifest.model() + " v"
                            + manifest.version() + " ends after " + pos + " bytes, before its " + length[b]);
                }
                pos += n;
            }
        } catch (NoSuchFileException e) {
            throw new ViperNotFoundException(
                    file + ": block " + id[b] + " of " + manifest.model() + " v" + manifest.version()
                            + " is missing from the block store",
                    e);
        } catch (IOException e) {
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER, file + ": cannot read: " + IoProblems.describe(e), e);
        }
    }

    /** How many blocks the version has, in data order. */
    int blocks() {
        return start.length;
    }

    /** Where block {@code b} starts in the data section. */
    long start(int b) {
        return start[b];
    }

    /** Block {@code b}'s length. */
    long length(int b) {
        return length[b];
    }

    /** Block {@code b}'s file in the block store. */
    Path file(int b) {
        return BlockStore.pathOf(root, id[b]);
    }

    /** What to name in errors: the version and where it is kept. */
    String describe() {
        return versionDir + " (" + manifest.model() + " v" + manifest.version() + ")";
    }

    /** Nothing to release: each block's file is open only while it is read. */
    @Override
    public void close() {}
}
