package io.viper.architecture;

import java.nio.file.Path;

/** Where the checked-out repository is, for the tests that read its files rather than its classes. */
final class Repository {
    private Repository() {}

    /** The repository root: the parent of testdata/, which the parent pom names. */
    static Path root() {
        return Path.of(System.getProperty("viper.testdata", "../testdata"))
                .toAbsolutePath()
                .normalize()
                .getParent();
    }
}
