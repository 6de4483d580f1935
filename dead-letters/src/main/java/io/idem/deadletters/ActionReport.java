package io.idem.deadletters;

import java.util.List;
import java.util.Objects;

/**
 * What one replay or discard did: one result per selected dead letter, in the destination's
 * order. Immutable.
 *
 * @param action {@code replay} or {@code discard}
 * @param destination the dead-letter destination
 * @param selection the selection, described ({@link DeadLetterSelection#describe()})
 * @param dryRun whether nothing was touched
 * @param results one per selected dead letter
 */
public record ActionReport(String action, String destination, String selection, boolean dryRun,
    List<ActionResult> results) {

  public ActionReport {
    Objects.requireNonNull(action, "action");
    Objects.requireNonNull(destination, "destination");
    Objects.requireNonNull(selection, "selection");
    results = List.copyOf(results);
  }

  /** How many results have {@code outcome}. */
  public long count(ActionResult.Outcome outcome) {
    return results.stream().filter(r -> r.outcome() == outcome).count();
  }

  /** Whether the selection matched no dead letter. */
  public boolean isEmpty() {
    return results.isEmpty();
  }

  /** Whether some dead letter was refused or failed. */
  public boolean hasProblems() {
    return results.stream().anyMatch(r -> r.outcome().isProblem());
  }
}
