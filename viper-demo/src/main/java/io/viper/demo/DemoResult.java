package io.viper.demo;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A finished demo: what was asked, what was planned, what each policy's run measured.
 *
 * @param settings the settings it ran with
 * @param plan the plan made before the runs
 * @param outcomes one per policy, in the order of {@link DemoSettings#policies()}
 * @param seconds the wall time of planning and every run
 * @param logs where the processes' logs were kept, when asked to keep them
 */
public record DemoResult(
        DemoSettings settings, DemoPlan plan, List<PolicyOutcome> outcomes, double seconds, Optional<Path> logs) {
    /** Copies the outcomes. */
    public DemoResult {
        outcomes = List.copyOf(outcomes);
    }
}
