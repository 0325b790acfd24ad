package io.viper.transfer.ucx.internal;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * A hostile process posing as a ucx producer, JDK only (so that it runs as another user on the test classes alone): it
 * answers the handshake as a server without a secret, then every LEASE with a GRANT whose UCX worker address and rkey
 * are garbage, for {@code args[0]} bytes. UCX 1.13 aborts the process that hands such an address to it. Prints
 * {@code PORT n}, then serves until killed.
 */
public final class ForgedGrantServer {
    private ForgedGrantServer() {}

    public static void main(String[] args) throws Exception {
        long size = Long.parseLong(args[0]);
        try (ServerSocket listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            System.out.println("PORT " + listener.getLocalPort());
            System.out.flush();
            while (true) {
                Socket s = listener.accept();
                Thread.ofVirtual().start(() -> answer(s, size));
            }
        }
    }

    private static void answer(Socket s, long size) {
        try (s) {
            DataInputStream in = new DataInputStream(s.getInputStream());
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(37);
            out.writeInt(0x56415531); // VAU1
            out.writeByte(0); // no credentials required
            out.write(new byte[32]);
            out.flush();
            in.readFully(new byte[in.readInt()]); // the proof
            out.writeInt(39);
            out.writeInt(0x56415531);
            out.writeByte(0); // accepted
            out.write(new byte[32]);
            out.writeShort(0);
            out.flush();
            in.readInt(); // the magic
            in.readFully(new byte[in.readInt()]); // LEASE
            byte[] garbage = new byte[200];
            for (int i = 0; i < garbage.length; i++) {
                garbage[i] = (byte) (i * 37 + 11);
            }
            out.writeInt(1 + 32 + 2 + garbage.length + 2 + garbage.length);
            out.writeByte(2); // GRANT
            out.writeLong(1);
            out.writeLong(7);
            out.writeLong(0x10000);
            out.writeLong(size);
            out.writeShort(garbage.length);
            out.write(garbage);
            out.writeShort(garbage.length);
            out.write(garbage);
            out.flush();
            in.read();
        } catch (Exception e) {
            // the consumer hung up
        }
    }
}
