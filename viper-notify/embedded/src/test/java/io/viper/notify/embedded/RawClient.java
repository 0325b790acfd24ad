package io.viper.notify.embedded;

import io.viper.auth.Handshake;
import io.viper.notify.embedded.internal.NotifyProtocol;
import io.viper.testing.RawPeer;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/**
 * A raw socket speaking (or breaking) the broker protocol, for tests: past the handshake (as a client without
 * credentials), or before it.
 */
final class RawClient implements AutoCloseable {
    private final RawPeer peer;

    /** Connects and completes the handshake, so that what it sends next reaches the broker's protocol. */
    RawClient(URI broker) throws IOException {
        this(broker, true);
    }

    RawClient(URI broker, boolean handshake) throws IOException {
        peer = new RawPeer(broker.getHost(), broker.getPort(), 5000);
        if (handshake) {
            try {
                peer.handshake("embedded", RawPeer.userSecret(), io.viper.auth.Role.PRODUCER);
            } catch (Handshake.Refused e) {
                throw new IOException(e.getMessage(), e);
            }
        }
    }

    static byte[] frame(int type, byte[] payload) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(b);
        try {
            d.writeInt(2 + payload.length);
            d.writeByte(NotifyProtocol.VERSION);
            d.writeByte(type);
            d.write(payload);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return b.toByteArray();
    }

    static byte[] publishPayload(long requestId, String model, byte[] manifest) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(b);
        try {
            d.writeLong(requestId);
            byte[] m = model.getBytes(StandardCharsets.UTF_8);
            d.writeShort(m.length);
            d.write(m);
            d.writeInt(manifest.length);
            d.write(manifest);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return b.toByteArray();
    }

    static byte[] modelPayload(String model) {
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        byte[] p = new byte[2 + m.length];
        p[0] = (byte) (m.length >>> 8);
        p[1] = (byte) m.length;
        System.arraycopy(m, 0, p, 2, m.length);
        return p;
    }

    void send(byte[] bytes) throws IOException {
        peer.send(bytes);
    }

    /** Reads one frame: returns {type, payload...}. */
    byte[] readFrame() throws IOException {
        byte[] f = peer.readFrame();
        byte[] r = new byte[f.length - 1];
        System.arraycopy(f, 1, r, 0, f.length - 1);
        return r;
    }

    /** Reads until the broker closes; true if it did within the socket timeout. */
    boolean closedByPeer() throws IOException {
        return peer.closedByPeer();
    }

    @Override
    public void close() throws IOException {
        peer.close();
    }
}
