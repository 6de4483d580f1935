package io.idem.cli;

import io.idem.deadletters.DeadLetter;
import io.idem.deadletters.DeadLetterOperations;
import io.idem.deadletters.spi.DeadLetterDestination;
import io.idem.store.jdbc.DeadLetterActions;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code dead-letters show ID}: one dead letter's headers, Idem reason and payload. */
@Command(name = "show", mixinStandardHelpOptions = true,
    description = "Shows one dead letter: its Idem reason, headers and payload (--redact hides the payload and every"
        + " header value but Idem's), and what the tool did with it before. Removes nothing.")
final class ShowCommand extends DeadLetterCommand {

  @Parameters(index = "0", paramLabel = "ID", description = "The dead letter's id, as list shows it.")
  String id;

  @Option(names = "--redact", description = "Hide the payload and every header value but Idem's own.")
  boolean redact;

  @Override
  int run(boolean json) {
    try (DeadLetterDestination destination = connection.destination(null)) {
      DeadLetterActions actions = optionalActions();
      DeadLetterOperations ops = operations(destination).actions(actions).build();
      List<DeadLetter> found = ops.show(id);
      if (found.isEmpty()) {
        err().println("idem-cli: no dead letter with id " + id + " in " + destination.name());
        return IdemCli.EXIT_NOTHING_MATCHED;
      }
      List<DeadLetterActions.Action> history = actions == null ? List.of() : actions.history(destination.name(), id, 20);
      if (json) {
        Output.json(out(), found.size() == 1 ? Output.deadLetterJson(found.get(0), true, redact)
            : found.stream().map(d -> Output.deadLetterJson(d, true, redact)).toList());
      } else {
        for (int i = 0; i < found.size(); i++) {
          if (i > 0) {
            out().println();
            out().println("(another copy with the same id: the broker stored it twice)");
          }
          Output.show(out(), found.get(i), redact, i == 0 ? history : List.of());
        }
      }
      return IdemCli.EXIT_OK;
    }
  }
}
