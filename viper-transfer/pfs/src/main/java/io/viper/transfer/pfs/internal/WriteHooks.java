package io.viper.transfer.pfs.internal;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Points in {@link PfsRepository#store} where tests inject failures (a full disk mid-copy, a crash between the data
 * write and the rename, a full disk when {@code LATEST} is replaced); {@link #beforeChunk} is also called before each
 * new block the {@link BlockStore} writes, and {@link #beforeBlockDelete} before each block a sweep deletes. Production
 * code uses {@link #NONE}.
 */
interface WriteHooks {
    /** No injected behaviour. */
    WriteHooks NONE = new WriteHooks() {};

    /** Called before each chunk of the data section is written, at data offset {@code position}. */
    default void beforeChunk(Path file, long position) throws IOException {}

    /** Called when the temporary version directory is complete and fsynced, before it is renamed into place. */
    default void beforeCommit(Path temporaryDirectory) throws IOException {}

    /** Called before the block store deletes a block no retained version refers to (or a leftover of a block write). */
    default void beforeBlockDelete(Path block) throws IOException {}

    /** Called after the version directory was renamed into place, before {@code LATEST} is replaced. */
    default void beforeLatest(Path modelDirectory) throws IOException {}
}
