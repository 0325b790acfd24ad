package io.viper.architecture;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Viper's layering rules, evaluated on compiled classes. Each rule returns its violations as lines ("origin -> target:
 * why"), so that a failing test names every offending dependency.
 *
 * <p>Which module a class belongs to comes from where it was loaded: a module's {@code target/classes} directory (its
 * {@code pom.xml} names the artifact) or its jar.
 */
final class Layering {
    /** Libraries viper-core must not use: transports, notifiers, ML and UI libraries. */
    static final List<String> FORBIDDEN_IN_CORE = List.of(
            "org.openucx.",
            "jcuda.",
            "io.netty.",
            "org.apache.kafka.",
            "smile.",
            "ai.djl.",
            "org.knowm.",
            "picocli.",
            "io.viper.transfer.",
            "io.viper.notify.",
            "io.viper.netty.",
            "io.viper.predictor.",
            "io.viper.scheduler.",
            "io.viper.examples.",
            "io.viper.demo.",
            "io.viper.cli.",
            "io.viper.agent.",
            "io.viper.djl.");

    private static final Set<String> TRANSPORTS =
            Set.of("viper-transfer-pfs", "viper-transfer-tcp", "viper-transfer-ucx", "viper-transfer-cuda");
    private static final Set<String> NOTIFIERS = Set.of("viper-notify-embedded", "viper-notify-kafka");

    /**
     * The Viper modules each module may use. Dependencies point one way: core at the bottom; the transports, notifiers
     * and the predictor beside each other on core only (tcp and the embedded notifier also on viper-netty, the Netty
     * pieces they share); the scheduler on the predictor; the demo and the command line on top, and the examples beside
     * them as a leaf. A module missing here is itself a violation, so that a new module gets a place in the layering
     * when it is added.
     */
    static final Map<String, Set<String>> ALLOWED = Map.ofEntries(
            Map.entry("viper-core", Set.of()),
            Map.entry("viper-netty", Set.of("viper-core")),
            Map.entry("viper-transfer-pfs", Set.of("viper-core")),
            Map.entry("viper-transfer-tcp", Set.of("viper-core", "viper-netty")),
            Map.entry("viper-transfer-ucx", Set.of("viper-core")),
            Map.entry("viper-transfer-cuda", Set.of("viper-core")),
            Map.entry("viper-notify-embedded", Set.of("viper-core", "viper-netty")),
            Map.entry("viper-notify-kafka", Set.of("viper-core")),
            Map.entry("viper-predictor", Set.of("viper-core")),
            Map.entry("viper-scheduler", Set.of("viper-core", "viper-predictor")),
            // The agent serves other languages with the SDK; transports and notifiers reach it at run time.
            Map.entry("viper-agent", Set.of("viper-core")),
            // DJL stays out of core: only this module uses it.
            Map.entry("viper-djl", Set.of("viper-core")),
            // Examples are a leaf: the SDK (and the plugins it finds at run time) only; nothing uses them.
            Map.entry("examples", union(Set.of("viper-core"), TRANSPORTS, NOTIFIERS)),
            Map.entry(
                    "viper-demo",
                    union(Set.of("viper-core", "viper-predictor", "viper-scheduler"), TRANSPORTS, NOTIFIERS)),
            Map.entry(
                    "viper-cli",
                    union(
                            Set.of("viper-core", "viper-predictor", "viper-scheduler", "viper-demo", "viper-agent"),
                            TRANSPORTS,
                            NOTIFIERS)));

    private Layering() {}

    @SafeVarargs
    private static Set<String> union(Set<String>... sets) {
        Set<String> out = new TreeSet<>();
        for (Set<String> s : sets) {
            out.addAll(s);
        }
        return Set.copyOf(out);
    }

    /** Rule 1: classes of viper-core use none of {@link #FORBIDDEN_IN_CORE}. */
    static List<String> coreImportsNoLibrary(JavaClasses classes, Function<JavaClass, String> moduleOf) {
        List<String> out = new ArrayList<>();
        for (JavaClass c : classes) {
            if (!"viper-core".equals(moduleOf.apply(c))) {
                continue;
            }
            for (Dependency d : c.getDirectDependenciesFromSelf()) {
                String target = d.getTargetClass().getName();
                for (String banned : FORBIDDEN_IN_CORE) {
                    if (target.startsWith(banned)) {
                        out.add(c.getName() + " -> " + target + ": viper-core must not use " + banned + "*");
                    }
                }
            }
        }
        return dedupe(out);
    }

    /** Rule 2: an {@code internal} package is used only from its own module. */
    static List<String> noForeignInternals(JavaClasses classes, Function<JavaClass, String> moduleOf) {
        List<String> out = new ArrayList<>();
        for (JavaClass c : classes) {
            String from = moduleOf.apply(c);
            for (Dependency d : c.getDirectDependenciesFromSelf()) {
                JavaClass t = d.getTargetClass();
                if (!t.getName().startsWith("io.viper.") || !isInternal(t.getPackageName())) {
                    continue;
                }
                String to = moduleOf.apply(t);
                if (to != null && !to.equals(from)) {
                    out.add(c.getName() + " (" + from + ") -> " + t.getName() + " (" + to
                            + "): internal packages are private to their module");
                }
            }
        }
        return dedupe(out);
    }

    /** Rule 3: a module uses only the Viper modules {@link #ALLOWED} lists for it. */
    static List<String> dependenciesPointOneWay(JavaClasses classes, Function<JavaClass, String> moduleOf) {
        List<String> out = new ArrayList<>();
        for (JavaClass c : classes) {
            String from = moduleOf.apply(c);
            if (from == null) {
                continue;
            }
            Set<String> allowed = ALLOWED.get(from);
            if (allowed == null) {
                out.add(c.getName() + ": module " + from + " has no place in Layering.ALLOWED");
                continue;
            }
            for (Dependency d : c.getDirectDependenciesFromSelf()) {
                JavaClass t = d.getTargetClass();
                if (!t.getName().startsWith("io.viper.")) {
                    continue;
                }
                String to = moduleOf.apply(t);
                if (to != null && !to.equals(from) && !allowed.contains(to)) {
                    out.add(c.getName() + " (" + from + ") -> " + t.getName() + " (" + to + "): " + from
                            + " may use only " + new TreeSet<>(allowed));
                }
            }
        }
        return dedupe(out);
    }

    /**
     * The halves of viper-core's internals that rule 4 keeps apart; what both use lives in {@code io.viper.internal}.
     */
    static final List<String> CORE_SIDES = List.of("io.viper.internal.producer", "io.viper.internal.consumer");

    /**
     * Rule 4: no class of one of {@code sides} (packages, with their subpackages) uses a class of another: in
     * viper-core ({@link #CORE_SIDES}), the producer's and the consumer's internals.
     */
    static List<String> sidesApart(JavaClasses classes, List<String> sides) {
        List<String> out = new ArrayList<>();
        for (JavaClass c : classes) {
            String from = sideOf(c.getPackageName(), sides);
            if (from == null) {
                continue;
            }
            for (Dependency d : c.getDirectDependenciesFromSelf()) {
                JavaClass t = d.getTargetClass();
                String to = sideOf(t.getPackageName(), sides);
                if (to != null && !to.equals(from)) {
                    out.add(c.getName() + " -> " + t.getName() + ": " + from + " and " + to
                            + " stay apart (what both use belongs in their shared package)");
                }
            }
        }
        return dedupe(out);
    }

    private static String sideOf(String packageName, List<String> sides) {
        for (String s : sides) {
            if (packageName.equals(s) || packageName.startsWith(s + ".")) {
                return s;
            }
        }
        return null;
    }

    static boolean isInternal(String packageName) {
        return packageName.endsWith(".internal") || packageName.contains(".internal.");
    }

    private static List<String> dedupe(List<String> lines) {
        return List.copyOf(new TreeSet<>(lines));
    }

    private static final Map<String, String> ARTIFACT_BY_LOCATION = new ConcurrentHashMap<>();
    private static final Pattern JAR = Pattern.compile("/([^/!]+?)(?:-\\d[^/!]*)?\\.jar!");
    private static final Pattern CLASSES_DIR = Pattern.compile("^file:(.*)/target/classes/");
    private static final Pattern ARTIFACT =
            Pattern.compile("</parent>.*?<artifactId>([^<]+)</artifactId>", Pattern.DOTALL);

    /** The artifact a class was loaded from, or null for a class outside the project (the JDK, a library). */
    static String moduleOf(JavaClass c) {
        Optional<URI> uri = c.getSource().map(s -> s.getUri());
        if (uri.isEmpty()) {
            return null;
        }
        String u = uri.get().toString();
        Matcher jar = JAR.matcher(u);
        if (jar.find()) {
            return jar.group(1);
        }
        Matcher dir = CLASSES_DIR.matcher(u);
        if (dir.find()) {
            return ARTIFACT_BY_LOCATION.computeIfAbsent(dir.group(1), Layering::artifactOfModuleDir);
        }
        return null;
    }

    private static String artifactOfModuleDir(String dir) {
        try {
            Matcher m = ARTIFACT.matcher(Files.readString(Path.of(dir, "pom.xml")));
            return m.find() ? m.group(1) : dir;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the pom of " + dir, e);
        }
    }
}
