package io.idem.cli;

import io.idem.DeadLetterCause;
import io.idem.deadletters.DeadLetterSelection;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/** Which dead letters a command takes: every criterion given must match. */
final class SelectionOptions {

  @Option(names = "--id", paramLabel = "ID", description = "A dead letter's id, as list shows it (repeatable).")
  List<String> ids = new ArrayList<>();

  @Option(names = "--group", paramLabel = "GROUP", description = "A group's id, as list shows it (repeatable).")
  List<String> groups = new ArrayList<>();

  @Option(names = "--cause", paramLabel = "CAUSE",
      description = "An Idem cause: ${COMPLETION-CANDIDATES} (repeatable).")
  List<DeadLetterCause> causes = new ArrayList<>();

  @Option(names = "--since", paramLabel = "TIME", converter = TimeArgument.class,
      description = "Dead-lettered at or after: 2026-12-01T10:00:00Z, or a time ago (90m, 2h, 1d).")
  @Nullable Instant since;

  @Option(names = "--until", paramLabel = "TIME", converter = TimeArgument.class,
      description = "Dead-lettered before: an instant, or a time ago.")
  @Nullable Instant until;

  @Option(names = "--key", paramLabel = "PATTERN",
      description = "Idempotency keys matching this glob (* any run of characters, ? one).")
  @Nullable String keyPattern;

  @Option(names = "--consumer-group", paramLabel = "GROUP", description = "The consumer group that dead-lettered them.")
  @Nullable String consumerGroup;

  @Option(names = "--all", description = "Every dead letter (replay and discard need a criterion or --all).")
  boolean all;

  /** Whether a criterion or --all was given. */
  boolean given() {
    return all || builder().hasCriteria();
  }

  /**
   * The selection; with nothing given, every dead letter when {@code everythingByDefault}, else a
   * usage error.
   */
  DeadLetterSelection selection(String command, boolean everythingByDefault) {
    DeadLetterSelection.Builder b = builder();
    if (all && b.hasCriteria()) {
      throw new CliFailure(IdemCli.EXIT_USAGE, "--all does not go with other criteria (" + describe(b) + ")");
    }
    if (all || (!b.hasCriteria() && everythingByDefault)) {
      return DeadLetterSelection.all();
    }
    if (!b.hasCriteria()) {
      throw new CliFailure(IdemCli.EXIT_USAGE, command + " needs a selection: --id, --group, --cause, --since, --until,"
          + " --key, --consumer-group, or --all");
    }
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new CliFailure(IdemCli.EXIT_USAGE, String.valueOf(e.getMessage()));
    }
  }

  private DeadLetterSelection.Builder builder() {
    return DeadLetterSelection.builder().ids(ids).groups(groups).causes(causes).since(since).until(until)
        .keyPattern(keyPattern).consumerGroup(consumerGroup);
  }

  private static String describe(DeadLetterSelection.Builder b) {
    return b.build().describe();
  }
}
