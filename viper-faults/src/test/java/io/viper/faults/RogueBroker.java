package io.viper.faults;

import io.viper.auth.Authenticator;
import io.viper.auth.Handshake;
import io.viper.auth.Secret;
import io.viper.notify.embedded.internal.NotifyProtocol;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A broker impostor run by a holder of a consumer token (any consumer host, a relay): it proves the consumer key in the
 * handshake, as a real broker does to consumers, and sends its subscribers whatever manifest bytes the test gives it.
 * Speaks just enough of the embedded protocol: WELCOME, MANIFEST on SUBSCRIBE, WELCOME on HELLO. One subscriber at a
 * time; test code only.
 */
final class RogueBroker implements AutoCloseable {
    private final ServerSocket server;
    private final Authenticator auth;
    private final LinkedBlockingQueue<byte[]> toSend = new LinkedBlockingQueue<>();
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    private final Thread thread;

    RogueBroker(Secret token) throws IOException {
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.auth = Authenticator.of("embedded", Optional.of(token));
        this.thread = Thread.ofPlatform().daemon().name("rogue-broker").start(this::run);
    }

    String uri() {
        return "embedded://127.0.0.1:" + server.getLocalPort();
    }

    /** Sends {@code manifest} (encoded, signed or not) as the model's next MANIFEST frame. */
    void announce(byte[] manifest) {
        toSend.add(manifest);
    }

    private void run() {
        while (!server.isClosed()) {
            try (Socket s = server.accept()) {
                open.add(s);
                serve(s);
            } catch (IOException | Handshake.Refused | InterruptedException e) {
                // the subscriber went away: wait for the next
            }
        }
    }

    private void serve(Socket s) throws IOException, Handshake.Refused, InterruptedException {
        DataInputStream in = new DataInputStream(s.getInputStream());
        DataOutputStream out = new DataOutputStream(s.getOutputStream());
        Authenticator.Exchange ex = auth.exchange();
        write(out, ex.challenge());
        byte[] proof = new byte[in.readInt()];
        in.readFully(proof);
        ex.verify(proof, "subscriber");
        write(out, ex.accepted());
        welcome(out);
        s.setSoTimeout(50);
        String model = null;
        while (!s.isClosed()) {
            byte[] frame;
            try {
                frame = new byte[in.readInt()];
                in.readFully(frame);
            } catch (SocketTimeoutException e) {
                frame = null;
            }
            if (frame != null && frame[1] == NotifyProtocol.HELLO) {
                welcome(out);
            } else if (frame != null && frame[1] == NotifyProtocol.SUBSCRIBE) {
                int n = ((frame[2] & 0xff) << 8) | (frame[3] & 0xff);
                model = new String(frame, 4, n, StandardCharsets.UTF_8);
            }
            byte[] m = model == null ? null : toSend.poll(10, TimeUnit.MILLISECONDS);
            if (m != null) {
                byte[] name = model.getBytes(StandardCharsets.UTF_8);
                out.writeInt(2 + 2 + name.length + 4 + m.length);
                out.writeByte(NotifyProtocol.VERSION);
                out.writeByte(NotifyProtocol.MANIFEST);
                out.writeShort(name.length);
                out.write(name);
                out.writeInt(m.length);
                out.write(m);
                out.flush();
            }
        }
    }

    private static void welcome(DataOutputStream out) throws IOException {
        out.writeInt(2 + 8);
        out.writeByte(NotifyProtocol.VERSION);
        out.writeByte(NotifyProtocol.WELCOME);
        out.writeLong(60_000);
        out.flush();
    }

    private static void write(DataOutputStream out, byte[] frame) throws IOException {
        out.writeInt(frame.length);
        out.write(frame);
        out.flush();
    }

    @Override
    public void close() throws IOException, InterruptedException {
        server.close();
        for (Socket s : open) {
            s.close();
        }
        thread.join(5_000);
    }
}
