package io.viper.transfer.ucx.internal;

import java.util.ArrayList;
import java.util.List;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * Which memory types the installed UCX can move, as its context reports them ({@code ucp_context_query} through jucx's
 * {@link UcpContext#getMemoryTypesMask()}). When CUDA is among them, a UCX transport could move GPU memory directly
 * between nodes; otherwise GPU data crosses nodes through {@code cuda-pipe}'s staged pipeline. Probed once; never
 * throws.
 */
public final class UcxMemoryTypes {
    private static volatile String description;
    private static volatile boolean cuda;

    private UcxMemoryTypes() {}

    /** Whether the UCX here reports CUDA memory support. */
    public static boolean cuda() {
        describe();
        return cuda;
    }

    /** One line: the memory types UCX reports, or why UCX could not be asked. */
    public static synchronized String describe() {
        if (description == null) {
            try (UcpContext ctx =
                    new UcpContext(new UcpParams().requestRmaFeature().requestTagFeature())) {
                long mask = ctx.getMemoryTypesMask();
                List<String> types = new ArrayList<>();
                add(types, mask, UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST, "host");
                add(types, mask, UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_CUDA, "cuda");
                add(types, mask, UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_CUDA_MANAGED, "cuda-managed");
                add(types, mask, UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_ROCM, "rocm");
                cuda = (mask & (1L << UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_CUDA)) != 0;
                description = "UCX memory types: " + String.join(", ", types);
            } catch (Throwable t) {
                cuda = false;
                description =
                        "UCX not usable: " + UcxNative.oneLine(t.getClass().getSimpleName() + ": " + t.getMessage());
            }
        }
        return description;
    }

    private static void add(List<String> out, long mask, int type, String name) {
        if ((mask & (1L << type)) != 0) {
            out.add(name);
        }
    }
}
