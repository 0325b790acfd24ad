package io.viper.auth;

import io.viper.ViperConfig;
import io.viper.errors.IoProblems;
import io.viper.errors.ViperConfigException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Optional;
import java.util.Set;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The credentials of this process, read from the file {@code viper.auth.secret.file} names (never from the command
 * line, where other users could read them in the process list).
 *
 * <p>The file holds either a producer secret (any text of at least {@value #MIN_SECRET_CHARS} characters, such as
 * {@code openssl rand -hex 32}, or what {@code viper secret --out FILE} writes), which grants both roles, or a consumer
 * token ({@value #CONSUMER_TOKEN_PREFIX} and the consumer key in base64, what {@code viper secret --consumer} prints),
 * which grants only {@link Role#CONSUMER}. The key of each role is derived from the producer secret with HKDF-SHA256,
 * so a consumer token reveals nothing that lets its holder publish. Like ssh with private keys, a file that its group
 * or other users may read or write is refused.
 *
 * <p>Immutable and thread-safe; {@link #toString()} never shows a key.
 */
public final class Secret {
    /** What starts a consumer token. */
    public static final String CONSUMER_TOKEN_PREFIX = "viper-consumer-token:";
    /** The shortest producer secret accepted, in characters. */
    public static final int MIN_SECRET_CHARS = 16;

    private static final int MAX_FILE_BYTES = 4096;
    private static final byte[] SALT = "viper-auth-v1".getBytes(StandardCharsets.US_ASCII);
    private static final Set<PosixFilePermission> PRIVATE_ONLY = EnumSet.of(
            PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);

    private final String source;
    private final Role role;
    private final byte[] producerKey;
    private final byte[] consumerKey;

    private Secret(String source, Role role, byte[] producerKey, byte[] consumerKey) {
        this.source = source;
        this.role = role;
        this.producerKey = producerKey;
        this.consumerKey = consumerKey;
    }

    /** The secret {@code viper.auth.secret.file} names, or empty when that key is not set. */
    public static Optional<Secret> fromConfig(ViperConfig config) {
        return config.get(ViperConfig.AUTH_SECRET_FILE).map(Secret::load);
    }

    /**
     * Reads a secret file, the one {@code viper.auth.secret.file} names.
     *
     * @throws ViperConfigException naming the key, the file and the problem: missing, not a regular file, readable or
     *     writable by group or others, too large, not UTF-8, too short, a malformed token
     */
    public static Secret load(Path file) {
        return load(file, ViperConfig.AUTH_SECRET_FILE.name() + " " + file);
    }

    /**
     * Reads a secret file that {@code what} names in messages (e.g. the flag that gave it and the path).
     *
     * @throws ViperConfigException as {@link #load(Path)} does, beginning with {@code what}
     */
    public static Secret load(Path file, String what) {
        byte[] bytes;
        try {
            requirePrivate(file, what);
            if (Files.size(file) > MAX_FILE_BYTES) {
                throw new ViperConfigException(
                        what + ": larger than " + MAX_FILE_BYTES + " bytes; it should hold one secret");
            }
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new ViperConfigException(what + ": no such file");
        } catch (IOException e) {
            throw new ViperConfigException(what + ": cannot read: " + IoProblems.reason(e));
        }
        String text;
        try {
            text = StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString()
                    .strip();
        } catch (CharacterCodingException e) {
            throw new ViperConfigException(what + ": not UTF-8 text");
        } finally {
            Arrays.fill(bytes, (byte) 0);
        }
        return parse(text, what);
    }

    /**
     * Refuses {@code file} unless it is a regular file that only its owner may access, as ssh does with private keys;
     * {@code what} names it in the message (the key and the path).
     *
     * @throws ViperConfigException naming the problem
     */
    public static void requirePrivate(Path file, String what) {
        try {
            if (!Files.isRegularFile(file)) {
                throw new ViperConfigException(
                        what + ": " + (Files.exists(file) ? "not a regular file" : "no such file"));
            }
            if (Files.getFileAttributeView(file, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS) != null) {
                Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
                if (!PRIVATE_ONLY.containsAll(perms)) {
                    throw new ViperConfigException(
                            what + ": group or other users may access it (mode " + PosixFilePermissions.toString(perms)
                                    + "); chmod 600 it, as ssh requires of private keys");
                }
            }
        } catch (IOException e) {
            throw new ViperConfigException(what + ": cannot read: " + IoProblems.reason(e));
        }
    }

    /**
     * A secret from its text (what a secret file holds: a producer secret or a consumer token), for callers that keep
     * it elsewhere than in a file; {@code what} names its source in messages.
     *
     * @throws ViperConfigException when it is too short or a malformed token
     */
    public static Secret parse(String text, String what) {
        if (text.startsWith(CONSUMER_TOKEN_PREFIX)) {
            byte[] key;
            try {
                key = Base64.getUrlDecoder().decode(text.substring(CONSUMER_TOKEN_PREFIX.length()));
            } catch (IllegalArgumentException e) {
                throw new ViperConfigException(what + ": the consumer token is not base64 (" + e.getMessage() + ")");
            }
            if (key.length != 32) {
                throw new ViperConfigException(
                        what + ": the consumer token holds " + key.length + " bytes, expected 32");
            }
            return new Secret(what, Role.CONSUMER, null, key);
        }
        if (text.length() < MIN_SECRET_CHARS) {
            throw new ViperConfigException(what + ": the secret has " + text.length() + " characters, at least "
                    + MIN_SECRET_CHARS + " are needed (viper secret --out FILE makes one)");
        }
        byte[] master = text.getBytes(StandardCharsets.UTF_8);
        byte[] prk = hmac(SALT, master);
        Arrays.fill(master, (byte) 0);
        return new Secret(what, Role.PRODUCER, expand(prk, "producer"), expand(prk, "consumer"));
    }

    /** A new producer secret, as the text a secret file holds: 64 random hex digits. */
    public static String generate() {
        byte[] b = new byte[32];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    /** The most this secret grants: {@link Role#PRODUCER} for a producer secret, else {@link Role#CONSUMER}. */
    public Role role() {
        return role;
    }

    /** Whether this secret grants {@code r}. */
    public boolean grants(Role r) {
        return r == Role.CONSUMER || role == Role.PRODUCER;
    }

    /** The consumer token to hand to consumers, which lets them subscribe and read but not publish. */
    public String consumerToken() {
        return CONSUMER_TOKEN_PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(consumerKey);
    }

    /** The key of {@code r}, or empty when this secret does not grant it. For {@link Handshake}. */
    Optional<byte[]> key(Role r) {
        if (r == Role.PRODUCER) {
            return Optional.ofNullable(producerKey).map(byte[]::clone);
        }
        return Optional.of(consumerKey.clone());
    }

    /** HMAC-SHA256 of {@code data} under {@code key}. */
    static byte[] hmac(byte[] key, byte[]... data) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            for (byte[] d : data) {
                mac.update(d);
            }
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }

    /** HKDF-Expand (RFC 5869) of one 32-byte block for {@code info}. */
    private static byte[] expand(byte[] prk, String info) {
        return hmac(prk, ("viper " + info + " key").getBytes(StandardCharsets.US_ASCII), new byte[] {1});
    }

    @Override
    public String toString() {
        return (role == Role.PRODUCER ? "producer secret" : "consumer token") + " from " + source;
    }
}
