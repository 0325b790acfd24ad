package io.viper.cli;

import io.viper.auth.Secret;
import io.viper.errors.ViperConfigException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code viper secret}: makes the shared secret file, or the consumer token derived from it. */
@Command(
        name = "secret",
        mixinStandardHelpOptions = true,
        description = {
            "Make a new shared secret file (mode 600) for viper.auth.secret.file.",
            "With --consumer, derive the consumer token from one instead: it lets consumers subscribe and read, but"
                    + " not publish."
        })
final class SecretCommand implements Callable<Integer> {
    @Option(
            names = "--out",
            paramLabel = "FILE",
            description = "Write to this new file (mode 600); without it the token is printed (--consumer only)")
    Path out;

    @Option(names = "--consumer", description = "Derive the consumer token from the producer secret in --from")
    boolean consumer;

    @Option(
            names = "--from",
            paramLabel = "FILE",
            description = "The producer secret file to derive the consumer token from")
    Path from;

    @Override
    public Integer call() throws IOException {
        String text;
        if (consumer) {
            if (from == null) {
                throw new ViperConfigException(
                        "--consumer needs --from FILE, the producer secret to derive the token from");
            }
            text = Secret.load(from, "--from " + from).consumerToken(); // the flag the user gave, not the key
            if (out == null) {
                System.out.println(text);
                return 0;
            }
        } else {
            if (from != null) {
                throw new ViperConfigException("--from goes with --consumer");
            }
            if (out == null) {
                throw new ViperConfigException(
                        "a new secret needs --out FILE (it is never printed, so that it stays out of terminals and"
                                + " logs)");
            }
            text = Secret.generate();
        }
        try {
            Files.createFile(out, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (FileAlreadyExistsException e) {
            throw new ViperConfigException("--out " + out + ": exists already; not overwriting a secret");
        }
        Files.writeString(out, text + "\n", StandardCharsets.UTF_8);
        System.out.println("wrote " + (consumer ? "a consumer token" : "a new secret") + " to " + out
                + " (mode 600); set viper.auth.secret.file to it");
        return 0;
    }
}
