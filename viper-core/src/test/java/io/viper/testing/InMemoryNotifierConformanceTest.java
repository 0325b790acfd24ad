package io.viper.testing;

import io.viper.spi.NotifierProvider;
import java.net.URI;

/** The notifier conformance suite over the in-memory test double, which tests throughout core rely on. */
class InMemoryNotifierConformanceTest extends NotifierConformanceSuite {
    private final String name = "conformance-" + Long.toHexString(System.nanoTime());

    @Override
    protected NotifierProvider provider() {
        return new InMemoryNotifierProvider();
    }

    @Override
    protected URI uri() {
        return URI.create("mem://" + name);
    }

    @Override
    protected void injectRaw(String model, byte[] raw) {
        InMemoryNotifierProvider.injectRaw(name, model, raw);
    }
}
