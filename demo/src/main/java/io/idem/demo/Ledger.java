package io.idem.demo;

import io.idem.testkit.CrashPoint;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The result of one demo run: what was published, what the consumers saw, and what the database
 * and the broker hold. {@code effects}, {@code doubled} and {@code missing} come from the business
 * table itself, {@code deadLettered} and {@code wrongDeadLetters} from the dead-letter destination
 * itself, not from the consumers' own counts.
 *
 * @param broker the broker's name ({@code kafka}, …), or {@code old->new} for a migration
 * @param published messages published, producer retries and keyless messages included (a
 *     migration's events sent to both brokers count twice)
 * @param uniqueOrders distinct business ids published: the effects there must be
 * @param deliveries deliveries the consumers settled (from their output; a delivery settled just
 *     before a SIGKILL may be missing from it)
 * @param duplicatesSkipped deliveries settled as {@code DUPLICATE}
 * @param effects rows in the business table
 * @param doubled rows beyond one per business id
 * @param missing published business ids without a row, plus rows of ids never published
 * @param deadLettered messages in the dead-letter destination
 * @param expectedDeadLetters keyless messages published, each of which must be dead-lettered
 * @param wrongDeadLetters keyless messages not found in the dead-letter destination (with cause
 *     {@code NO_KEY}) plus dead letters that are not one of them; a second copy of a keyless
 *     message (a crash between the dead-letter copy and the removal of the original) is not wrong
 * @param crashes consumer crashes that happened
 * @param plannedCrashes consumer crashes planned
 * @param crashPoint where the consumer halted itself, or {@code null} for SIGKILLs from outside
 * @param seconds wall time from the first consumer start to the last message settled
 */
public record Ledger(
    String broker,
    long published,
    long uniqueOrders,
    long deliveries,
    long duplicatesSkipped,
    long effects,
    long doubled,
    long missing,
    long deadLettered,
    long expectedDeadLetters,
    long wrongDeadLetters,
    int crashes,
    int plannedCrashes,
    @Nullable CrashPoint crashPoint,
    double seconds) {

  /**
   * No doubled, no missing effect, every keyless message dead-lettered and nothing else, and every
   * planned crash happened.
   */
  public boolean ok() {
    return doubled == 0 && missing == 0 && wrongDeadLetters == 0 && crashes == plannedCrashes;
  }

  /** Deliveries settled per second of {@link #seconds()}; 0 when no time passed. */
  public double eventsPerSecond() {
    return seconds <= 0 ? 0 : deliveries / seconds;
  }

  /** A multi-line report, one line per figure, starting with an empty line. */
  public String describe() {
    return String.join("\n",
        "",
        "Ledger (" + broker + ")",
        row("events published", published + "  (" + uniqueOrders + " orders + "
            + (published - uniqueOrders - expectedDeadLetters) + " producer retries"
            + (expectedDeadLetters > 0 ? " + " + expectedDeadLetters + " without a key" : "") + ")"),
        row("deliveries seen", deliveries + (crashes > 0
            ? "  (as the consumer reported them; one settled just before a SIGKILL may go unreported)" : "")),
        row("duplicates skipped", Long.toString(duplicatesSkipped)),
        row("effects applied", Long.toString(effects)),
        row("doubled effects", Long.toString(doubled)),
        row("missing effects", Long.toString(missing)),
        row("dead-lettered", deadLettered + " (expected " + expectedDeadLetters
            + (expectedDeadLetters > 0 ? ": the messages without a key" : "")
            + (wrongDeadLetters > 0 ? "; " + wrongDeadLetters + " WRONG" : "")
            + (deadLettered > expectedDeadLetters && wrongDeadLetters == 0
                ? "; " + extraCopies(deadLettered - expectedDeadLetters) : "") + ")"),
        row("consumer crashes", crashes + "/" + plannedCrashes + (crashPoint == null
            ? " (SIGKILL at random points)" : " (halted at " + crashPoint + ")")),
        row("throughput", String.format(Locale.ROOT, "%.0f events/s (deliveries settled per second over %.1f s%s)",
            eventsPerSecond(), seconds, crashes > 0 ? ", restarts included" : "")),
        row("result", ok() ? "OK: every order applied exactly once" : "FAILED"));
  }

  private static String extraCopies(long n) {
    return n + (n == 1 ? " extra copy" : " extra copies") + " of them, dead-lettered again after a crash";
  }

  private static String row(String name, String value) {
    return String.format(Locale.ROOT, "  %-20s %s", name, value);
  }

  /**
   * One row per ledger, for {@code --broker all}: broker, events, deliveries, duplicates skipped,
   * effects, doubled, missing, events/s and the result ({@code OK} or {@code FAILED}), with a
   * header line; columns separated by spaces, one line per ledger ending in a line separator.
   */
  public static String table(List<Ledger> ledgers) {
    StringBuilder out = new StringBuilder();
    int width = Math.max(8, ledgers.stream().mapToInt(l -> l.broker.length()).max().orElse(0));
    String format = "%-" + width + "s %8s %10s %11s %8s %8s %8s %10s  %s%n";
    out.append(String.format(Locale.ROOT, format, "broker", "events", "deliveries", "duplicates", "effects",
        "doubled", "missing", "events/s", "result"));
    for (Ledger l : ledgers) {
      out.append(String.format(Locale.ROOT, format, l.broker, l.published, l.deliveries, l.duplicatesSkipped,
          l.effects, l.doubled, l.missing, String.format(Locale.ROOT, "%.0f", l.eventsPerSecond()),
          l.ok() ? "OK" : "FAILED"));
    }
    return out.toString();
  }
}
