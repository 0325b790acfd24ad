package io.viper.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The lines under the demo's table that say where a plan did not hold: {@code adaptive} falling back (its threshold is
 * never met on the predicted curve), and {@code optimal} serving more than {@code epoch} beyond the request noise
 * though it predicted less, with how far each prediction was from what was served. Stateless.
 */
final class DemoNotes {
    private DemoNotes() {}

    /** The notes for {@code outcomes}, none when every plan held. */
    static List<String> of(List<PolicyOutcome> outcomes) {
        List<String> out = new ArrayList<>();
        find(outcomes, DemoPolicy.ADAPTIVE)
                .filter(a -> a.schedule() != null && a.schedule().detail().contains("FALLBACK"))
                .ifPresent(a -> out.add("note: adaptive " + a.schedule().detail()));
        Optional<PolicyOutcome> opt = find(outcomes, DemoPolicy.OPTIMAL);
        Optional<PolicyOutcome> epoch = find(outcomes, DemoPolicy.EPOCH);
        if (opt.isPresent() && epoch.isPresent()) {
            PolicyOutcome o = opt.get();
            PolicyOutcome e = epoch.get();
            double[] d = o.relativeTo(e);
            boolean beyondNoise = d[0] > 0 && d[0] > 2 * d[1] / Math.sqrt(Math.max(1, o.cils().length));
            if (beyondNoise && o.predictedCil() <= e.predictedCil()) {
                out.add(String.format(
                        Locale.ROOT,
                        "note: optimal served %.1f%% more than epoch though it predicted %.1f%% less: its plan rests on"
                                + " the curve and drift fitted on the warm-up, which served %.0f%% of what optimal"
                                + " predicted and %.0f%% of epoch's; where the stream moved after the warm-up (new"
                                + " digits, drift the warm-up could not see), the checkpoints it placed early buy"
                                + " less than epoch's evenly spaced ones",
                        100 * d[0],
                        100 * (1 - o.predictedCil() / e.predictedCil()),
                        100 * o.cil() / o.predictedCil(),
                        100 * e.cil() / e.predictedCil()));
            }
        }
        return out;
    }

    private static Optional<PolicyOutcome> find(List<PolicyOutcome> outcomes, DemoPolicy p) {
        return outcomes.stream().filter(o -> o.policy() == p).findFirst();
    }
}
