package io.viper.predictor;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * Keeps OpenBLAS, which Smile calls for its LAPACK routines, on the calling thread. The matrices here are tiny (at most
 * 1,000 x 3); OpenBLAS's worker threads only add hand-offs, and on a busy machine waiting for them costs far more than
 * the work.
 */
final class NativeBlas {
    private static volatile boolean done;

    private NativeBlas() {}

    /** Calls {@code openblas_set_num_threads(1)} once, if the library is there; otherwise does nothing. */
    @SuppressWarnings("restricted")
    static void singleThreaded() {
        if (done) {
            return;
        }
        synchronized (NativeBlas.class) {
            if (done) {
                return;
            }
            done = true;
            try {
                String lib = System.mapLibraryName(System.getProperty("smile.lib.lapack", "openblas"));
                SymbolLookup lookup = SymbolLookup.libraryLookup(lib, Arena.global());
                Optional<MemorySegment> fn = lookup.find("openblas_set_num_threads");
                if (fn.isPresent()) {
                    MethodHandle h = Linker.nativeLinker()
                            .downcallHandle(fn.get(), FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT));
                    h.invokeExact(1);
                }
            } catch (Throwable e) {
                // no OpenBLAS, or native access refused: Smile reports the former when it is used
            }
        }
    }
}
