package io.idem.cli;

import io.idem.deadletters.DeadLetter;
import io.idem.deadletters.DeadLetterGroup;
import io.idem.deadletters.DeadLetterOperations;
import io.idem.deadletters.DeadLetterSelection;
import io.idem.deadletters.spi.DeadLetterDestination;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code dead-letters list}: the dead letters, grouped, read without removing any. */
@Command(name = "list", mixinStandardHelpOptions = true,
    description = "Lists the dead letters grouped by cause, source, exception type and consumer group, with counts"
        + " and first/last times; --messages adds one row per dead letter. Removes nothing.")
final class ListCommand extends DeadLetterCommand {

  @Mixin SelectionOptions selection;

  @Option(names = "--messages", description = "Also one row per dead letter.")
  boolean messages;

  @Override
  int run(boolean json) {
    DeadLetterSelection chosen = selection.selection("list", true);
    try (DeadLetterDestination destination = connection.destination(null)) {
      DeadLetterOperations ops = operations(destination).actions(optionalActions()).build();
      List<DeadLetter> all = ops.list(DeadLetterSelection.all());
      boolean truncated = all.size() >= connection.maxScan;
      List<DeadLetter> found = all.stream().filter(chosen::matches).toList();
      List<DeadLetterGroup> groups = DeadLetterGroup.of(found);
      if (json) {
        Output.json(out(), Output.listJson(destination.name(), destination.broker(), groups, found, truncated));
      } else {
        Output.groups(out(), destination.name(), destination.broker(), groups, found.size(), truncated);
        if (messages) {
          out().println();
          Output.messages(out(), found);
        }
      }
      if (found.isEmpty() && !chosen.isAll()) {
        err().println("idem-cli: no dead letter in " + destination.name() + " matches " + chosen.describe());
        return IdemCli.EXIT_NOTHING_MATCHED;
      }
      return IdemCli.EXIT_OK;
    }
  }
}
