package io.viper.faults;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;

/**
 * Issue 39's case 3 forger, JDK only (so that it runs as another user on the test classes alone): a ucx "producer" that
 * opens and closes its listener every 2 ms, so that a check of the port's owner at one moment sees no listener, answers
 * the handshake as a server without a secret, then a LEASE with a GRANT whose UCX worker address and rkey are garbage
 * (UCX aborts the process that hands such an address to it). Prints {@code PORT n}, then serves until killed.
 */
public final class FlappingUcxForger {
    private FlappingUcxForger() {}

    public static void main(String[] args) throws Exception {
        long size = Long.parseLong(args[0]);
        int port;
        try (ServerSocket first = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            port = first.getLocalPort();
        }
        System.out.println("PORT " + port);
        System.out.flush();
        while (true) {
            try (ServerSocket listener = new ServerSocket()) {
                listener.setReuseAddress(true);
                listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 50);
                listener.setSoTimeout(2);
                try {
                    Socket s = listener.accept();
                    Thread.ofVirtual().start(() -> answer(s, size));
                } catch (SocketTimeoutException e) {
                    // close, and listen again 2 ms later
                }
            } catch (IOException e) {
                // the port is busy for a moment: try again
            }
            Thread.sleep(2);
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
        } catch (IOException e) {
            // the consumer hung up
        }
    }
}
