package io.viper.architecture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * One name per module, as in Aeron ({@code aeron-driver} is {@code io.aeron.driver}): a reactor module's folder,
 * artifact, module name and package root agree. The folder {@code viper-transfer/cuda} is the artifact
 * {@code viper-transfer-cuda}, the module {@code io.viper.transfer.cuda} and the root of every package in it, main and
 * test sources alike. {@code viper-core} is the API root, as {@code aeron-client} is {@code io.aeron}: its packages are
 * {@code io.viper.*}, its module {@code io.viper.core}. Modules are read from the root pom's {@code <modules>}, and
 * those of the aggregators it names.
 */
final class ModuleNames {
    private static final Pattern MODULE = Pattern.compile("<module>\\s*([^<\\s]+)\\s*</module>");
    private static final Pattern ARTIFACT =
            Pattern.compile("</parent>.*?<artifactId>\\s*([^<\\s]+)\\s*</artifactId>", Pattern.DOTALL);
    private static final Pattern JPMS_MODULE = Pattern.compile("(?m)^\\s*(?:open\\s+)?module\\s+([\\w.]+)\\s*\\{");
    private static final Pattern PACKAGE = Pattern.compile("(?m)^package\\s+([\\w.]+)\\s*;");
    /** The module whose packages are the API's root, like aeron-client's. */
    static final String API_ROOT = "viper-core";

    private ModuleNames() {}

    /** The package root of a module of {@code artifact}: {@code io.viper.} and the rest of its name, '.' for '-'. */
    static String packageRoot(String artifact) {
        if (artifact.equals(API_ROOT)) {
            return "io.viper";
        }
        String name = artifact.startsWith("viper-") ? artifact.substring("viper-".length()) : artifact;
        return "io.viper." + name.replace('-', '.');
    }

    /** The JPMS module name a module of {@code artifact} declares, when it declares one. */
    static String moduleName(String artifact) {
        return artifact.equals(API_ROOT) ? "io.viper.core" : packageRoot(artifact);
    }

    /**
     * One line per name that disagrees, in every module of the reactor under {@code root}: the folder's path names the
     * module, and the artifact, module name and packages are held to it.
     */
    static List<String> disagreements(Path root) {
        List<String> out = new ArrayList<>();
        for (String folder : modules(root, "")) {
            Path dir = root.resolve(folder);
            String artifact = artifact(dir.resolve("pom.xml"));
            String expected = folder.replace('/', '-');
            if (!artifact.equals(expected)) {
                out.add(folder + ": artifact " + artifact + ", expected " + expected
                        + " (the folder's path, '-' for '/')");
            }
            Path info = dir.resolve("src/main/java/module-info.java");
            if (Files.isRegularFile(info)) {
                Matcher m = JPMS_MODULE.matcher(read(info));
                String declared = m.find() ? m.group(1) : "(none)";
                if (!declared.equals(moduleName(expected))) {
                    out.add(folder + ": module " + declared + ", expected " + moduleName(expected));
                }
            }
            String pkgRoot = packageRoot(expected);
            for (Path source : javaSources(dir.resolve("src"))) {
                Matcher m = PACKAGE.matcher(read(source));
                if (!m.find()) {
                    continue; // module-info.java
                }
                String pkg = m.group(1);
                if (!pkg.equals(pkgRoot) && !pkg.startsWith(pkgRoot + ".")) {
                    out.add(root.relativize(source) + ": package " + pkg + ", outside the module's root " + pkgRoot);
                }
            }
        }
        return out;
    }

    /** The folders (relative to {@code root}) of the modules with sources: aggregators are followed, not listed. */
    private static List<String> modules(Path root, String under) {
        List<String> out = new ArrayList<>();
        Matcher m = MODULE.matcher(read(root.resolve(under).resolve("pom.xml")));
        while (m.find()) {
            String folder = under.isEmpty() ? m.group(1) : under + "/" + m.group(1);
            if (Files.isDirectory(root.resolve(folder).resolve("src"))) {
                out.add(folder);
            }
            out.addAll(modules(root, folder)); // an aggregator's own modules (none for a leaf)
        }
        return out;
    }

    private static String artifact(Path pom) {
        Matcher m = ARTIFACT.matcher(read(pom));
        return m.find() ? m.group(1) : "(no artifactId)";
    }

    private static List<Path> javaSources(Path src) {
        if (!Files.isDirectory(src)) {
            return List.of();
        }
        try (Stream<Path> files = Files.walk(src)) {
            return files.filter(f -> f.toString().endsWith(".java")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
