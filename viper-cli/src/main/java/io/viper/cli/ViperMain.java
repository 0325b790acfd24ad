package io.viper.cli;

import io.viper.errors.ViperException;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * Entry point of the {@code viper} command. Errors a user can cause (bad files, flags, config)
 * print one line {@code viper: <problem>} on stderr and exit with {@link #EXIT_USAGE}; no stack
 * trace unless {@code VIPER_DEBUG=1}.
 */
@Command(name = "viper",
        mixinStandardHelpOptions = true,
        versionProvider = ViperMain.Version.class,
        description = "Moves freshly trained models from a training job to inference servers, and decides when.",
        subcommands = {
            CommandLine.HelpCommand.class,
            InspectCommand.class,
            PublishCommand.class,
            ConsumeCommand.class,
            BenchCommand.class,
            BrokerCommand.class,
            ConfigCommand.class,
            ScheduleCommand.class,
            DemoCommand.class,
        })
public final class ViperMain implements Runnable {
    /** Exit code for a refused input, a bad flag or configuration. */
    public static final int EXIT_USAGE = 2;
    /** Exit code for a failure that is not the user's (I/O, a bug). */
    public static final int EXIT_FAILURE = 1;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    public static void main(String[] args) {
        System.exit(execute(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
    }

    /** Runs the command line and returns its exit code; used by tests without spawning a JVM. */
    public static int execute(String[] args, PrintWriter out, PrintWriter err) {
        CommandLine cl = new CommandLine(new ViperMain());
        cl.setOut(out);
        cl.setErr(err);
        cl.setExitCodeExceptionMapper(e -> e instanceof ViperException ? EXIT_USAGE : EXIT_FAILURE);
        cl.setParameterExceptionHandler((e, a) -> {
            CommandLine c = e.getCommandLine();
            c.getErr().println("viper: " + e.getMessage());
            c.usage(c.getErr());
            return EXIT_USAGE;
        });
        cl.setExecutionExceptionHandler((e, c, parseResult) -> {
            if (System.getenv("VIPER_DEBUG") != null) {
                e.printStackTrace(c.getErr());
            }
            c.getErr().println("viper: " + oneLine(e));
            return e instanceof ViperException ? EXIT_USAGE : EXIT_FAILURE;
        });
        return cl.execute(args);
    }

    /** One line for a user: the message, or the type when there is none. */
    static String oneLine(Throwable e) {
        String m = e.getMessage();
        if (m == null || m.isBlank()) {
            m = e.getClass().getSimpleName();
        }
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }

    /** Reads the version from the jar manifest (set by Maven), else "dev". */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = ViperMain.class.getPackage().getImplementationVersion();
            return new String[] {"viper " + (v == null ? "dev" : v),
                "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"};
        }
    }
}
