package io.viper.transfer.cuda.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The one-line reason taken from jcuda's multi-line loader message. */
class CudaProbeTest {
    @Test
    void missingDriverLibraryIsNamed() {
        UnsatisfiedLinkError e =
                new UnsatisfiedLinkError("Error while loading native library \"JCudaDriver-12.6.0-linux-x86_64\"\n"
                        + "Operating system name: Linux\n---(start of nested stack traces)---\n"
                        + "java.lang.UnsatisfiedLinkError: /tmp/libJCudaDriver-12.6.0-linux-x86_64.so: libcuda.so.1:"
                        + " cannot open shared object file: No such file or directory\n"
                        + "\tat java.base/jdk.internal.loader.NativeLibraries.load(Native Method)\n");
        assertEquals(
                "libcuda.so.1: cannot open shared object file: No such file or directory (jcuda 12.6.0 needs the"
                        + " NVIDIA driver library)",
                Cuda.linkDetail(e));
        assertEquals(
                "UnsatisfiedLinkError: something else",
                Cuda.linkDetail(new UnsatisfiedLinkError("something else\nmore")));
    }
}
