package io.viper.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Turns Netty's leak detector to PARANOID and records every leak it reports (through
 * java.util.logging, Netty's fallback logger), so that tests can assert that none occurred.
 */
final class NettyLeakCheck {
    private static final List<String> LEAKS = new CopyOnWriteArrayList<>();
    private static final Logger NETTY_LEAK_LOGGER = Logger.getLogger(ResourceLeakDetector.class.getName());

    static {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        NETTY_LEAK_LOGGER.addHandler(new Handler() {
            @Override
            public void publish(LogRecord r) {
                String msg = r.getMessage();
                if (msg != null && msg.contains("LEAK")) {
                    LEAKS.add(msg);
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        });
    }

    private NettyLeakCheck() {
    }

    /** Call before the code under test allocates buffers. */
    static void enable() {
        // The static initializer did the work.
    }

    /** Collects garbage, lets the detector run, and fails if any leak was reported. */
    static void assertNoLeaks() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(20);
            // The detector reports on allocation of a tracked buffer.
            ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer(16);
            b.release();
        }
        assertEquals(List.of(), List.copyOf(LEAKS), "Netty reported leaked buffers");
    }
}
