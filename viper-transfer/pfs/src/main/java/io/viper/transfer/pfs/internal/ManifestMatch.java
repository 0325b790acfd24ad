package io.viper.transfer.pfs.internal;

import io.viper.errors.ViperFormatException;
import io.viper.format.SafetensorsHeader;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.tensor.TensorInfo;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Checks that a safetensors file of the PFS repository holds exactly the tensors its manifest announces (names, dtypes,
 * shapes, offsets, lengths and the size of the data section). The file itself is validated by viper-core's
 * {@link SafetensorsHeader#parse}, the parser {@code viper inspect} and {@code viper publish} use; this class adds only
 * the comparison with the manifest. Stateless.
 */
final class ManifestMatch {
    private ManifestMatch() {}

    /**
     * Throws a {@link ViperFormatException} naming {@code source} when {@code header} does not describe
     * {@code manifest}.
     */
    static void check(SafetensorsHeader header, Manifest manifest, String source) {
        String what = "does not match the manifest of " + manifest.model() + " v" + manifest.version() + ": ";
        Map<String, TensorInfo> byName = new HashMap<>();
        for (TensorInfo t : header.tensors()) {
            byName.put(t.name(), t);
        }
        for (TensorEntry e : manifest.tensors()) {
            TensorInfo expected = e.info();
            TensorInfo actual = byName.get(expected.name());
            if (actual == null) {
                throw new ViperFormatException(
                        source, what + "tensor '" + expected.name() + "' is missing from the file");
            }
            if (!actual.equals(expected)) {
                throw new ViperFormatException(
                        source,
                        what + "tensor '" + expected.name() + "' is " + describe(actual) + " in the file but "
                                + describe(expected) + " in the manifest");
            }
        }
        if (header.tensors().size() != manifest.tensors().size()) {
            throw new ViperFormatException(
                    source,
                    what + "the file holds " + header.tensors().size() + " tensors, the manifest "
                            + manifest.tensors().size());
        }
        if (header.dataBytes() != manifest.totalBytes()) {
            throw new ViperFormatException(
                    source,
                    what + "data section of " + header.dataBytes() + " bytes, manifest says " + manifest.totalBytes());
        }
    }

    private static String describe(TensorInfo t) {
        return t.dtype() + Arrays.toString(t.shape()) + " at bytes [" + t.offset() + ", " + (t.offset() + t.length())
                + ")";
    }
}
