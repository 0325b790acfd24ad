package io.viper.transfer.ucx.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The one-line reasons reported when UCX does not load. */
class UcxNativeTest {
    @Test
    void missingLibucpNamesTheLibraryAndThePackage() {
        var e = new UnsatisfiedLinkError(
                "Native code library failed to load: libjucx.so. /tmp/jucx1/libjucx.so: libucp.so.0: "
                        + "cannot open shared object file: No such file or directory");
        assertEquals("UCX libraries not found (libucp.so.0): install libucx0", UcxNative.describe(e));
        var later = new NoClassDefFoundError("Could not initialize class org.openucx.jucx.ucp.UcpContext");
        later.initCause(new ExceptionInInitializerError(
                "Exception java.lang.UnsatisfiedLinkError: libuct.so.0: cannot open shared object file"));
        assertEquals("UCX libraries not found (libuct.so.0): install libucx0", UcxNative.describe(later));
    }

    @Test
    void otherFailuresAreOneLine() {
        String r = UcxNative.describe(new UnsatisfiedLinkError("Failed to create temp directory\n  somewhere"));
        assertTrue(r.startsWith("UCX native library did not load: ") && !r.contains("\n"), r);
        r = UcxNative.describe(new RuntimeException("No such device"));
        assertEquals("UCX could not create a context: No such device", r);
    }
}
