package io.idem.demo;

import io.idem.testkit.CrashPoint;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The result of one demo run: what was published, what the consumers saw, and what the database
 * holds. {@code doubled} and {@code missing} come from the business table itself, not from the
 * consumers' own counts.
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
    int crashes,
    int plannedCrashes,
    @Nullable CrashPoint crashPoint,
    double seconds) {

  /** No doubled, no missing effect, the expected dead letters only, and every planned crash happened. */
  public boolean ok() {
    return doubled == 0 && missing == 0 && deadLettered == expectedDeadLetters && crashes == plannedCrashes;
  }

  public double eventsPerSecond() {
    return seconds <= 0 ? 0 : deliveries / seconds;
  }

  public String describe() {
    return String.join("\n",
        "",
        "Ledger (" + broker + ")",
        row("events published", published + "  (" + uniqueOrders + " orders + "
            + (published - uniqueOrders - expectedDeadLetters) + " producer retries"
            + (expectedDeadLetters > 0 ? " + " + expectedDeadLetters + " without a key" : "") + ")"),
        row("deliveries seen", Long.toString(deliveries)),
        row("duplicates skipped", Long.toString(duplicatesSkipped)),
        row("effects applied", Long.toString(effects)),
        row("doubled effects", Long.toString(doubled)),
        row("missing effects", Long.toString(missing)),
        row("dead-lettered", deadLettered + " (expected " + expectedDeadLetters + ")"),
        row("consumer crashes", crashes + "/" + plannedCrashes + (crashPoint == null
            ? " (SIGKILL at random points)" : " (halted at " + crashPoint + ")")),
        row("throughput", String.format(Locale.ROOT, "%.0f events/s (%.1f s)", eventsPerSecond(), seconds)),
        row("result", ok() ? "OK: every order applied exactly once" : "FAILED"));
  }

  private static String row(String name, String value) {
    return String.format(Locale.ROOT, "  %-20s %s", name, value);
  }

  /** One row per ledger, for {@code --broker all}. */
  public static String table(List<Ledger> ledgers) {
    StringBuilder out = new StringBuilder();
    String format = "%-9s %8s %10s %11s %8s %8s %8s %10s  %s%n";
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
