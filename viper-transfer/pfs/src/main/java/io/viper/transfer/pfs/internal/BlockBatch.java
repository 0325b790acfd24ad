package io.viper.transfer.pfs.internal;

import io.viper.hash.ContentHash;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The new blocks of one store, written as the {@link BlockStore}'s crash protocol wants (durable before their names
 * appear) with as few syncs as it allows: each block goes to a {@code .tmp-*} file beside its name, from the I/O
 * threads, {@link DirectIo#BLOCKS_IN_FLIGHT} at once ({@link #add}); {@link #commit} then makes them all durable at
 * once ({@link SyncFs}: one {@code syncfs}; where it is missing, an {@code fsync} per file, in parallel), renames each
 * into place, and fsyncs the directories that gained one. {@link #close} deletes the temporary files of blocks not
 * renamed (a failed store leaves none behind). One caller thread.
 */
final class BlockBatch implements AutoCloseable {
    private static final String TMP_PREFIX = ".tmp-";
    /** What each write in flight copies a block that is not aligned for a direct write through, at most. */
    private static final int BOUNCE_BYTES = 1 << 20;

    private final Path storeDir;
    private final Arena arena = Arena.ofShared();
    private final InFlight inFlight;
    private final BlockingQueue<MemorySegment> bounces = new ArrayBlockingQueue<>(DirectIo.BLOCKS_IN_FLIGHT);
    /** Blocks written, in the order added; each renamed once committed. */
    private final List<Pending> pending = new ArrayList<>();
    /** The store's directory and the prefixes known to be directories in this batch ({@link #ensure}). */
    private final Set<Path> ensured = ConcurrentHashMap.newKeySet();

    private record Pending(ContentHash id, Path file, Path tmp) {}

    /**
     * A batch of blocks for the store in {@code storeDir} ({@code <root>/.blocks}); written on the caller's thread
     * unless {@code parallel} (the staged memory is confined to it).
     */
    BlockBatch(Path storeDir, boolean parallel) {
        this.storeDir = storeDir;
        this.inFlight = new InFlight(DirectIo.BLOCKS_IN_FLIGHT, parallel);
        for (int i = 0; i < DirectIo.BLOCKS_IN_FLIGHT; i++) {
            bounces.add(arena.allocate(BOUNCE_BYTES, DirectIo.MAX_ALIGNMENT));
        }
    }

    /** Starts writing block {@code id}, {@code bytes}, to a temporary file beside {@code file}, its name. */
    void add(ContentHash id, Path file, MemorySegment bytes) throws IOException {
        Path tmp = file.resolveSibling(TMP_PREFIX + file.getFileName() + "-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE));
        pending.add(new Pending(id, file, tmp));
        inFlight.submit(() -> {
            ensure(file.getParent());
            MemorySegment bounce = bounces.poll(); // one per write in flight: InFlight bounds them
            try (DirectIo.Target target = DirectIo.createNew(tmp)) {
                ParallelWriter.writeWhole(target, bytes, bounce);
            } finally {
                if (bounce != null) {
                    bounces.add(bounce);
                }
            }
        });
    }

    /**
     * Makes {@code prefix} and the store's directory above it directories, once per batch: a {@code mkdir} per block
     * locks the directory above for every block the I/O threads write. The store's directory, when this makes it, is
     * marked to spread its prefixes ({@link TopDirectory}) before any is made. Both are refused when planted as links.
     */
    private void ensure(Path prefix) throws IOException {
        if (ensured.contains(prefix)) {
            return;
        }
        synchronized (ensured) {
            if (!ensured.contains(storeDir)) {
                if (DurableFiles.ensureDirectory(storeDir)) {
                    TopDirectory.mark(storeDir);
                }
                ensured.add(storeDir);
            }
        }
        DurableFiles.ensureDirectory(prefix);
        ensured.add(prefix);
    }

    /**
     * Makes every block added durable, then visible under its name, then its directory entry durable; {@code fresh}
     * receives each with its modification time.
     */
    void commit(Map<ContentHash, FileTime> fresh) throws IOException {
        inFlight.await();
        if (pending.isEmpty()) {
            return;
        }
        if (!SyncFs.sync(storeDir)) {
            for (Pending p : pending) {
                inFlight.submit(() -> {
                    try (FileChannel ch = FileChannel.open(p.tmp(), StandardOpenOption.WRITE)) {
                        ch.force(true);
                    }
                });
            }
            inFlight.await();
        }
        Set<Path> dirty = ConcurrentHashMap.newKeySet();
        for (Pending p : pending) {
            inFlight.submit(() -> {
                Files.move(p.tmp(), p.file(), StandardCopyOption.ATOMIC_MOVE);
                FileTime time = Files.getLastModifiedTime(p.file());
                synchronized (fresh) {
                    fresh.put(p.id(), time);
                }
                dirty.add(p.file().getParent());
            });
        }
        inFlight.await();
        for (Path d : dirty) {
            inFlight.submit(() -> DurableFiles.fsyncDirectory(d));
        }
        inFlight.await();
        DurableFiles.fsyncDirectory(storeDir);
    }

    /** Waits for the writes still running and deletes what was written but not renamed. */
    @Override
    public void close() throws IOException {
        inFlight.close();
        try {
            for (Pending p : pending) {
                Files.deleteIfExists(p.tmp());
            }
        } finally {
            arena.close();
        }
    }
}
