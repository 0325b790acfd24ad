package io.viper.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layering of the project, checked on the main classes of every module (test classes and test jars are left out):
 * viper-core imports no transport, notifier or ML library; no module uses another module's {@code internal} packages;
 * module dependencies point one way; inside viper-core, the producer's and the consumer's internals do not use each
 * other.
 */
class LayeringTest {
    private static JavaClasses project;

    @BeforeAll
    static void importProject() {
        project = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(location -> !location.contains("-tests.jar"))
                .importPackages("io.viper");
    }

    @Test
    void everyModuleIsImported() {
        // Guards the rules below against passing because a module's classes were never read.
        Set<String> seen = project.stream()
                .map(Layering::moduleOf)
                .filter(m -> m != null)
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(Layering.ALLOWED.keySet()), seen);
    }

    @Test
    void coreImportsNoTransportNotifierOrMlLibrary() {
        assertEquals(List.of(), Layering.coreImportsNoLibrary(project, Layering::moduleOf));
    }

    @Test
    void noModuleUsesAnotherModulesInternals() {
        assertEquals(List.of(), Layering.noForeignInternals(project, Layering::moduleOf));
    }

    @Test
    void dependenciesPointOneWay() {
        assertEquals(List.of(), Layering.dependenciesPointOneWay(project, Layering::moduleOf));
    }

    @Test
    void producerAndConsumerInternalsStayApart() {
        assertEquals(List.of(), Layering.sidesApart(project, Layering.CORE_SIDES));
    }

    // The rules themselves catch what they are for: fixtures in this test module play other modules.

    @Test
    void aCoreClassUsingUcxIsReported() {
        JavaClasses fixture = new ClassFileImporter().importClasses(Fixtures.UsesUcx.class);
        var lines = Layering.coreImportsNoLibrary(fixture, c -> "viper-core");
        assertTrue(
                lines.stream()
                        .anyMatch(l ->
                                l.contains("org.openucx.jucx") && l.contains("viper-core must not use org.openucx.")),
                lines.toString());
    }

    @Test
    void anotherModulesInternalPackageIsReported() {
        JavaClasses fixture = new ClassFileImporter()
                .importClasses(Fixtures.UsesTcpInternals.class, io.viper.transfer.tcp.internal.TcpProtocol.class);
        Function<JavaClass, String> modules =
                c -> c.getName().startsWith("io.viper.transfer.tcp") ? "viper-transfer-tcp" : "viper-transfer-ucx";
        var lines = Layering.noForeignInternals(fixture, modules);
        assertTrue(
                lines.stream().anyMatch(l -> l.contains("TcpProtocol") && l.contains("internal packages are private")),
                lines.toString());
    }

    @Test
    void oneSideUsingTheOtherIsReported() {
        JavaClasses fixture =
                new ClassFileImporter().importClasses(Fixtures.UsesScheduler.class, io.viper.scheduler.Schedule.class);
        var lines = Layering.sidesApart(fixture, List.of("io.viper.architecture", "io.viper.scheduler"));
        assertTrue(
                lines.stream()
                        .anyMatch(l ->
                                l.contains("UsesScheduler -> io.viper.scheduler.Schedule") && l.contains("stay apart")),
                lines.toString());
    }

    @Test
    void anUpwardDependencyIsReported() {
        JavaClasses fixture =
                new ClassFileImporter().importClasses(Fixtures.UsesScheduler.class, io.viper.scheduler.Schedule.class);
        Map<String, String> byName = Map.of(Fixtures.UsesScheduler.class.getName(), "viper-predictor");
        var lines = Layering.dependenciesPointOneWay(
                fixture,
                c -> byName.getOrDefault(
                        c.getName(), c.getName().startsWith("io.viper.scheduler") ? "viper-scheduler" : null));
        assertTrue(
                lines.stream().anyMatch(l -> l.contains("viper-predictor may use only [viper-core]")),
                lines.toString());
    }
}
