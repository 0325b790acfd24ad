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
 * dropped with everything written early: the store then writes each block itself, and fails as a store fails. The
 * retention of older versions, and the sweep of the blocks only they had, run in {@link #close}, after the producer
 * announced the version: a consumer does not wait for the deletes.
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
    private final String model;
    private final String name;
    /** Whether blocks are written early: the data may be handed to the I/O threads. */
    private final boolean writeEarly;
    /** From the hashing threads to the writer; unbounded: a version has few blocks (1 MiB each by default). */
    private final BlockingQueue<Block> queue = new LinkedBlockingQueue<>();
    /** Ids written early (or being written); the writer's until it ended, then the publishing thread's. */
    private final Set<ContentHash> written = new HashSet<>();

    /** Started with the first block named (a version kept as a file names none); guarded by {@code this}. */
    private Thread writer;
    /** Made with the first block written (its bounce buffers are 16 MiB); guarded by {@code this}. */
    private BlockBatch batch;

    private long writtenBytes;
    private Throwable failure;
    /** Guarded by {@code this}. */
    private boolean ended;

    private boolean closed;
    /** Whether the version was stored: its close runs the retention that store left. */
    private boolean retentionDue;

    private record Block(long offset, long length, ContentHash id) {}

    /**
     * @param writeEarly false where the data may not be handed to other threads (a confined arena): nothing is written
     *     before {@link #store}
     */
    EarlyBlocks(
            PfsRepository repository,
            BlockStore store,
            WriteHooks hooks,
            String model,
            long version,
            MemorySegment data,
            boolean writeEarly) {
        this.repository = repository;
        this.store = store;
        this.hooks = hooks;
        this.data = data;
        this.model = model;
        this.name = model + " v" + version;
        this.writeEarly = writeEarly;
    }

    @Override
    public void blockHashed(long offset, long length, ContentHash id) {
        if (!writeEarly) {
            return;
        }
        synchronized (this) {
            if (ended) {
                return;
            }
            if (writer == null) {
                writer = Thread.ofPlatform()
                        .daemon()
                        .name("viper-pfs-early-" + model)
                        .start(this::writeUntilEnd);
            }
        }
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
                if (BlockStore.holds(file, b.length())) {
                    written.remove(b.id()); // the store reuses it (and touches it) once the manifest is written
                    continue;
                }
                hooks.beforeChunk(file, b.offset());
                batch().add(b.id(), file, data.asSlice(b.offset(), b.length()));
                writtenBytes += b.length();
            } catch (IOException | RuntimeException e) {
                failure = e;
            }
        }
    }

    /** Stops taking blocks and waits for the writer to have submitted every write it took. */
    private void end() {
        Thread started;
        synchronized (this) {
            if (ended) {
                return;
            }
            ended = true;
            started = writer;
        }
        if (started == null) {
            return;
        }
        queue.add(END);
        boolean interrupted = false;
        while (started.isAlive()) {
            try {
                started.join();
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
        EarlyBlocks early = this;
        if (failure != null) {
            LOG.log(
                    Level.WARNING,
                    "{0}: writing blocks early failed ({1}); the store writes them",
                    name,
                    failure instanceof IOException io ? IoProblems.describe(io) : failure.toString());
            early = null;
        } else if (staged.data().address() != data.address() || manifest.blockBytes() == 0) {
            early = null; // not the bytes begun with, or kept as a file after all: nothing early applies
        }
        if (early == null) {
            discard();
        }
        Location stored = repository.store(manifest, staged, early, false);
        retentionDue = true;
        return stored;
    }

    /** The batch holding the blocks written early, which {@link BlockStore#put} adds the rest to and commits. */
    synchronized BlockBatch batch() {
        if (batch == null) {
            batch = new BlockBatch(store.dir(), writeEarly);
        }
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
        BlockBatch made;
        synchronized (this) {
            made = batch;
            batch = null;
        }
        if (made == null) {
            return;
        }
        try {
            made.close();
        } catch (IOException e) {
            LOG.log(Level.WARNING, "{0}: could not remove a block written early: {1}", name, IoProblems.describe(e));
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        end();
        closeBatch();
        if (retentionDue) {
            repository.retain(model); // after the announcement: it does not wait for the deletes
        }
    }
}
