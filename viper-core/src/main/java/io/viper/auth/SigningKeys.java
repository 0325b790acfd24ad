package io.viper.auth;

import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.spec.NamedParameterSpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The Ed25519 key pair that signs manifests, derived from a 32-byte seed (itself derived from the producer secret), so
 * that every holder of the secret signs with the same key and the public half can travel in consumer tokens. Plain JDK
 * (the {@code Ed25519} provider of {@code java.base}); stateless and thread-safe.
 */
final class SigningKeys {
    /** Bytes of a raw Ed25519 public key and of a seed. */
    static final int KEY_BYTES = 32;
    /** Bytes of an Ed25519 signature. */
    static final int SIGNATURE_BYTES = 64;

    /** The fixed DER prefix of an Ed25519 public key's X.509 encoding (RFC 8410), before the 32 raw bytes. */
    private static final byte[] X509_PREFIX = HexFormat.of().parseHex("302a300506032b6570032100");

    private SigningKeys() {}

    /**
     * The key pair whose private key is {@code seed} (RFC 8032's 32-byte secret). The JDK's generator takes the private
     * key's bytes from the random source it is given, so a source that returns the seed makes the derivation
     * deterministic; the public key is computed from it as RFC 8032 says.
     */
    static KeyPair derive(byte[] seed) {
        if (seed.length != KEY_BYTES) {
            throw new IllegalArgumentException("an Ed25519 seed has 32 bytes, got " + seed.length);
        }
        try {
            KeyPairGenerator g = KeyPairGenerator.getInstance("Ed25519");
            g.initialize(NamedParameterSpec.ED25519, new SeedSource(seed));
            return g.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("Ed25519 is part of every JDK since 15", e);
        }
    }

    /** The 32 raw bytes of {@code key} (the last ones of its X.509 encoding). */
    static byte[] raw(PublicKey key) {
        byte[] der = key.getEncoded();
        return Arrays.copyOfRange(der, der.length - KEY_BYTES, der.length);
    }

    /** The public key whose raw bytes are {@code raw}. */
    static PublicKey publicKey(byte[] raw) throws GeneralSecurityException {
        if (raw.length != KEY_BYTES) {
            throw new GeneralSecurityException("an Ed25519 public key has 32 bytes, got " + raw.length);
        }
        byte[] der = Arrays.copyOf(X509_PREFIX, X509_PREFIX.length + KEY_BYTES);
        System.arraycopy(raw, 0, der, X509_PREFIX.length, KEY_BYTES);
        return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(der));
    }

    /** The Ed25519 signature of the concatenation of {@code parts} under {@code key}. */
    static byte[] sign(PrivateKey key, byte[]... parts) {
        try {
            Signature s = Signature.getInstance("Ed25519");
            s.initSign(key);
            for (byte[] p : parts) {
                s.update(p);
            }
            return s.sign();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("Ed25519 is part of every JDK since 15", e);
        }
    }

    /** Whether {@code signature} is {@code key}'s over the concatenation of {@code parts}. */
    static boolean verify(PublicKey key, byte[] signature, byte[]... parts) {
        try {
            Signature s = Signature.getInstance("Ed25519");
            s.initVerify(key);
            for (byte[] p : parts) {
                s.update(p);
            }
            return s.verify(signature);
        } catch (GeneralSecurityException e) {
            return false; // a malformed signature (wrong length, point not on the curve) verifies nothing
        }
    }

    /** A "random" source that yields the seed: what makes {@link #derive} deterministic. One use. */
    private static final class SeedSource extends SecureRandom {
        private static final long serialVersionUID = 1L;
        private final byte[] seed;

        SeedSource(byte[] seed) {
            this.seed = seed.clone();
        }

        @Override
        public void nextBytes(byte[] bytes) {
            if (bytes.length != seed.length) {
                throw new IllegalStateException("the Ed25519 generator asked for " + bytes.length + " bytes, not 32");
            }
            System.arraycopy(seed, 0, bytes, 0, seed.length);
        }
    }
}
