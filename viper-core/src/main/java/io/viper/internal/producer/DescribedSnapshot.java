package io.viper.internal.producer;

import io.viper.Snapshot;
import io.viper.errors.ViperConfigException;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SequencedMap;
import java.util.Set;

/**
 * What a snapshot described, refused one tensor at a time as it comes: the tensors to stage, per tensor the bounds of
 * its declared {@link Snapshot.Changes} (null where the training code did not say), and the aliases, second names of a
 * stored tensor. A tensor added again with the same memory, dtype and shape as one before it (tied weights: the same
 * array or segment under two names) becomes an alias of the first, as does a name given by
 * {@link Snapshot.TensorSink#alias}; either is stored once and announced as a metadata entry (alias to tensor), which
 * consumers resolve ({@link io.viper.tensor.Checkpoint#tensor}).
 *
 * <p>Training thread only, during one {@link Stager#stage}.
 */
final class DescribedSnapshot implements Snapshot.TensorSink {
    /** The memory a host tensor was read from: the same key means the same bytes under the same type and shape. */
    private record SameMemory(Object base, long address, long bytes, DType dtype, List<Long> shape) {}

    private final GpuStaging gpu;
    private final Set<String> metadataKeys;
    private final List<SnapshotTensor> tensors = new ArrayList<>();
    private final List<long[]> declared = new ArrayList<>();
    private final SequencedMap<String, String> aliases = new LinkedHashMap<>();
    private final Map<String, SnapshotTensor> byName = new HashMap<>();
    private final Set<String> names = new HashSet<>();
    private final Map<SameMemory, String> byMemory = new HashMap<>();

    /** @param metadataKeys the keys of the version's metadata, which an alias's name must not take */
    DescribedSnapshot(GpuStaging gpu, Set<String> metadataKeys) {
        this.gpu = gpu;
        this.metadataKeys = metadataKeys;
    }

    List<SnapshotTensor> tensors() {
        return tensors;
    }

    List<long[]> declared() {
        return declared;
    }

    /** Alias name to the stored tensor's name, in the order they were given. */
    SequencedMap<String, String> aliases() {
        return aliases;
    }

    @Override
    public void add(String name, DType dtype, long[] shape, MemorySegment data, Snapshot.Changes changed) {
        Objects.requireNonNull(changed, "changes of tensor " + name);
        boolean stored = store(name, dtype, shape, data);
        long[] bounds = changed.bounds();
        long size = data.byteSize();
        for (int i = 0; i < bounds.length; i += 2) {
            if (bounds[i + 1] > size) {
                throw new ViperConfigException("tensor " + name + ": changed range [" + bounds[i] + ", " + bounds[i + 1]
                        + ") ends past its " + size + " bytes");
            }
        }
        if (stored) {
            declared.set(declared.size() - 1, bounds);
        }
    }

    @Override
    public void add(String name, DType dtype, long[] shape, MemorySegment data) {
        store(name, dtype, shape, data);
    }

    /** Adds a tensor read from {@code data}, or an alias where the same memory came before; true when stored. */
    private boolean store(String name, DType dtype, long[] shape, MemorySegment data) {
        Objects.requireNonNull(data, "data of tensor " + name);
        SnapshotTensor s = new SnapshotTensor(
                checkName(name), Objects.requireNonNull(dtype, "dtype of " + name), shape.clone(), data, null, 0, -1);
        if (s.byteSize() != data.byteSize()) {
            throw new ViperConfigException("tensor " + name + ": " + dtype + " x " + Arrays.toString(shape) + " needs "
                    + s.byteSize() + " bytes but the segment has " + data.byteSize());
        }
        // Native memory is the same only within one lifetime: an address freed and given to another arena is not.
        Object base = data.heapBase().orElse(data.scope());
        return storeOrAlias(s, new SameMemory(base, data.address(), data.byteSize(), dtype, boxed(shape)));
    }

    @Override
    public void addFloats(String name, long[] shape, float[] values) {
        Objects.requireNonNull(values, "values of tensor " + name);
        SnapshotTensor s = new SnapshotTensor(checkName(name), DType.F32, shape.clone(), null, values, 0, -1);
        if (TensorInfo.elementCount(shape) != values.length) {
            throw new ViperConfigException("tensor " + name + ": shape " + Arrays.toString(shape) + " holds "
                    + TensorInfo.elementCount(shape) + " elements but " + values.length + " floats were given");
        }
        storeOrAlias(s, new SameMemory(values, 0, (long) values.length * Float.BYTES, DType.F32, boxed(shape)));
    }

    @Override
    public void addDevice(String name, DType dtype, long[] shape, long devicePointer, int device) {
        gpu.check(name, devicePointer, device, tensors);
        SnapshotTensor s = new SnapshotTensor(
                checkName(name),
                Objects.requireNonNull(dtype, "dtype of " + name),
                shape.clone(),
                null,
                null,
                devicePointer,
                device);
        s.byteSize(); // refuses a shape that overflows now, not on the background thread
        keep(s);
    }

    @Override
    public void alias(String name, String target) {
        checkName(name);
        SnapshotTensor t = byName.get(target);
        if (t == null) {
            String what = aliases.containsKey(target)
                    ? "is itself an alias of '" + aliases.get(target) + "': name the tensor (no chains)"
                    : "is not a tensor added before it";
            throw new ViperConfigException("alias '" + name + "': its target '" + target + "' " + what);
        }
        addAlias(name, target);
    }

    private boolean storeOrAlias(SnapshotTensor s, SameMemory memory) {
        String first = s.byteSize() == 0 ? null : byMemory.putIfAbsent(memory, s.name());
        if (first != null) {
            addAlias(s.name(), first);
            return false;
        }
        keep(s);
        return true;
    }

    private void addAlias(String name, String target) {
        if (metadataKeys.contains(name)) {
            throw new ViperConfigException("alias '" + name + "' of tensor '" + target
                    + "': the metadata has an entry of that name, which would shadow it");
        }
        aliases.put(name, target);
    }

    private void keep(SnapshotTensor s) {
        tensors.add(s);
        byName.put(s.name(), s);
        declared.add(null);
    }

    private String checkName(String name) {
        if (name == null || name.isEmpty()) {
            throw new ViperConfigException("tensor name must not be empty");
        }
        if (!names.add(name)) {
            throw new ViperConfigException("duplicate tensor name '" + name + "' in snapshot");
        }
        return name;
    }

    private static List<Long> boxed(long[] shape) {
        return Arrays.stream(shape).boxed().toList();
    }
}
