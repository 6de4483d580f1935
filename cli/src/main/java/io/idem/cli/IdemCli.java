package io.idem.cli;

import io.idem.StoreUnavailableException;
import io.idem.deadletters.DeadLetterException;
import io.idem.deadletters.DeadLetterListener;
import java.io.PrintWriter;
import java.util.Objects;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code idem-cli}: the operator's command line. {@code idem-cli dead-letters list|show|replay|discard}
 * (docs/DEAD-LETTERS.md). Exit status: {@value #EXIT_OK} done; {@value #EXIT_FAILURE} something
 * failed or was refused (one line each on standard error; a destination or queue that does not
 * exist, a broker or database that cannot be reached); {@value #EXIT_USAGE} a usage error;
 * {@value #EXIT_NOTHING_MATCHED} the selection matched no dead letter.
 */
@Command(
    name = "idem-cli",
    mixinStandardHelpOptions = true,
    versionProvider = IdemCli.Version.class,
    usageHelpAutoWidth = true,
    description = "Operates Idem: list, show, replay and discard dead letters on Kafka, RabbitMQ, SQS and JMS.",
    subcommands = {DeadLettersCommand.class},
    footer = {"%nExit status: 0 done; 1 failed or refused; 2 usage error; 3 the selection matched nothing."})
public final class IdemCli implements Runnable {
  static final int EXIT_OK = 0;
  static final int EXIT_FAILURE = 1;
  static final int EXIT_USAGE = 2;
  static final int EXIT_NOTHING_MATCHED = 3;

  private final DeadLetterListener listener;

  /** The command with no extra listener. */
  public IdemCli() {
    this(new DeadLetterListener() {});
  }

  /**
   * The command calling {@code listener} around each replay and discard step, besides its own
   * output (for embedding, and the crash tests).
   */
  public IdemCli(DeadLetterListener listener) {
    this.listener = Objects.requireNonNull(listener, "listener");
  }

  DeadLetterListener listener() {
    return listener;
  }

  /** {@code --version}: the Implementation-Version of the jar's manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String version = IdemCli.class.getPackage().getImplementationVersion();
      return new String[] {"idem-cli " + (version != null ? version : "(development build: no jar manifest)")};
    }
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(new CommandLine(this), "a command is required: dead-letters");
  }

  /** Logback's configuration for the command, unless one is given: its own warnings to standard error only. */
  static final String LOGGING = "idem-cli-logback.xml";

  public static void main(String[] args) {
    if (System.getProperty("logback.configurationFile") == null) {
      // not logback.xml: the jar is also a library (the main job's), whose application configures logging
      System.setProperty("logback.configurationFile", LOGGING);
    }
    System.exit(commandLine(new IdemCli()).execute(args));
  }

  /**
   * The command line for {@code cli}: a usage error prints that one error and a hint on standard
   * error and exits {@value #EXIT_USAGE}; a failure prints {@code idem-cli: <what>} on one line and
   * exits with its status.
   */
  public static CommandLine commandLine(IdemCli cli) {
    CommandLine commandLine = new CommandLine(cli);
    commandLine.setCaseInsensitiveEnumValuesAllowed(true);
    commandLine.setParameterExceptionHandler((e, args) -> {
      PrintWriter err = e.getCommandLine().getErr();
      err.println("idem-cli: " + e.getMessage());
      err.println("try --help for the options");
      err.flush();
      return EXIT_USAGE;
    });
    commandLine.setExecutionExceptionHandler((e, cmd, parsed) -> {
      PrintWriter err = cmd.getErr();
      int status;
      if (e instanceof CliFailure f) {
        status = f.exitCode();
      } else if (e instanceof DeadLetterException || e instanceof StoreUnavailableException
          || e instanceof IllegalStateException || e instanceof IllegalArgumentException) {
        status = EXIT_FAILURE;
      } else {
        throw e;
      }
      err.println("idem-cli: " + oneLine(e));
      if (status == EXIT_USAGE) {
        err.println("try --help for the options");
      }
      err.flush();
      return status;
    });
    return commandLine;
  }

  static String oneLine(Throwable e) {
    String text = e.getMessage() == null ? e.toString() : e.getMessage();
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }
}
