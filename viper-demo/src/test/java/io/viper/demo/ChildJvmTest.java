package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link ChildJvm#aotOptions}: a child takes its parent's AOT cache, and nothing else of its options, from them. */
class ChildJvmTest {
    @Test
    void theCacheAndItsLogSettingsAreTakenAndTheRestLeft() {
        List<String> parent = List.of(
                "--enable-native-access=ALL-UNNAMED",
                "-XX:AOTCache=/repo/viper-cli/target/viper-lib/viper.aot",
                "-Xlog:aot*=off",
                "-Xmx2g",
                "-Dviper.bench.verbose=false",
                "-XX:AOTCacheOutput=/elsewhere.aot");
        assertEquals(
                List.of("-XX:AOTCache=/repo/viper-cli/target/viper-lib/viper.aot", "-Xlog:aot*=off"),
                ChildJvm.aotOptions(parent));
    }

    @Test
    void aParentWithoutACacheGivesNone() {
        assertEquals(List.of(), ChildJvm.aotOptions(List.of("-Xmx64m", "-Xlog:gc")));
    }
}
