package io.viper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.manifest.Tier;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@link TransferPath}: one name per path, the tools' older names as aliases, anything else refused. */
class TransferPathTest {
    @Test
    void eachPathIsFoundByItsNameInAnyCaseAndWithBlanks() {
        for (TransferPath p : TransferPath.values()) {
            assertEquals(p, TransferPath.parse(p.displayName()));
            assertEquals(p, TransferPath.parse("  " + p.displayName().toUpperCase(Locale.ROOT) + " "));
            assertEquals(p.displayName(), p.toString());
        }
    }

    @Test
    void theToolsOlderNamesAreAliases() {
        // viper demo --transport said ucx and file; the GPU transports' schemes name their paths too.
        assertEquals(TransferPath.HOST, TransferPath.parse("ucx"));
        assertEquals(TransferPath.PFS, TransferPath.parse("File"));
        assertEquals(TransferPath.GPU, TransferPath.parse("cuda-ipc"));
        assertEquals(TransferPath.GPU_PIPE, TransferPath.parse("cuda-pipe"));
    }

    @Test
    void noNameMeansTwoPaths() {
        List<String> all = new ArrayList<>();
        for (TransferPath p : TransferPath.values()) {
            all.add(p.displayName());
            all.addAll(p.aliases());
        }
        assertEquals(all.size(), new HashSet<>(all).size(), "names: " + all);
    }

    @Test
    void anUnknownNameIsRefusedWithTheAcceptedOnes() {
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> TransferPath.parse("carrier-pigeon"));
        assertEquals(
                "unknown path 'carrier-pigeon' (accepted: inline, host (or ucx), tcp, pfs (or file),"
                        + " gpu (or cuda-ipc), gpu-pipe (or cuda-pipe))",
                e.getMessage());
        assertThrows(ViperConfigException.class, () -> TransferPath.parse(""));
        assertThrows(ViperConfigException.class, () -> TransferPath.parse(null));
        // pfs-poll is the bench's polling baseline over pfs, not a path of its own
        assertEquals(Optional.empty(), TransferPath.find("pfs-poll"));
    }

    @Test
    void schemeTierAndCostLine() {
        assertEquals("ucx", TransferPath.HOST.scheme());
        assertEquals("file", TransferPath.PFS.scheme());
        assertEquals("inline", TransferPath.INLINE.scheme());
        assertEquals(Tier.PFS, TransferPath.PFS.tier());
        assertEquals(Tier.HOST, TransferPath.INLINE.tier());
        for (TransferPath p : TransferPath.values()) {
            assertTrue(List.of("gpu", "host", "tcp", "pfs").contains(p.costLine()), p + " priced by " + p.costLine());
            assertEquals(p.tier() == Tier.GPU, p.scheme().startsWith("cuda-"), p.toString());
        }
        assertEquals("inline, host (or ucx)", TransferPath.names(List.of(TransferPath.INLINE, TransferPath.HOST)));
    }
}
