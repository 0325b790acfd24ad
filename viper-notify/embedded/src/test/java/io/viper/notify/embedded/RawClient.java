package io.viper.notify.embedded;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/** A raw socket speaking (or breaking) the broker protocol, for tests. */
final class RawClient implements AutoCloseable {
    private final Socket socket;
    final DataInputStream in;
    final DataOutputStream out;

    RawClient(URI broker) throws IOException {
        socket = new Socket();
        socket.connect(new InetSocketAddress(broker.getHost(), broker.getPort()), 2000);
        socket.setSoTimeout(5000);
        in = new DataInputStream(socket.getInputStream());
        out = new DataOutputStream(socket.getOutputStream());
    }

    static byte[] frame(int type, byte[] payload) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(b);
        try {
            d.writeInt(2 + payload.length);
            d.writeByte(1);
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
        out.write(bytes);
        out.flush();
    }

    /** Reads one frame: returns {type, payload...}. */
    byte[] readFrame() throws IOException {
        int n = in.readInt();
        byte[] f = new byte[n];
        in.readFully(f);
        byte[] r = new byte[n - 1];
        System.arraycopy(f, 1, r, 0, n - 1);
        return r;
    }

    /** Reads until the broker closes; true if it did within the socket timeout. */
    boolean closedByPeer() throws IOException {
        byte[] buf = new byte[4096];
        InputStream s = socket.getInputStream();
        try {
            while (s.read(buf) >= 0) {
                // Drain.
            }
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (SocketException | EOFException e) {
            return true;
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
