package io.viper.architecture;

import java.util.Locale;

/** Classes that break one rule each, for the tests that check the rules can fail. */
final class Fixtures {
    private Fixtures() {}

    /** Plays a viper-core class that imports UCX. */
    static final class UsesUcx {
        org.openucx.jucx.ucp.UcpContext context;
    }

    /** Plays a class of another transport that reaches into tcp's internals. */
    static final class UsesTcpInternals {
        int frame = io.viper.transfer.tcp.internal.TcpProtocol.MAX_RESPONSE_FRAME + hashCode();

        String name(int type) {
            return io.viper.transfer.tcp.internal.TcpProtocol.typeName(type);
        }
    }

    /** Plays a predictor class that uses the scheduler above it. */
    static final class UsesScheduler {
        io.viper.scheduler.Schedule schedule;
    }

    /**
     * Logs numbers through MessageFormat in the first three methods, strings or numbers it formatted itself in the
     * others.
     */
    static final class LogsNumbers {
        private static final System.Logger LOG = System.getLogger(LogsNumbers.class.getName());

        void aLong(String model, long backoff) {
            LOG.log(System.Logger.Level.WARNING, "consumer {0}: retrying in {1} ms", model, backoff);
        }

        void aDouble(double ms) {
            LOG.log(System.Logger.Level.INFO, "took {0} ms", ms);
        }

        void aLongBeforeItsOwnFormat(long bytes, double ms) {
            LOG.log(System.Logger.Level.INFO, "{0} bytes in {1} ms", bytes, String.format(Locale.ROOT, "%.1f", ms));
        }

        void aString(String model, long backoff) {
            LOG.log(System.Logger.Level.WARNING, "consumer {0}: retrying in {1} ms", model, Long.toString(backoff));
        }

        void formattedItself(double ms, int n) {
            LOG.log(
                    System.Logger.Level.INFO,
                    "took {0} ms over {1} tries",
                    String.format(Locale.ROOT, "%.1f", ms),
                    String.format("%d", n));
        }
    }
}
