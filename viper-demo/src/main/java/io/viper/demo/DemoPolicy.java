package io.viper.demo;

import io.viper.errors.ViperConfigException;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The checkpoint policies {@code viper demo} compares, in the order it runs them by default. Every policy that places
 * checkpoints gets the same budget ({@link DemoPlan#budget()}).
 */
public enum DemoPolicy {
    /** One checkpoint per pass over the training images, the usual baseline. */
    EPOCH(Algorithm.EPOCH),
    /** The best single interval the scheduler predicts. */
    FIXED(Algorithm.FIXED),
    /** Viper's loss-drop rule on the predicted curve. */
    ADAPTIVE(Algorithm.ADAPTIVE),
    /** The minimum predicted CIL. */
    OPTIMAL(Algorithm.OPTIMAL),
    /**
     * The online policy in the producer: publishes when its probes say the deployed version has become stale enough.
     */
    ONLINE(Algorithm.ONLINE),
    /** The best schedule given what the runs recorded, chosen on other request replicas than those it is scored on. */
    HINDSIGHT(null),
    /** No checkpoint: the warm-up model serves to the end. */
    NONE(Algorithm.NONE);

    /** Every policy, in the default order. */
    public static final List<DemoPolicy> ALL = List.of(values());

    private final Algorithm planned;

    DemoPolicy(Algorithm planned) {
        this.planned = planned;
    }

    /** The lower-case name of the command line, the table and the JSON. */
    public String displayName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The scheduler's algorithm that plans it before the run (for online: the plan it would follow on predicted
     * losses); none for hindsight.
     */
    public Optional<Algorithm> planner() {
        return Optional.ofNullable(planned);
    }

    /** Whether the producer publishes exactly the iterations planned before its run (every policy but online). */
    public boolean followsItsPlan() {
        return this != ONLINE;
    }

    /** Every name, comma-separated, in the default order. */
    public static String names() {
        return Arrays.stream(values()).map(DemoPolicy::displayName).collect(Collectors.joining(", "));
    }

    /**
     * The policy named {@code name}, ignoring case and surrounding blanks.
     *
     * @throws ViperConfigException naming the known ones
     */
    public static DemoPolicy parse(String name) {
        for (DemoPolicy p : values()) {
            if (p.displayName().equalsIgnoreCase(name.strip())) {
                return p;
            }
        }
        throw new ViperConfigException("--policies: unknown policy '" + name.strip() + "' (known: " + names() + ")");
    }
}
