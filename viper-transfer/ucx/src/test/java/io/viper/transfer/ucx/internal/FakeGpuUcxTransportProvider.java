package io.viper.transfer.ucx.internal;

import java.util.Optional;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * The ucx-cuda transport's code ({@link UcxMemoryMode} GPU mode) under the scheme {@code ucx-fakegpu}, with "device"
 * memory registered as host memory: over {@link io.viper.testing.FakeGpuProvider}, whose device pointers are host
 * addresses, it runs the GPU-mode server and client with real UCX on machines without CUDA. Registered for tests only.
 */
public final class FakeGpuUcxTransportProvider extends UcxProviderBase {
    public static final String SCHEME = "ucx-fakegpu";
    static final UcxMemoryMode MODE = UcxMemoryMode.deviceAs(SCHEME, UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST);

    public FakeGpuUcxTransportProvider() {
        super(MODE, 5);
    }

    @Override
    public Optional<String> unavailableReason() {
        return UcxNative.unavailableReason();
    }
}
