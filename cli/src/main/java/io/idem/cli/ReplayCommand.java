package io.idem.cli;

import io.idem.deadletters.ActionReport;
import io.idem.deadletters.DeadLetterListener;
import io.idem.deadletters.DeadLetterOperations;
import io.idem.deadletters.DeadLetterSelection;
import io.idem.deadletters.ReplayOptions;
import io.idem.deadletters.ActionResult;
import io.idem.deadletters.spi.DeadLetterDestination;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code dead-letters replay}: back to the source, through the processed-events store. */
@Command(name = "replay", mixinStandardHelpOptions = true,
    description = {"Replays the selected dead letters: for each, releases its key's dead-letter decision in the store,"
        + " republishes it to its source (payload, key and headers, plus idem-replay-count and idem-replayed-at)"
        + " and waits for the broker to confirm, records it, then removes it. A key applied meanwhile is a"
        + " DUPLICATE; replaying the same dead letter twice applies nothing twice.",
        "Refused: dead letters the broker made itself, the loop guard (--max-replays), and keys that came from the"
        + " broker message id (unless --force)."})
final class ReplayCommand extends DeadLetterCommand {

  @Mixin SelectionOptions selection;

  @Option(names = "--dry-run", description = "Say what would be replayed or refused; touch nothing.")
  boolean dryRun;

  @Option(names = "--rate", paramLabel = "N", defaultValue = "50",
      description = "At most N republishes a second; 0 for no limit (default: ${DEFAULT-VALUE}).")
  double rate;

  @Option(names = "--max-replays", paramLabel = "N", defaultValue = "3",
      description = "Loop guard: refuse a dead letter whose message was replayed N times already (default:"
          + " ${DEFAULT-VALUE}).")
  int maxReplays;

  @Option(names = "--force", description = "Replay what the loop guard or the broker-id key check refuses.")
  boolean force;

  @Option(names = "--keep", description = "Republish and keep the dead letter (a rehearsal: a later replay of it"
      + " is a DUPLICATE).")
  boolean keep;

  @Option(names = "--to", paramLabel = "DESTINATION",
      description = "Republish to this topic or queue instead of each dead letter's source.")
  @Nullable String to;

  @Option(names = "--operator", paramLabel = "WHO", description = "Who replays, as recorded (default: user@host).")
  @Nullable String operator;

  @Override
  int run(boolean json) {
    DeadLetterSelection chosen = selection.selection("replay", false);
    ReplayOptions options;
    try {
      options = ReplayOptions.builder().dryRun(dryRun).ratePerSecond(rate).maxReplays(maxReplays).force(force)
          .keep(keep).build();
    } catch (IllegalArgumentException e) {
      throw new CliFailure(IdemCli.EXIT_USAGE, String.valueOf(e.getMessage()).replace("ratePerSecond", "--rate")
          .replace("maxReplays", "--max-replays"));
    }
    DataSource store = store("replay");
    try (DeadLetterDestination destination = connection.destination(to)) {
      DeadLetterListener printing = new DeadLetterListener() {
        @Override
        public void onReleased(io.idem.deadletters.DeadLetter d, boolean released) {
          root().listener().onReleased(d, released);
        }

        @Override
        public void onRepublished(io.idem.deadletters.DeadLetter d, String target) {
          root().listener().onRepublished(d, target);
        }

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
      DeadLetterOperations.Builder b = operations(destination).listener(printing)
          .decisions(connection.decisions(store)).actions(connection.actions(store));
      if (operator != null) {
        b.operator(operator);
      }
      ActionReport report = b.build().replay(chosen, options);
      return DiscardCommand.finish(this, report, json);
    }
  }
}
