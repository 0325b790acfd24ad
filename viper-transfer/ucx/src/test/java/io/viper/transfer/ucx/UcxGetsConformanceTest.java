package io.viper.transfer.ucx;

import io.viper.ViperConfig;
import java.util.Map;

/**
 * The conformance suite with reads by RDMA GETs only ({@code viper.ucx.mapped=false}): the path to a producer on
 * another host, which a producer on this one takes when the key is off.
 */
class UcxGetsConformanceTest extends UcxTransportConformanceTest {
    @Override
    protected ViperConfig config() {
        return ViperConfig.of(Map.of("viper.ucx.mapped", "false"));
    }
}
