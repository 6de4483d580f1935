package io.idem.cli;

import io.idem.deadletters.ActionReport;
import io.idem.deadletters.ActionResult;
import io.idem.deadletters.DeadLetterListener;
import io.idem.deadletters.DeadLetterOperations;
import io.idem.deadletters.DeadLetterSelection;
import io.idem.deadletters.spi.DeadLetterDestination;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code dead-letters discard}: removes dead letters, with a record of who and why. */
@Command(name = "discard", mixinStandardHelpOptions = true,
    description = "Discards the selected dead letters: records who and why (the actions table), then removes each."
        + " The key's dead-letter decision stays in the store.")
final class DiscardCommand extends DeadLetterCommand {

  @Mixin SelectionOptions selection;

  @Option(names = "--reason", required = true, paramLabel = "TEXT", description = "Why, as recorded with each.")
  String reason;

  @Option(names = "--operator", paramLabel = "WHO", description = "Who discards, as recorded (default: user@host).")
  @Nullable String operator;

  @Option(names = "--dry-run", description = "Say what would be discarded; touch nothing.")
  boolean dryRun;

  @Override
  int run(boolean json) {
    DeadLetterSelection chosen = selection.selection("discard", false);
    if (reason.isBlank()) {
      throw new CliFailure(IdemCli.EXIT_USAGE, "--reason must say why, but was blank");
    }
    DataSource store = store("discard");
    try (DeadLetterDestination destination = connection.destination(null)) {
      DeadLetterListener printing = new DeadLetterListener() {
        @Override
        public void onRemoved(io.idem.deadletters.DeadLetter d) {
          root().listener().onRemoved(d);
        }

        @Override
        public void onResult(ActionResult r) {
          if (!json) {
            Output.result(out(), r);
          }
          root().listener().onResult(r);
        }
      };
      DeadLetterOperations.Builder b = operations(destination).listener(printing).actions(connection.actions(store));
      if (operator != null) {
        b.operator(operator);
      }
      return finish(this, b.build().discard(chosen, reason, dryRun), json);
    }
  }

  /** Prints the report's end and gives the exit status. */
  static int finish(DeadLetterCommand command, ActionReport report, boolean json) {
    if (json) {
      Output.json(command.out(), Output.reportJson(report));
    } else {
      Output.summary(command.out(), report);
    }
    if (report.isEmpty()) {
      command.err().println("idem-cli: no dead letter in " + report.destination() + " matches " + report.selection());
      return IdemCli.EXIT_NOTHING_MATCHED;
    }
    if (report.hasProblems()) {
      for (ActionResult r : report.results()) {
        if (r.outcome().isProblem()) {
          command.err().println("idem-cli: " + r.outcome() + " " + r.deadLetterId() + ": " + r.detail());
        }
      }
      return IdemCli.EXIT_FAILURE;
    }
    return IdemCli.EXIT_OK;
  }
}
