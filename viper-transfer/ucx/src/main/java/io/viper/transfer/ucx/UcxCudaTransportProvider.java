package io.viper.transfer.ucx;

import io.viper.spi.Providers;
import io.viper.transfer.ucx.internal.UcxMemoryMode;
import io.viper.transfer.ucx.internal.UcxMemoryTypes;
import io.viper.transfer.ucx.internal.UcxNative;
import io.viper.transfer.ucx.internal.UcxProviderBase;
import java.util.Optional;

/**
 * The {@code ucx-cuda://host:port} transport, GPU tier: where the installed UCX was built with CUDA support (it reports
 * the CUDA memory type), UCX moves GPU memory itself. The producer registers each version's GPU staging buffer with UCX
 * as CUDA memory, in place (a host-staged version is registered in host memory); the consumer GETs straight into its
 * own GPU buffer, choosing CUDA IPC, GPUDirect RDMA or UCX's staged pipeline as the hardware allows. Leases, timeouts
 * and settings are those of {@link UcxTransportProvider}.
 *
 * <p>Preferred after {@code cuda-ipc} (same node) and before {@code cuda-pipe}, Viper's own staged pipeline for UCX
 * builds without CUDA. {@link #unavailableReason()} says which of CUDA, UCX and UCX's CUDA support is missing; Debian's
 * UCX 1.13 packages have no CUDA support, so there this transport is skipped and {@code cuda-pipe} carries GPU data
 * across nodes.
 *
 * <p>Cheap to construct; thread-safe.
 */
public final class UcxCudaTransportProvider extends UcxProviderBase {
    /** Used by ServiceLoader; priority 5: after cuda-ipc (0), before cuda-pipe (10). */
    public UcxCudaTransportProvider() {
        super(UcxMemoryMode.CUDA, 5);
    }

    /** Which of CUDA, UCX and UCX's CUDA support is missing here, in that order. */
    @Override
    public Optional<String> unavailableReason() {
        Optional<String> cuda = Providers.gpuUnavailableReason();
        if (cuda.isPresent()) {
            return cuda;
        }
        Optional<String> ucx = UcxNative.unavailableReason();
        if (ucx.isPresent()) {
            return Optional.of("UCX not usable: " + ucx.get());
        }
        if (!UcxMemoryTypes.cuda()) {
            return Optional.of("this UCX cannot move CUDA memory (" + UcxMemoryTypes.describe()
                    + "); cuda-pipe:// carries GPU data instead");
        }
        return Optional.empty();
    }
}
