package io.viper.transfer.ucx.internal;

import io.viper.manifest.Tier;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * What memory a UCX server exposes and under which scheme: {@link #HOST} ({@code ucx://}, the staging buffers in host
 * memory) or {@link #CUDA} ({@code ucx-cuda://}, a version's GPU staging buffer registered with UCX as CUDA memory, so
 * that UCX moves it between GPUs itself; host-staged versions are exposed from host memory, which such a UCX also
 * writes into GPU memory).
 *
 * @param scheme the URI scheme of the locations
 * @param tier the tier of the locations
 * @param device whether GPU staging buffers are exposed
 * @param memoryType the UCS memory type GPU staging is registered as
 */
public record UcxMemoryMode(String scheme, Tier tier, boolean device, int memoryType) {
    /** Host staging buffers on {@code ucx://}. */
    public static final UcxMemoryMode HOST =
            new UcxMemoryMode("ucx", Tier.HOST, false, UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST);
    /** GPU staging buffers on {@code ucx-cuda://}, registered as CUDA memory. */
    public static final UcxMemoryMode CUDA =
            new UcxMemoryMode("ucx-cuda", Tier.GPU, true, UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_CUDA);

    /**
     * A GPU mode under {@code scheme} with "device" memory registered as {@code memoryType}: with
     * {@code UCS_MEMORY_TYPE_HOST}, tests run the ucx-cuda code paths over a fake GPU whose device memory is host
     * memory, on machines without CUDA.
     */
    public static UcxMemoryMode deviceAs(String scheme, int memoryType) {
        return new UcxMemoryMode(scheme, CUDA.tier, true, memoryType);
    }
}
