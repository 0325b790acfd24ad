package io.viper.testing;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

/**
 * Certificates made at test time, so that no private key is ever committed: the JDK's {@code keytool} makes a
 * self-signed EC key pair for {@code localhost} and {@code 127.0.0.1} in a PKCS#12 store, which is then written out as
 * the PEM files Viper reads (the certificate, which clients also trust, and the unencrypted PKCS#8 key, mode 600).
 *
 * @param cert the certificate, PEM
 * @param key its private key, PEM
 */
public record TestCertificates(Path cert, Path key) {
    /** Makes a new pair in {@code dir} named {@code name}. */
    public static TestCertificates make(Path dir, String name)
            throws IOException, InterruptedException, GeneralSecurityException {
        Path store = dir.resolve(name + ".p12");
        String keytool =
                Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        Process p = new ProcessBuilder(
                        keytool,
                        "-genkeypair",
                        "-alias",
                        name,
                        "-keyalg",
                        "EC",
                        "-groupname",
                        "secp256r1",
                        "-dname",
                        "CN=localhost",
                        "-ext",
                        "san=dns:localhost,ip:127.0.0.1",
                        "-validity",
                        "2",
                        "-keystore",
                        store.toString(),
                        "-storetype",
                        "PKCS12",
                        "-storepass",
                        "changeit",
                        "-keypass",
                        "changeit")
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("keytool failed: " + out);
        }
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            ks.load(in, "changeit".toCharArray());
        }
        Certificate cert = ks.getCertificate(name);
        Key key = ks.getKey(name, "changeit".toCharArray());
        Path certFile = Files.writeString(dir.resolve(name + ".crt"), pem("CERTIFICATE", cert.getEncoded()));
        Path keyFile = dir.resolve(name + ".key");
        Files.createFile(keyFile, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(keyFile, pem("PRIVATE KEY", key.getEncoded()));
        Files.delete(store);
        return new TestCertificates(certFile, keyFile);
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                        .encodeToString(der) + "\n-----END " + type + "-----\n";
    }
}
