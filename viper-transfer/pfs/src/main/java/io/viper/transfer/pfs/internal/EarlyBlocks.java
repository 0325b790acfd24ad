package io.viper.transfer.pfs.internal;

import io.viper.errors.IoProblems;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.PendingStore;
import io.viper.spi.StagedCheckpoint;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A version's blocks written while the producer still hashes it ({@link PendingStore}): each block named as hashed goes
 * to a {@code .tmp-*} file beside its place in the {@link BlockStore} at once, unless the store holds it already,
 * through the same {@link BlockBatch} (and as many writes in flight) that {@link BlockStore#put} uses. The blocks stay
 * temporary files, which no sweep takes for an hour ({@link PfsRepository#STALE_AFTER}), until {@link #store} hands the
 * batch to {@link PfsRepository#store}: there the manifest is written first, as ever, the blocks not written early are
 * reused or written, and all are made durable and renamed into place together. A failed early write is logged and
 * dropped with everything written early: the store then writes each block itself, and fails as a store fails.
 *
 * <p>Threads: {@link #blockHashed} from any thread, queueing only; a thread of this store's own submits the writes, so
 * that no hash worker waits for the disk; {@link #store} and {@link #close} from the producer's publishing thread.
 */
final class EarlyBlocks implements PendingStore {
    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    private static final Block END = new Block(0, 0, null);

    private final PfsRepository repository;
    private final BlockStore store;
    private final WriteHooks hooks;
    private final MemorySegment data;
    private final String name;
    /** From the hashing threads to the writer; unbounded: a version has few blocks (1 MiB each by default). */
    private final BlockingQueue<Block> queue = new LinkedBlockingQueue<>();

    private final Thread writer;
    /** Ids written early (or being written); the writer's until it ended, then the publishing thread's. */
    private final Set<ContentHash> written = new HashSet<>();

    private final BlockBatch batch;
    private long writtenBytes;
    private Throwable failure;
    private boolean ended;
    private boolean closed;

    private record Block(long offset, long length, ContentHash id) {}

    EarlyBlocks(
            PfsRepository repository,
            BlockStore store,
            WriteHooks hooks,
            String model,
            long version,
            MemorySegment data) {
        this.repository = repository;
        this.store = store;
        this.hooks = hooks;
        this.data = data;
        this.name = model + " v" + version;
        this.batch = new BlockBatch(store.dir(), true);
        this.writer =
                Thread.ofPlatform().daemon().name("viper-pfs-early-" + model).start(this::writeUntilEnd);
    }

    @Override
    public void blockHashed(long offset, long length, ContentHash id) {
        queue.add(new Block(offset, length, id));
    }

    private void writeUntilEnd() {
        while (true) {
            Block b;
            try {
                b = queue.take();
            } catch (InterruptedException e) {
                return; // not interrupted by this class; the store writes what is missing
            }
            if (b == END) {
                return;
            }
            if (failure != null || !written.add(b.id())) {
                continue;
            }
            Path file = store.pathOf(b.id());
            try {
                if (holds(file, b.length())) {
                    written.remove(b.id()); // the store reuses it (and touches it) once the manifest is written
                    continue;
                }
                hooks.beforeChunk(file, b.offset());
                batch.add(b.id(), file, data.asSlice(b.offset(), b.length()));
                writtenBytes += b.length();
            } catch (IOException | RuntimeException e) {
                failure = e;
            }
        }
    }

    /** Whether {@code file} is a block of {@code length} bytes (not a planted link): nothing to write. */
    private static boolean holds(Path file, long length) throws IOException {
        try {
            return !Files.isSymbolicLink(file)
                    && Files.size(file) == length
                    && Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return false;
        }
    }

    /** Stops taking blocks and waits for the writer to have submitted every write it took. */
    private void end() {
        if (ended) {
            return;
        }
        ended = true;
        queue.add(END);
        boolean interrupted = false;
        while (writer.isAlive()) {
            try {
                writer.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public Location store(Manifest manifest, StagedCheckpoint staged) {
        end();
        if (failure != null) {
            LOG.log(
                    Level.WARNING,
                    "{0}: writing blocks early failed ({1}); the store writes them",
                    name,
                    failure instanceof IOException io ? IoProblems.describe(io) : failure.toString());
            discard();
            return repository.store(manifest, staged);
        }
        if (staged.data().address() != data.address() || manifest.blockBytes() == 0) {
            discard(); // not the bytes begun with, or kept as a file after all: nothing early applies
            return repository.store(manifest, staged);
        }
        return repository.store(manifest, staged, this);
    }

    /** For {@link BlockStore#put}: the batch holding the blocks written early. */
    BlockBatch batch() {
        return batch;
    }

    /** For {@link BlockStore#put}: whether block {@code id} was written early (it is renamed at the commit). */
    boolean wrote(ContentHash id) {
        return written.contains(id);
    }

    /** The bytes written early. */
    long writtenBytes() {
        return writtenBytes;
    }

    private void discard() {
        written.clear();
        writtenBytes = 0;
        closeBatch();
    }

    private void closeBatch() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            batch.close();
        } catch (IOException e) {
            LOG.log(Level.WARNING, "{0}: could not remove a block written early: {1}", name, IoProblems.describe(e));
        }
    }

    @Override
    public void close() {
        end();
        closeBatch();
    }
}
