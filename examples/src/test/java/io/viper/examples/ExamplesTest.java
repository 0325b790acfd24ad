package io.viper.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs docs/java.md's {@link ProducerExample} and {@link ConsumerExample} against each other (one JVM, two threads,
 * connected only through Viper's embedded notifier and tcp:// transport) and checks that the consumer received the last
 * version and answered requests. The example's model is small: its versions travel inside their announcements (path
 * inline).
 */
class ExamplesTest {
    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void theConsumerExampleFollowsTheProducerExample() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String notifier = "embedded://127.0.0.1:" + port;
        PrintStream original = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            CompletableFuture<Void> producer = CompletableFuture.runAsync(() -> {
                try {
                    ProducerExample.main(new String[] {notifier, "2000", "20"});
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            awaitListening(port, producer);
            ConsumerExample.main(new String[] {notifier, "2000"});
            producer.cancel(true);
        } finally {
            System.setOut(original);
        }
        String out = captured.toString(StandardCharsets.UTF_8);
        original.print(out);
        assertTrue(out.contains("producer: notifier embedded://127.0.0.1:" + port), out);
        Matcher last = Pattern.compile("producer: published 20 versions, the last v([0-9]+)")
                .matcher(out);
        assertTrue(last.find(), out);
        String v = last.group(1);
        assertTrue(out.matches("(?s).*consumer: answered [1-9][0-9]* requests, now serving v" + v + "\\R.*"), out);
        assertTrue(out.matches("(?s).*consumer: v" + v + " via inline in [0-9.]+ ms.*"), out);
    }

    private static void awaitListening(int port, CompletableFuture<Void> producer) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            if (producer.isDone()) {
                producer.get(); // surfaces the producer's failure
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(InetAddress.ofLiteral("127.0.0.1"), port), 200);
                return;
            } catch (IOException e) {
                Thread.sleep(50);
            }
        }
        throw new AssertionError("the producer's broker did not listen on " + port + " within 60 s");
    }
}
