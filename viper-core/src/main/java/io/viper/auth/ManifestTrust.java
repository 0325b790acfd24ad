package io.viper.auth;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import java.nio.charset.StandardCharsets;
import java.security.PrivateKey;
import java.util.Arrays;
import java.util.Base64;
import java.util.Optional;

/**
 * Whether an announced manifest may be acted on: signed by a holder of the producer's key, and numbered no further
 * ahead than {@code viper.versions.max.jump}. Producers {@link #seal} the manifests they announce; brokers and
 * consumers {@link #open} what they receive, through any notifier, and act only on what it returns.
 *
 * <p>The signature is Ed25519 (the JDK's), under a key derived from the producer secret ({@link Secret}): every
 * producer of a deployment signs with it, and consumer tokens carry only its public half, so a consumer can check a
 * signature but not make one. It travels as the last member of the manifest's JSON object, {@code "sig"}, over every
 * byte before it (the whole manifest, model and version included, so that no field can be changed nor an old manifest
 * replayed as another version): the signed bytes are the sealed ones without {@code ,"sig":"..."}, and they are what
 * the receiver decodes. Readers that do not check (an older reader, a PFS copy) ignore the member.
 *
 * <p>Without a secret ({@code viper.auth.user.secret=off} and no {@code viper.auth.secret.file}) nothing is signed or
 * checked. Immutable and thread-safe.
 */
public final class ManifestTrust {
    private static final byte[] CONTEXT = "viper manifest signature v1\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] FIELD = ",\"sig\":\"".getBytes(StandardCharsets.US_ASCII);
    /** Characters of a 64-byte signature in unpadded base64. */
    private static final int SIG_CHARS = 86;

    private final Optional<Secret> secret;
    private final long maxJump;

    private ManifestTrust(Optional<Secret> secret, long maxJump) {
        this.secret = secret;
        this.maxJump = maxJump;
    }

    /**
     * The trust of this process: its secret (or this user's, {@link Secret#fromConfig}) and
     * {@code viper.versions.max.jump}.
     *
     * @throws ViperConfigException when the secret is unusable
     */
    public static ManifestTrust fromConfig(ViperConfig config) {
        return new ManifestTrust(Secret.fromConfig(config), config.get(ViperConfig.VERSIONS_MAX_JUMP));
    }

    /**
     * The trust of a holder of {@code secret} (none: nothing signed or checked) accepting jumps up to {@code maxJump}.
     */
    public static ManifestTrust of(Optional<Secret> secret, long maxJump) {
        return new ManifestTrust(secret, maxJump);
    }

    /** Whether manifests are checked (this process holds a secret or token). */
    public boolean checksSignatures() {
        return secret.isPresent();
    }

    /**
     * {@code encoded} (a manifest as {@code ManifestCodec.encode} writes it, ending with {@code '}'}) with this
     * process's signature as its last member; unchanged without a secret.
     *
     * @throws ViperConfigException when this process holds only a consumer token, which cannot sign
     */
    public byte[] seal(byte[] encoded) {
        if (secret.isEmpty()) {
            return encoded;
        }
        PrivateKey key = secret.get()
                .signingKey()
                .orElseThrow(() -> new ViperConfigException(secret.get()
                        + " cannot sign manifests: a consumer token cannot publish; use the producer secret"));
        if (encoded.length < 2 || encoded[encoded.length - 1] != '}') {
            throw new IllegalArgumentException("not an encoded manifest: it does not end with '}'");
        }
        byte[] sig = Base64.getUrlEncoder().withoutPadding().encode(SigningKeys.sign(key, CONTEXT, encoded));
        int head = encoded.length - 1;
        byte[] out = Arrays.copyOf(encoded, head + FIELD.length + sig.length + 2);
        System.arraycopy(FIELD, 0, out, head, FIELD.length);
        System.arraycopy(sig, 0, out, head + FIELD.length, sig.length);
        out[out.length - 2] = '"';
        out[out.length - 1] = '}';
        return out;
    }

    /**
     * The manifest bytes a holder of the producer's key signed, from {@code sealed} as it arrived from {@code where}:
     * decode these, not {@code sealed}. Without a secret, {@code sealed} itself.
     *
     * @throws ViperFormatException naming {@code where} when the manifest carries no signature, or one that does not
     *     verify under this deployment's key (forged, altered, or signed with another secret)
     */
    public byte[] open(byte[] sealed, String where) {
        if (secret.isEmpty()) {
            return sealed;
        }
        int n = sealed.length;
        int at = n - 2 - SIG_CHARS - FIELD.length;
        if (at < 1
                || sealed[n - 1] != '}'
                || sealed[n - 2] != '"'
                || !Arrays.equals(sealed, at, at + FIELD.length, FIELD, 0, FIELD.length)) {
            throw new ViperFormatException(
                    where,
                    "manifest is not signed; a consumer acts only on manifests signed"
                            + " with the producer's key (is the producer without this deployment's secret?)");
        }
        byte[] sig;
        try {
            sig = Base64.getUrlDecoder().decode(Arrays.copyOfRange(sealed, at + FIELD.length, n - 2));
        } catch (IllegalArgumentException e) {
            throw new ViperFormatException(where, "manifest signature is not base64");
        }
        byte[] signed = Arrays.copyOf(sealed, at + 1);
        signed[at] = '}';
        if (!SigningKeys.verify(secret.get().verifyKey(), sig, CONTEXT, signed)) {
            throw new ViperFormatException(
                    where,
                    "manifest signature does not verify under this deployment's key"
                            + " (forged or altered, or signed with another secret)");
        }
        return signed;
    }

    /**
     * Refuses {@code version} of {@code model} when it is more than {@code viper.versions.max.jump} beyond both
     * {@code newest} (the newest version known of it, 0 for none) and the wall clock in milliseconds, where a producer
     * on a new broker starts numbering: such a version would leave producers too few versions to count on, or none.
     *
     * @throws ViperFormatException naming {@code where}, the version and the key
     */
    public void checkVersion(String model, long newest, long version, String where) {
        long base = Math.max(newest, System.currentTimeMillis());
        if (version > base && version - base > maxJump) {
            throw new ViperFormatException(
                    where,
                    model + " v" + version + " is more than " + maxJump + " ahead of "
                            + (newest > 0 ? "the newest known v" + newest + " and " : "") + "the clock ("
                            + ViperConfig.VERSIONS_MAX_JUMP.name() + "); refused");
        }
    }

    @Override
    public String toString() {
        return secret.map(s -> "manifests signed with the key of the " + s).orElse("manifests not signed");
    }
}
