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
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.PublicKey;
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
 * token ({@value #CONSUMER_TOKEN_PREFIX} and, in base64, the consumer key and the public half of the manifest signing
 * key: what {@code viper secret --consumer} prints), which grants only {@link Role#CONSUMER}. The key of each role, and
 * the seed of the Ed25519 key that signs manifests ({@link ManifestTrust}), are derived from the producer secret with
 * HKDF-SHA256, so a consumer token reveals nothing that lets its holder publish or sign. Like ssh with private keys, a
 * file that its group or other users may read or write is refused.
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

    /**
     * The first byte of a consumer token's bytes: its format, 2 (1 was the bare 32-byte key, without the public key).
     */
    private static final int TOKEN_FORMAT = 2;

    private final String source;
    private final Role role;
    private final byte[] producerKey;
    private final byte[] consumerKey;
    private final PrivateKey signingKey;
    private final PublicKey verifyKey;

    private Secret(
            String source,
            Role role,
            byte[] producerKey,
            byte[] consumerKey,
            PrivateKey signingKey,
            PublicKey verifyKey) {
        this.source = source;
        this.role = role;
        this.producerKey = producerKey;
        this.consumerKey = consumerKey;
        this.signingKey = signingKey;
        this.verifyKey = verifyKey;
    }

    /**
     * The secret {@code viper.auth.secret.file} names; without it, this user's own secret
     * ({@code viper.auth.user.secret}, made on first use: {@link UserSecret}); empty only when that key is {@code off}.
     *
     * @throws ViperConfigException when the file is unusable, or this user's secret cannot be made
     */
    public static Optional<Secret> fromConfig(ViperConfig config) {
        Optional<Path> file = config.get(ViperConfig.AUTH_SECRET_FILE);
        if (file.isPresent()) {
            return Optional.of(load(file.get()));
        }
        return UserSecret.file(config).map(UserSecret::loadOrCreate);
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
            return parseToken(text.substring(CONSUMER_TOKEN_PREFIX.length()), what);
        }
        if (text.length() < MIN_SECRET_CHARS) {
            throw new ViperConfigException(what + ": the secret has " + text.length() + " characters, at least "
                    + MIN_SECRET_CHARS + " are needed (viper secret --out FILE makes one)");
        }
        byte[] master = text.getBytes(StandardCharsets.UTF_8);
        byte[] prk = hmac(SALT, master);
        Arrays.fill(master, (byte) 0);
        byte[] seed = expand(prk, "manifest signing");
        KeyPair signing = SigningKeys.derive(seed);
        Arrays.fill(seed, (byte) 0);
        return new Secret(
                what,
                Role.PRODUCER,
                expand(prk, "producer"),
                expand(prk, "consumer"),
                signing.getPrivate(),
                signing.getPublic());
    }

    /**
     * A consumer token's bytes: the format byte {@value #TOKEN_FORMAT}, the consumer key (32 bytes), the manifest
     * signing key's public half (32 bytes); later formats may append fields, which this reader ignores.
     */
    private static Secret parseToken(String base64, String what) {
        byte[] b;
        try {
            b = Base64.getUrlDecoder().decode(base64);
        } catch (IllegalArgumentException e) {
            throw new ViperConfigException(what + ": the consumer token is not base64 (" + e.getMessage() + ")");
        }
        if (b.length == SigningKeys.KEY_BYTES) {
            throw new ViperConfigException(what + ": a consumer token of an older Viper, without the key that checks"
                    + " manifests' signatures; make a new one with viper secret --consumer --from SECRET_FILE");
        }
        if (b.length < 1 + 2 * SigningKeys.KEY_BYTES || b[0] != TOKEN_FORMAT) {
            throw new ViperConfigException(what + ": not a consumer token (" + b.length + " bytes, format "
                    + (b.length == 0 ? "none" : b[0]) + "; this reader knows format " + TOKEN_FORMAT + ")");
        }
        byte[] key = Arrays.copyOfRange(b, 1, 1 + SigningKeys.KEY_BYTES);
        try {
            PublicKey verify = SigningKeys.publicKey(
                    Arrays.copyOfRange(b, 1 + SigningKeys.KEY_BYTES, 1 + 2 * SigningKeys.KEY_BYTES));
            return new Secret(what, Role.CONSUMER, null, key, null, verify);
        } catch (GeneralSecurityException e) {
            throw new ViperConfigException(
                    what + ": the consumer token's manifest key is malformed: " + e.getMessage());
        }
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
        byte[] b = new byte[1 + 2 * SigningKeys.KEY_BYTES];
        b[0] = TOKEN_FORMAT;
        System.arraycopy(consumerKey, 0, b, 1, SigningKeys.KEY_BYTES);
        System.arraycopy(SigningKeys.raw(verifyKey), 0, b, 1 + SigningKeys.KEY_BYTES, SigningKeys.KEY_BYTES);
        return CONSUMER_TOKEN_PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /** The key that signs manifests: only a producer secret holds it. For {@link ManifestTrust}. */
    Optional<PrivateKey> signingKey() {
        return Optional.ofNullable(signingKey);
    }

    /** The key that checks manifests' signatures, which every secret and token holds. For {@link ManifestTrust}. */
    PublicKey verifyKey() {
        return verifyKey;
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
