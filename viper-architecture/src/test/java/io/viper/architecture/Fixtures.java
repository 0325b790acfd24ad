package io.viper.architecture;

/** Classes that break one rule each, for the tests that check the rules can fail. */
final class Fixtures {
    private Fixtures() {
    }

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
}
