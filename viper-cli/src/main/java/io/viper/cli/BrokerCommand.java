package io.viper.cli;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.notify.embedded.EmbeddedBroker;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code viper broker}: runs the embedded notifier's broker on its own, for producers and consumers that come and go.
 */
@Command(
        name = "broker",
        mixinStandardHelpOptions = true,
        description = {
            "Run the embedded notifier broker standalone (producers otherwise host it themselves).",
            "Producers and consumers use --notifier embedded://HOST:PORT. Stops on Ctrl-C.",
            "Beyond loopback it needs viper.auth.secret.file (--config or --set); viper.tls.* and viper.limits.*"
                    + " apply too."
        })
final class BrokerCommand implements Callable<Integer> {
    @Option(
            names = "--host",
            defaultValue = "127.0.0.1",
            description = "Address to bind (default: ${DEFAULT-VALUE}; 0.0.0.0 for every interface)")
    String host;

    @Option(
            names = "--port",
            defaultValue = "7800",
            description = "Port to bind (default: ${DEFAULT-VALUE}; 0 picks a free one)")
    int port;

    @Option(
            names = {"-v", "--verbose"},
            description = "Log connections and publishes on stderr")
    boolean verbose;

    @Mixin
    ConfigOptions config;

    @Override
    public Integer call() throws Exception {
        CliLogging.configure(verbose);
        if (port < 0 || port > 65535) {
            throw new ViperConfigException("--port " + port + " is not a port number");
        }
        ViperConfig settings = ViperConfig.of(config.values());
        try (EmbeddedBroker broker = EmbeddedBroker.start(host, port, settings)) {
            System.out.println("viper broker listening on " + broker.uri());
            System.out.flush();
            CountDownLatch stop = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(stop::countDown));
            stop.await();
        }
        return 0;
    }
}
