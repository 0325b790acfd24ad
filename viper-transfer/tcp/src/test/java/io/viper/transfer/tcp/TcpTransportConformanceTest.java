package io.viper.transfer.tcp;

import io.viper.spi.TransportProvider;
import io.viper.testing.TransportConformanceSuite;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The {@code tcp://} transport passes the transport conformance suite, with Netty's leak detector at PARANOID. */
class TcpTransportConformanceTest extends TransportConformanceSuite {
    @BeforeAll
    static void paranoid() {
        NettyLeakCheck.enable();
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        NettyLeakCheck.assertNoLeaks();
    }

    @Override
    protected TransportProvider provider() {
        return new TcpTransportProvider();
    }
}
