package io.idem.demo;

import java.util.Locale;

/**
 * The result of a {@link MigrationRun}: the {@link Ledger} of the whole run (its broker named
 * {@code old->new}) plus what each phase published and what each broker's consumer saw.
 *
 * @param ledger effects, doubled, missing, dead letters and crashes of the whole run
 * @param from the old broker's name
 * @param to the new broker's name
 * @param oldOnly events published to the old broker only (phase 1)
 * @param both events published to both brokers during the cutover (phase 2), counted once
 * @param newOnly events published to the new broker only (phase 3)
 * @param fromDeliveries deliveries the consumer reported settling from the old broker (an
 *     estimate: one settled just before a SIGKILL may be missing)
 * @param fromDuplicates of those, reported as duplicates
 * @param toDeliveries deliveries the consumer reported settling from the new broker (an estimate)
 * @param toDuplicates of those, reported as duplicates
 */
public record MigrationLedger(
    Ledger ledger,
    String from,
    String to,
    long oldOnly,
    long both,
    long newOnly,
    long fromDeliveries,
    long fromDuplicates,
    long toDeliveries,
    long toDuplicates) {

  /** Whether the ledger is {@link Ledger#ok() ok}: every order applied exactly once. */
  public boolean ok() {
    return ledger.ok();
  }

  /** The demo's exit status: {@link Ledger#exitStatus()}. */
  public int exitStatus() {
    return ledger.exitStatus();
  }

  /** A multi-line report, one line per figure, starting with an empty line. */
  public String describe() {
    Ledger l = ledger;
    return String.join("\n",
        "",
        "Migration ledger (" + from + " -> " + to + ": one consumer group, one store, both adapters running)",
        row("phase 1: old only", String.format(Locale.ROOT, "%d events on %s", oldOnly, from)),
        row("phase 2: cutover", String.format(Locale.ROOT, "%d events on %s AND on %s", both, from, to)),
        row("phase 3: new only", String.format(Locale.ROOT, "%d events on %s", newOnly, to)),
        row("messages published", l.published() + "  (" + l.uniqueOrders() + " orders; producer retries and"
            + " cutover copies make the rest; counted by the producers)"),
        row("effects applied", l.effects() + "  (rows in the business table)"),
        row("markers", l.markers() + "  (rows in the processed-events table: one per order applied)"),
        row("doubled effects", Long.toString(l.doubled())),
        row(l.timedOut() && l.missing() > 0 ? "not yet applied" : "missing effects",
            l.missing() + (l.timedOut() && l.missing() > 0 ? "  (no business row yet: timed out)" : "")),
        row("dead-lettered", l.deadLettered() + " (read back from both dead-letter destinations; expected 0)"),
        row("duplicates skipped", String.format(Locale.ROOT,
            ">= %d  (estimate: reported %s %d, %s %d; at least one per retry or cutover copy)",
            l.duplicatesAtLeast(), from, fromDuplicates, to, toDuplicates)),
        row("deliveries", String.format(Locale.ROOT, ">= %d  (estimate: reported %s %d, %s %d; at least"
            + " effects + duplicates skipped + dead letters; one settled just before a SIGKILL goes unreported)",
            l.deliveriesAtLeast(), from, fromDeliveries, to, toDeliveries)),
        row("consumer crashes", l.crashes() + "/" + l.plannedCrashes() + " (SIGKILL at random points)"),
        row("throughput", String.format(Locale.ROOT, "%.0f events/s (messages published / %.1f s)",
            l.eventsPerSecond(), l.seconds())),
        row("result", ok() ? "OK: every order applied exactly once across both brokers"
            : l.result().equals("TIMED OUT") ? "TIMED OUT: --timeout ran out first; nothing doubled" : "FAILED"));
  }

  private static String row(String name, String value) {
    return String.format(Locale.ROOT, "  %-20s %s", name, value);
  }
}
