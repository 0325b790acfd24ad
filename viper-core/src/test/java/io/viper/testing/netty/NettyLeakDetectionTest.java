package io.viper.testing.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.viper.testing.LaunchedFixtures;
import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.platform.engine.TestExecutionResult;

/**
 * Runs small test classes through the JUnit launcher, as surefire does, with extension autodetection on: a class that
 * drops an unreleased buffer fails, a tidy one passes.
 */
class NettyLeakDetectionTest {
    /**
     * Drops a pooled and an unpooled direct buffer without releasing them. Run only through
     * {@link LaunchedFixtures#run}.
     */
    @EnabledIf("io.viper.testing.LaunchedFixtures#launching")
    static class LeakingTests {
        @Test
        void dropsBuffersWithoutReleasingThem() {
            ByteBuf unpooled = UnpooledByteBufAllocator.DEFAULT.directBuffer(64);
            unpooled.writeLong(42);
            ByteBuf pooled = PooledByteBufAllocator.DEFAULT.directBuffer(64);
            pooled.writeLong(42);
        }
    }

    /** Releases everything it allocates. Run only through {@link LaunchedFixtures#run}. */
    @EnabledIf("io.viper.testing.LaunchedFixtures#launching")
    static class TidyTests {
        @Test
        void releasesItsBuffers() {
            ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer(64);
            b.writeLong(42);
            b.release();
        }
    }

    @Test
    void aClassThatLeaksABufferFails() {
        TestExecutionResult result = LaunchedFixtures.run(LeakingTests.class);
        assertEquals(TestExecutionResult.Status.FAILED, result.getStatus());
        AssertionError failure =
                assertInstanceOf(AssertionError.class, result.getThrowable().orElseThrow());
        assertTrue(
                failure.getMessage()
                        .startsWith("Netty reported 2 leak(s) while NettyLeakDetectionTest$LeakingTests ran"),
                failure.getMessage());
        assertTrue(failure.getMessage().contains("LEAK: ByteBuf.release() was not called"), failure.getMessage());
        assertTrue(
                failure.getMessage().contains("dropsBuffersWithoutReleasingThem"),
                "the report shows where: " + failure.getMessage());
    }

    @Test
    void aClassThatReleasesItsBuffersPasses() {
        assertEquals(
                TestExecutionResult.Status.SUCCESSFUL,
                LaunchedFixtures.run(TidyTests.class).getStatus());
    }

    @Test
    void withoutNettyOnTheClassPathItLoadsAndDoesNothing() throws Exception {
        // A parent that hides Netty, and the extension itself so that the child loads it afresh.
        ClassLoader withoutNetty = new ClassLoader(NettyLeakDetectionTest.class.getClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (name.startsWith("io.netty.") || name.startsWith(NettyLeakDetection.class.getPackageName() + ".")) {
                    throw new ClassNotFoundException(name);
                }
                return super.loadClass(name, resolve);
            }
        };
        URL here =
                NettyLeakDetection.class.getProtectionDomain().getCodeSource().getLocation();
        try (URLClassLoader loader = new URLClassLoader(new URL[] {here}, withoutNetty)) {
            Class<?> extension = Class.forName(NettyLeakDetection.class.getName(), true, loader);
            assertEquals(loader, extension.getClassLoader(), "loaded where Netty is hidden");
            // With Netty absent, touching any of its classes would throw NoClassDefFoundError.
            ((AfterAllCallback) extension.getConstructor().newInstance()).afterAll(null);
        }
    }
}
