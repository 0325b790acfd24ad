package io.viper.config;

/** The kind of value a {@link ConfigKey} takes, as {@code viper config} and docs/configuration.md name it. */
public enum ConfigType {
    INT("int"),
    LONG("long"),
    /** A byte count: a plain number or one with a k, m, g or t suffix (see {@link ConfigValues#parseSize}). */
    SIZE("size"),
    BOOLEAN("boolean"),
    STRING("string"),
    URI("uri"),
    /** Comma-separated URIs. */
    URI_LIST("uri list"),
    /** Comma-separated names. */
    LIST("list"),
    PATH("path");

    private final String docName;

    ConfigType(String docName) {
        this.docName = docName;
    }

    /** The name documentation uses ({@code int}, {@code size}, {@code uri list}, ...). */
    @Override
    public String toString() {
        return docName;
    }
}
