package io.viper.transfer.tcp;

import io.viper.spi.TransportProvider;
import io.viper.testing.TransportConformanceSuite;

/**
 * The {@code tcp://} transport passes the transport conformance suite (core's test jar fails the class if Netty reports
 * a leak).
 */
class TcpTransportConformanceTest extends TransportConformanceSuite {
    @Override
    protected TransportProvider provider() {
        return new TcpTransportProvider();
    }
}
