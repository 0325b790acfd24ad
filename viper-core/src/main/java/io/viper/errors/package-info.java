/**
 * The exception hierarchy of Viper: one unchecked root, {@link io.viper.errors.ViperException}, whose
 * {@link io.viper.errors.ViperException.Reason reason} decides both the type it is thrown as and whether trying again
 * may help. As in Kafka's clients, a caller can tell from the type alone: catch
 * {@link io.viper.errors.RetriableViperException} to retry or fall back, a subtype to act on one kind of failure.
 *
 * <table>
 * <caption>Reason, type, retriable</caption>
 * <tr><th>reason</th><th>thrown as</th><th>retriable</th></tr>
 * <tr><td>FORMAT</td><td>{@link io.viper.errors.ViperFormatException}</td><td>no</td></tr>
 * <tr><td>CONFIG</td><td>{@link io.viper.errors.ViperConfigException}</td><td>no</td></tr>
 * <tr><td>NOT_FOUND</td><td>{@link io.viper.errors.ViperNotFoundException}</td><td>no</td></tr>
 * <tr><td>UNSUPPORTED</td><td>{@link io.viper.errors.ViperUnsupportedException}</td><td>no</td></tr>
 * <tr><td>CLOSED</td><td>{@link io.viper.errors.ViperClosedException}</td><td>no</td></tr>
 * <tr><td>IO</td><td>{@link io.viper.errors.ViperException}</td><td>no</td></tr>
 * <tr><td>INTERNAL</td><td>{@link io.viper.errors.ViperException}</td><td>no</td></tr>
 * <tr><td>TRANSFER</td><td>{@link io.viper.errors.RetriableViperException}</td><td>yes</td></tr>
 * <tr><td>UNAVAILABLE</td><td>{@link io.viper.errors.RetriableViperException};
 * {@link io.viper.errors.ViperMemoryException} when a memory budget has no room</td><td>yes</td></tr>
 * <tr><td>TIMEOUT</td><td>{@link io.viper.errors.ViperTimeoutException}</td><td>yes</td></tr>
 * <tr><td>CORRUPT</td><td>{@link io.viper.errors.ViperCorruptDataException}</td><td>yes</td></tr>
 * </table>
 *
 * <p>Build an exception with a subtype's constructor, which fixes the reason, or with
 * {@link io.viper.errors.ViperException#of(io.viper.errors.ViperException.Reason, String, Throwable)} where the reason
 * is a value; {@code RetriableViperException} refuses a reason that is not retriable. A consumer falls back to a
 * version's next location on any failure of a transport, retriable or not.
 */
package io.viper.errors;
