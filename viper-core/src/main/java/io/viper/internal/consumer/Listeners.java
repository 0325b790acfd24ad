package io.viper.internal.consumer;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * Callbacks registered by the application (manifest and update listeners). {@link #tell} calls each on the calling
 * thread; one that throws, an {@link Error} such as a failed assertion included, is logged and does not stop the others
 * or the data path. Thread-safe.
 */
final class Listeners<T> {
    private static final System.Logger LOG = System.getLogger(Listeners.class.getName());

    private final String what;
    private final List<Consumer<T>> all = new CopyOnWriteArrayList<>();

    /** @param what names them in log lines ("consumer m: update listener") */
    Listeners(String what) {
        this.what = what;
    }

    void add(Consumer<T> listener) {
        all.add(Objects.requireNonNull(listener, "listener"));
    }

    boolean isEmpty() {
        return all.isEmpty();
    }

    void tell(T value) {
        for (Consumer<T> l : all) {
            try {
                l.accept(value);
            } catch (Throwable e) {
                // Whatever the application's code throws, an AssertionError or a checked exception thrown
                // sneakily as well: the calling thread is the consumer's fetch thread or the notifier's,
                // and letting it end would stop the model's updates, and the wait for them, without a word.
                LOG.log(System.Logger.Level.WARNING, what + " failed: " + e, e);
            }
        }
    }
}
