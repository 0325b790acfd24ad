package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.internal.consumer.PathSelector.Capabilities;
import io.viper.internal.consumer.PathSelector.InlineBytes;
import io.viper.internal.consumer.PathSelector.Selection;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The bytes a version's announcement carried, in path selection: a location like the others, first when the consumer
 * has them, alone on the notifier's thread, and subject to the host budget.
 */
class PathSelectorInlineTest {
    private static final long SIZE = 1000;

    private static Selection select(InlineBytes inline, long freeHostBytes, List<String> paths) {
        Capabilities caps = new Capabilities(false, 0, freeHostBytes, paths, "host", inline);
        return PathSelector.select(
                PathSelectorGpuTest.manifest(),
                caps,
                s -> Optional.ofNullable(PathSelectorGpuTest.PROVIDERS.get(s)),
                s -> Optional.empty(),
                m -> Optional.of(PathSelectorGpuTest.OWN_FILE));
    }

    private static List<String> order(Selection s) {
        return s.usable().stream().map(c -> c.location().uri().toString()).toList();
    }

    @Test
    void theAnnouncementsBytesComeFirstThenTheManifestsLocations() {
        Selection s = select(InlineBytes.FIRST, SIZE, List.of());
        assertEquals(List.of("inline:announcement", "tcp://h:1", "file:///pfs/m/1/model.safetensors"), order(s));
        assertTrue(
                s.describe().startsWith("using inline:announcement (in its announcement, no transfer)"), s.describe());
        assertEquals(
                List.of("tcp://h:1", "file:///pfs/m/1/model.safetensors"),
                order(select(InlineBytes.NONE, SIZE, List.of())));
    }

    @Test
    void onTheNotifiersThreadTheyAreTriedAlone() {
        Selection s = select(InlineBytes.ONLY, SIZE, List.of());
        assertEquals(List.of("inline:announcement"), order(s));
        assertEquals(List.of(), s.skipped(), "the transports are the fetch thread's to try, not skipped");
    }

    @Test
    void theyAreNotSubjectToTheConsumersPathsButToItsHostBudget() {
        assertEquals(List.of("inline:announcement"), order(select(InlineBytes.FIRST, SIZE, List.of("ucx"))));
        Selection over = select(InlineBytes.ONLY, SIZE - 1, List.of());
        assertEquals(List.of(), order(over));
        assertEquals(List.of("inline:announcement: 1000 bytes exceed the free host budget 999"), over.skipped());
    }
}
