package io.viper.cli;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperException;
import java.io.PrintWriter;
import java.nio.file.Path;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * Entry point of the {@code viper} command. Every failure prints one line {@code viper: <problem>} on stderr, no usage
 * and no stack trace unless {@code VIPER_DEBUG=1}, and exits with the code {@link #exitCode(Throwable)} picks:
 * {@link #EXIT_USAGE} for refused input, {@link #EXIT_FAILURE} for an operational failure; {@code consume --timeout}
 * adds {@link #EXIT_NO_UPDATE}.
 */
@Command(
        name = "viper",
        mixinStandardHelpOptions = true,
        versionProvider = ViperMain.Version.class,
        description = "Moves freshly trained models from a training job to inference servers, and decides when.",
        subcommands = {
            CommandLine.HelpCommand.class,
            InspectCommand.class,
            PublishCommand.class,
            ConsumeCommand.class,
            ExportCommand.class,
            BenchCommand.class,
            BrokerCommand.class,
            SecretCommand.class,
            AgentCommand.class,
            ConfigCommand.class,
            ScheduleCommand.class,
            DemoCommand.class,
        })
public final class ViperMain implements Runnable {
    /**
     * Exit code for refused input: a flag, configuration or file, an unknown model or version, what this machine lacks.
     */
    public static final int EXIT_USAGE = 2;
    /** Exit code for an operational failure: a timeout, I/O (a full disk), an unreachable peer, a bug. */
    public static final int EXIT_FAILURE = 1;
    /** Exit code of {@code consume --timeout} when no update arrived in time. */
    public static final int EXIT_NO_UPDATE = 3;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    public static void main(String[] args) {
        System.exit(execute(
                args,
                new PrintWriter(System.out, true, System.out.charset()),
                new PrintWriter(System.err, true, System.err.charset())));
    }

    /** Runs the command line and returns its exit code; used by tests without spawning a JVM. */
    public static int execute(String[] args, PrintWriter out, PrintWriter err) {
        return execute(new CommandLine(new ViperMain()), args, out, err);
    }

    /** Runs {@code cl} with viper's error handling: one line on {@code err} and {@link #exitCode}. */
    static int execute(CommandLine cl, String[] args, PrintWriter out, PrintWriter err) {
        cl.setOut(out);
        cl.setErr(err);
        cl.setExitCodeExceptionMapper(ViperMain::exitCode);
        // Path.of("") is the working directory, so an empty value would be read as it and the
        // message would name a path the user never gave.
        cl.registerConverter(Path.class, ViperMain::nonEmptyPath);
        cl.setParameterExceptionHandler((e, a) -> {
            CommandLine c = e.getCommandLine();
            // One line and where to look, not the whole usage: the problem stays on the screen.
            // picocli words a map option's format error "Value for option option '--set' ...".
            String problem = IoProblems.oneLine(e).replace("option option '", "option '");
            c.getErr()
                    .println(
                            "viper: " + problem + " (see '" + c.getCommandSpec().qualifiedName() + " --help')");
            return exitCode(e);
        });
        cl.setExecutionExceptionHandler((e, c, parseResult) -> {
            if (System.getenv("VIPER_DEBUG") != null) {
                e.printStackTrace(c.getErr());
            }
            c.getErr().println("viper: " + IoProblems.oneLine(e));
            return exitCode(e);
        });
        // Every command logs in CliLogging's one-line records, warnings only: without this, the commands
        // that do not configure logging themselves (export, bench repository) printed the JDK's two-line
        // records, INFO included. A command's --verbose configures it again.
        CliLogging.configure(false);
        try {
            return cl.execute(args);
        } catch (OutOfMemoryError e) {
            // picocli hands only Exceptions to the handler above; an allocation the heap or the
            // machine cannot hold is the one Error a user's input causes.
            if (System.getenv("VIPER_DEBUG") != null) {
                e.printStackTrace(err);
            }
            err.println("viper: out of memory: " + IoProblems.oneLine(e)
                    + " (ask for less, or give the JVM more with VIPER_JAVA_OPTS, e.g. -Xmx8g)");
            err.flush();
            return EXIT_FAILURE;
        }
    }

    /** The value of a path flag or parameter: refused when empty or blank. */
    static Path nonEmptyPath(String value) {
        if (value.isBlank()) {
            throw new CommandLine.TypeConversionException("an empty path");
        }
        return Path.of(value);
    }

    /**
     * The exit code for a failure: {@link #EXIT_USAGE} for refused input (a bad flag, and the reasons CONFIG, FORMAT,
     * NOT_FOUND and UNSUPPORTED: the command line, a file or this machine has to change; also any failure caused by a
     * missing file or directory, a permission, a path that is not a directory or a port in use:
     * {@link IoProblems#isCallersToFix}), {@link #EXIT_FAILURE} for everything else (timeouts, transfers, unreachable
     * peers, I/O, use after close, bugs, exceptions that are not Viper's).
     */
    static int exitCode(Throwable e) {
        if (e instanceof CommandLine.ParameterException || IoProblems.isCallersToFix(e)) {
            return EXIT_USAGE;
        }
        if (!(e instanceof ViperException ve)) {
            return EXIT_FAILURE;
        }
        return switch (ve.reason()) {
            case CONFIG, FORMAT, NOT_FOUND, UNSUPPORTED -> EXIT_USAGE;
            case CORRUPT, TRANSFER, UNAVAILABLE, TIMEOUT, CLOSED, IO, INTERNAL -> EXIT_FAILURE;
        };
    }

    /** Reads the version from the jar manifest (set by Maven), else "dev". */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = ViperMain.class.getPackage().getImplementationVersion();
            return new String[] {
                "viper " + (v == null ? "dev" : v),
                "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"
            };
        }
    }
}
