package io.viper.djl;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import io.viper.ModelLease;
import io.viper.Snapshot;
import io.viper.djl.internal.DjlTypes;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The parameters of a DJL {@link Block} as Viper publishes them: one tensor per parameter, named as
 * {@link Block#getParameters()} names it (e.g. {@code 01Linear_weight}), in that order. A producer publishes them with
 * {@link #snapshot}; a consumer copies a leased version back into a block of the same structure with {@link #load}.
 *
 * <p>Threads: {@code snapshot} is described on the training thread (the producer's {@code step} or {@code publish});
 * {@code load} runs on the caller's thread, while nothing else uses the block.
 */
public final class BlockParameters {
    private BlockParameters() {}

    /**
     * The block's parameters as a snapshot: described only when the producer publishes, each read straight from the
     * engine's memory (a direct view where the engine gives one, as PyTorch does for CPU tensors) during the producer's
     * copy into staging.
     */
    public static Snapshot snapshot(Block block) {
        return sink -> {
            for (Pair<String, Parameter> p : block.getParameters()) {
                NDArray a = array(p);
                ByteBuffer bytes = a.toByteBuffer(true);
                sink.add(
                        p.getKey(),
                        DjlTypes.toViper(a.getDataType(), p.getKey()),
                        a.getShape().getShape(),
                        MemorySegment.ofBuffer(bytes));
            }
        };
    }

    /**
     * Copies every parameter of {@code block} from the tensor of the same name in {@code lease}; the block may be used
     * after the lease is closed. The block must be initialized (its shapes known).
     *
     * @throws io.viper.errors.ViperNotFoundException when the lease lacks one of the block's parameters
     * @throws ViperFormatException when a tensor's type or shape differs from the parameter's
     * @throws ViperConfigException when the block is not initialized
     */
    public static void load(ModelLease lease, Block block) {
        if (!block.isInitialized()) {
            throw new ViperConfigException(
                    "the block is not initialized: call block.initialize(manager, dataType, inputShapes) "
                            + "before loading " + lease.manifest().model() + " v" + lease.version() + " into it");
        }
        String source = lease.manifest().model() + " v" + lease.version();
        for (Pair<String, Parameter> p : block.getParameters()) {
            NDArray a = array(p);
            Tensor t = lease.tensor(p.getKey());
            DType expected = DjlTypes.toViper(a.getDataType(), p.getKey());
            if (t.dtype() != expected || !Arrays.equals(t.shape(), a.getShape().getShape())) {
                throw new ViperFormatException(
                        source,
                        "tensor " + t.name() + " is " + t.dtype() + Arrays.toString(t.shape())
                                + " but the block's parameter is " + expected
                                + Arrays.toString(a.getShape().getShape()));
            }
            // A buffer of the block's own: an engine may keep the memory it is given rather than copy it.
            ByteBuffer copy = ByteBuffer.allocateDirect((int) t.byteSize()).order(ByteOrder.nativeOrder());
            MemorySegment.ofBuffer(copy).copyFrom(t.data());
            a.set(copy);
        }
    }

    /** {@link #load(ModelLease, Block)} into {@code model}'s block. */
    public static void load(ModelLease lease, Model model) {
        Block block = model.getBlock();
        if (block == null) {
            throw new ViperConfigException(
                    "model " + model.getName() + " has no block: set one with model.setBlock(...) first");
        }
        load(lease, block);
    }

    private static NDArray array(Pair<String, Parameter> p) {
        if (!p.getValue().isInitialized()) {
            throw new ViperConfigException("parameter " + p.getKey() + " is not initialized");
        }
        return p.getValue().getArray();
    }
}
