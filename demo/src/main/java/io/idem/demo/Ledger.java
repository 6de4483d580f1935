package io.idem.demo;

import io.idem.testkit.CrashPoint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The result of one demo run: what was published, what the database and the broker hold, and what
 * the consumers reported. Each figure names where it comes from; only the consumer-reported ones
 * ({@code deliveries}, {@code duplicatesSkipped}) can miss anything, and they are printed as
 * estimates: a delivery settled just before a SIGKILL has its outcome line never written.
 *
 * @param broker the broker's name ({@code kafka}, …), or {@code old->new} for a migration
 * @param published messages published, producer retries and keyless messages included (a
 *     migration's events sent to both brokers count twice): counted by the producer, each send
 *     acknowledged by the broker
 * @param uniqueOrders distinct business ids published: the effects there must be
 * @param deliveries deliveries the consumers reported settling (their {@code OUTCOME} lines; an
 *     estimate: one settled just before a SIGKILL may be missing)
 * @param duplicatesSkipped of those, reported as {@code DUPLICATE} (an estimate, as above)
 * @param effects rows in the business table
 * @param markers rows in the processed-events table (one per order whose effect committed)
 * @param doubled rows beyond one per business id
 * @param missing published business ids without a row, plus rows of ids never published
 * @param deadLettered messages read back from the dead-letter destination
 * @param expectedDeadLetters keyless messages published, each of which must be dead-lettered
 * @param wrongDeadLetters keyless messages not found in the dead-letter destination (with cause
 *     {@code NO_KEY}) plus dead letters that are not one of them; a second copy of a keyless
 *     message (a crash between the dead-letter copy and the removal of the original) is not wrong
 *     when it carries the same payload and {@code idem-original-*} headers, one per crash at most
 * @param crashes consumer crashes that happened
 * @param plannedCrashes consumer crashes planned
 * @param crashPoint where the consumer halted itself, or {@code null} for SIGKILLs from outside
 * @param seconds wall time from the first consumer start to the last message settled
 * @param unplannedDeaths consumer processes that died neither killed by the run nor halted at the
 *     planned crash point (a bug, an OOM, a crash at the wrong place): any fails the run
 * @param maxBatchSize the consumer's most messages per transaction ({@code --batch}): 1 is
 *     per-message mode
 * @param receipts the receipts' figures, or {@code null} when the run had none ({@code
 *     --no-receipts}, a migration)
 * @param timedOutAfter the {@code --timeout} that ran out before every message was settled, or
 *     {@code null} when the run ended by itself: a run that timed out reads its unapplied orders and
 *     unsent or unreceived receipts as "not yet" (they may still be in flight), never as missing,
 *     and is {@code TIMED OUT} unless something was doubled or a process died unplanned
 */
public record Ledger(
    String broker,
    long published,
    long uniqueOrders,
    long deliveries,
    long duplicatesSkipped,
    long effects,
    long markers,
    long doubled,
    long missing,
    long deadLettered,
    long expectedDeadLetters,
    long wrongDeadLetters,
    int crashes,
    int plannedCrashes,
    @Nullable CrashPoint crashPoint,
    double seconds,
    int unplannedDeaths,
    int maxBatchSize,
    @Nullable Receipts receipts,
    @Nullable Duration timedOutAfter) {

  /**
   * The receipts of a run: each OrderPaid handler enqueued one in the outbox, in its transaction; a
   * relay published them to a second destination on the same broker; a downstream Idem consumer
   * (its own consumer group) applied them into the receipts table. Every figure but {@code
   * duplicatesSkipped} is counted in the database, after the run, and cannot miss anything.
   *
   * @param destination the broker destination the receipts went to
   * @param enqueued outbox rows for that destination (one per order whose payment committed)
   * @param published of those, rows a relay marked sent
   * @param applied rows in the receipts table
   * @param doubled receipt rows beyond one per order
   * @param missing published orders without a receipt row, plus receipt rows of orders never
   *     published
   * @param republished rows the broker had confirmed when a relay was killed (the relay's output,
   *     complete up to its pause) and that were still unsent afterwards (checked in the outbox
   *     table right after each kill): each was published again by the next relay, and the
   *     downstream consumer had to skip that copy
   * @param duplicatesSkipped receipt deliveries the downstream consumer reported as {@code
   *     DUPLICATE} (an estimate: one settled just before a SIGKILL may be missing)
   * @param relayCrashes relay processes killed (SIGKILL) in the window between the broker's
   *     confirmation and the sent mark
   * @param plannedRelayCrashes relay kills planned
   * @param unplannedRelayDeaths relay processes that died without being killed by the run
   */
  public record Receipts(String destination, long enqueued, long published, long applied, long doubled,
      long missing, long republished, long duplicatesSkipped, int relayCrashes, int plannedRelayCrashes,
      int unplannedRelayDeaths) {

    /**
     * No receipt doubled or missing, every enqueued row published, every planned relay kill
     * happened, and no relay died unplanned.
     */
    public boolean ok() {
      return doubled == 0 && missing == 0 && published == enqueued && relayCrashes == plannedRelayCrashes
          && unplannedRelayDeaths == 0;
    }

    /**
     * A lower bound of the copies skipped downstream: what the consumer reported and, when every
     * receipt was applied exactly once, at least one per {@link #republished()} row.
     */
    public long duplicatesAtLeast() {
      return doubled == 0 && missing == 0 ? Math.max(duplicatesSkipped, republished) : duplicatesSkipped;
    }
  }

  /** A ledger without receipts. */
  public Ledger(String broker, long published, long uniqueOrders, long deliveries, long duplicatesSkipped,
      long effects, long markers, long doubled, long missing, long deadLettered, long expectedDeadLetters,
      long wrongDeadLetters, int crashes, int plannedCrashes, @Nullable CrashPoint crashPoint, double seconds,
      int unplannedDeaths, int maxBatchSize) {
    this(broker, published, uniqueOrders, deliveries, duplicatesSkipped, effects, markers, doubled, missing,
        deadLettered, expectedDeadLetters, wrongDeadLetters, crashes, plannedCrashes, crashPoint, seconds,
        unplannedDeaths, maxBatchSize, null, null);
  }

  /** This ledger with {@code value} as its receipts. */
  public Ledger withReceipts(@Nullable Receipts value) {
    return new Ledger(broker, published, uniqueOrders, deliveries, duplicatesSkipped, effects, markers, doubled,
        missing, deadLettered, expectedDeadLetters, wrongDeadLetters, crashes, plannedCrashes, crashPoint, seconds,
        unplannedDeaths, maxBatchSize, value, timedOutAfter);
  }

  /** This ledger of a run whose {@code timeout} ran out before every message was settled. */
  public Ledger withTimedOut(Duration timeout) {
    return new Ledger(broker, published, uniqueOrders, deliveries, duplicatesSkipped, effects, markers, doubled,
        missing, deadLettered, expectedDeadLetters, wrongDeadLetters, crashes, plannedCrashes, crashPoint, seconds,
        unplannedDeaths, maxBatchSize, receipts, timeout);
  }

  private String timeoutText() {
    Duration t = timedOutAfter;
    return t == null ? "" : DurationArgument.format(t);
  }

  /** Whether the run's {@code --timeout} ran out before every message was settled. */
  public boolean timedOut() {
    return timedOutAfter != null;
  }

  /** The demo's exit status for a run that timed out with nothing doubled ({@link #result()} {@code TIMED OUT}). */
  public static final int EXIT_TIMED_OUT = 3;

  /**
   * {@code OK} when {@link #ok()}; {@code TIMED OUT} when the run timed out with nothing doubled
   * and no process dead unplanned (what is not applied yet may still be in flight: nothing shows
   * it lost); else {@code FAILED}.
   */
  public String result() {
    if (ok()) {
      return "OK";
    }
    return timedOut() && !failedRegardlessOfTime() ? "TIMED OUT" : "FAILED";
  }

  /** Doubled effects or receipts, or a process that died unplanned: no longer wait would mend that. */
  private boolean failedRegardlessOfTime() {
    return doubled > 0 || unplannedDeaths > 0
        || (receipts != null && (receipts.doubled() > 0 || receipts.unplannedRelayDeaths() > 0));
  }

  /** 0 for {@code OK}, {@link #EXIT_TIMED_OUT} for {@code TIMED OUT}, 1 for {@code FAILED}. */
  public int exitStatus() {
    return switch (result()) {
      case "OK" -> 0;
      case "TIMED OUT" -> EXIT_TIMED_OUT;
      default -> 1;
    };
  }

  /** A ledger of a per-message run ({@code maxBatchSize} 1) in which no consumer died unplanned. */
  public Ledger(String broker, long published, long uniqueOrders, long deliveries, long duplicatesSkipped,
      long effects, long markers, long doubled, long missing, long deadLettered, long expectedDeadLetters,
      long wrongDeadLetters, int crashes, int plannedCrashes, @Nullable CrashPoint crashPoint, double seconds) {
    this(broker, published, uniqueOrders, deliveries, duplicatesSkipped, effects, markers, doubled, missing,
        deadLettered, expectedDeadLetters, wrongDeadLetters, crashes, plannedCrashes, crashPoint, seconds, 0, 1);
  }

  /** {@code per-message} or {@code batch N}: the consumer's mode. */
  public String mode() {
    return maxBatchSize <= 1 ? "per-message" : "batch " + maxBatchSize;
  }

  /**
   * No doubled, no missing effect, every keyless message dead-lettered and nothing else, and every
   * planned crash happened, and no consumer died unplanned; with receipts, also {@link
   * Receipts#ok()}.
   */
  public boolean ok() {
    return doubled == 0 && missing == 0 && wrongDeadLetters == 0 && crashes == plannedCrashes
        && unplannedDeaths == 0 && (receipts == null || receipts.ok());
  }

  /**
   * A lower bound of the deliveries there were: each effect row and each dead letter came from a
   * delivery of its own, and so did each reported duplicate; never below what the consumers
   * reported. Redeliveries whose outcome line a SIGKILL swallowed make the true number higher.
   */
  public long deliveriesAtLeast() {
    return Math.max(deliveries, effects + duplicatesAtLeast() + deadLettered);
  }

  /**
   * A lower bound of the deliveries skipped as duplicates: what the consumers reported, and, when
   * no order is missing, at least one per {@link #retriesPublished() retry} (its order's marker
   * was committed by another delivery).
   */
  public long duplicatesAtLeast() {
    return missing == 0 ? Math.max(duplicatesSkipped, retriesPublished()) : duplicatesSkipped;
  }

  /** Producer retries and cutover copies: messages with a key published beyond one per order. */
  public long retriesPublished() {
    return published - expectedDeadLetters - uniqueOrders;
  }

  /** Messages published per second of {@link #seconds()}; 0 when no time passed. */
  public double eventsPerSecond() {
    return seconds <= 0 ? 0 : published / seconds;
  }

  /**
   * A multi-line report, one line per figure with where it was counted, starting with an empty
   * line; the receipts' lines follow the orders' when the run had receipts.
   */
  public String describe() {
    List<String> lines = new ArrayList<>(List.of("", "Ledger (" + broker + ")"));
    if (timedOut()) {
      lines.add(timedOutLine());
    }
    lines.addAll(List.of(
        row("events published", published, "(" + uniqueOrders + " orders + " + retriesPublished()
            + " producer retries" + (expectedDeadLetters > 0 ? " + " + expectedDeadLetters + " without a key" : "")
            + "; counted by the producer)"),
        row("effects applied", effects, "(rows in the business table)"),
        row("markers", markers, "(rows in the processed-events table: one per order applied)"),
        row("doubled effects", doubled, "(business rows beyond one per order)"),
        timedOut() && missing > 0
            ? row("not yet applied", missing, "(orders published without a business row yet: timed out)")
            : row("missing effects", missing, "(orders published without a business row)"),
        row("dead-lettered", deadLettered, "(read back from the dead-letter destination; expected "
            + expectedDeadLetters + (expectedDeadLetters > 0 ? ": the messages without a key" : "")
            + (wrongDeadLetters > 0 ? "; " + wrongDeadLetters + " WRONG" : "")
            + (deadLettered > expectedDeadLetters && wrongDeadLetters == 0
                ? "; " + extraCopies(deadLettered - expectedDeadLetters) : "") + ")"),
        row("duplicates skipped", atLeast(duplicatesAtLeast()), "(estimate: the consumer reported "
            + duplicatesSkipped + "; at least one per producer retry when no order is missing)"),
        row("deliveries", atLeast(deliveriesAtLeast()), "(estimate: the consumer reported " + deliveries
            + "; at least effects + duplicates skipped + dead letters"
            + (crashes > 0 ? "; the reported count can be below this bound: a delivery settled just before a"
                + " SIGKILL goes unreported" : "") + ")"),
        row("consumer crashes", crashes + "/" + plannedCrashes, crashPoint == null
            ? "(SIGKILL at random points)" : "(halted at " + crashPoint + ")"),
        row("unplanned deaths", (long) unplannedDeaths, "(consumer processes that died unplanned: the run stops"
            + (unplannedDeaths > 0 ? "; FAILED" : "") + ")")));
    if (receipts != null) {
      lines.addAll(receiptLines(receipts));
    }
    lines.addAll(List.of(
        row("mode", mode(), maxBatchSize <= 1 ? "(one transaction per message; --batch N for batches)"
            : "(at most " + maxBatchSize + " messages per transaction: --batch " + maxBatchSize + ")"),
        row("throughput", String.format(Locale.ROOT, "%.0f events/s", eventsPerSecond()),
            String.format(Locale.ROOT, "(" + mode() + " mode; events published / %.1f s from the first consumer start to %s%s)",
                seconds, timedOut() ? "the timeout" : "the last message settled", crashes > 0 ? ", restarts included" : "")),
        row("result", result(), switch (result()) {
          case "OK" -> "(every order applied exactly once" + (receipts != null ? ", and its receipt" : "") + ")";
          case "TIMED OUT" -> "(--timeout " + timeoutText() + " ran out first: nothing doubled; rerun with a longer"
              + " --timeout or fewer --events)";
          default -> "(doubled, missing, wrong dead letters, crashes that did not happen or unplanned deaths"
              + (receipts != null ? ", in the orders or the receipts" : "") + (timedOut() ? "; timed out too" : "")
              + ")";
        })));
    return String.join("\n", lines);
  }

  /** The line under the title of a ledger that timed out: how far it got, and whether anything doubled. */
  private String timedOutLine() {
    long applied = uniqueOrders - missing;
    return String.format(Locale.ROOT, "  TIMED OUT after %s: %,d of %,d orders applied so far%s, %s",
        timeoutText(),
        Math.max(0, applied), uniqueOrders,
        receipts != null ? String.format(Locale.ROOT, " (%,d receipts)", receipts.applied()) : "",
        failedRegardlessOfTime() ? "SOMETHING DOUBLED OR DIED UNPLANNED (see below)" : "nothing doubled");
  }

  private List<String> receiptLines(Receipts r) {
    long unsent = r.enqueued() - r.published();
    boolean late = timedOut();
    return List.of(
        row("receipts enqueued", r.enqueued(), "(rows in the outbox table, written in the handlers' transactions:"
            + " one per order applied)"),
        row("receipts published", r.published(), "(outbox rows a relay marked sent to " + r.destination()
            + (unsent != 0 ? "; " + unsent + (late ? " not yet sent (timed out)" : " NOT SENT") : "") + ")"),
        row("receipts applied", r.applied(), "(rows in the receipts table, written by the downstream consumer)"),
        row("doubled receipts", r.doubled(), "(receipt rows beyond one per order)"),
        late && r.missing() > 0
            ? row("not yet received", r.missing(), "(orders published without a receipt row yet: timed out)")
            : row("missing receipts", r.missing(), "(orders published without a receipt row)"),
        row("published again", r.republished(), "(rows the broker had confirmed when the relay was killed, still"
            + " unsent after the kill: sent twice)"),
        row("copies skipped", atLeast(r.duplicatesAtLeast()), "(estimate: the downstream consumer reported "
            + r.duplicatesSkipped() + "; at least one per row published again when no receipt is doubled or missing)"),
        row("relay crashes", r.relayCrashes() + "/" + r.plannedRelayCrashes(), "(SIGKILL after the broker confirmed a"
            + " receipt, before the relay marked it sent"
            + (r.unplannedRelayDeaths() > 0 ? "; " + r.unplannedRelayDeaths() + " unplanned deaths: FAILED" : "") + ")"));
  }

  private static String extraCopies(long n) {
    return n + (n == 1 ? " extra copy" : " extra copies") + " of them, dead-lettered again after a crash";
  }

  private static String atLeast(long n) {
    return String.format(Locale.ROOT, ">= %,d", n);
  }

  private static String row(String name, Object value, String how) {
    Object shown = value instanceof Long n ? String.format(Locale.ROOT, "%,d", n) : value;
    return String.format(Locale.ROOT, "  %-20s %10s  %s", name, shown, how);
  }

  /**
   * One row per ledger, for {@code --broker all}: broker, events, deliveries (at least), duplicates
   * skipped (as reported), effects, doubled, missing (in parentheses when the run timed out: not yet
   * applied), events/s and the {@link #result()} ({@code OK}, {@code TIMED OUT} or {@code FAILED}), with a
   * header line; when any ledger has receipts, also receipts applied, doubled and missing ({@code
   * -} for a ledger without) before the result. Columns separated by spaces, one line per ledger
   * ending in a line separator.
   */
  public static String table(List<Ledger> ledgers) {
    StringBuilder out = new StringBuilder();
    int width = Math.max(8, ledgers.stream().mapToInt(l -> l.broker.length()).max().orElse(0));
    boolean receipts = ledgers.stream().anyMatch(l -> l.receipts != null);
    String format = "%-" + width + "s %8s %10s %11s %8s %8s %8s %10s" + (receipts ? " %9s %10s %10s" : "%s%s%s")
        + "  %s%n";
    out.append(String.format(Locale.ROOT, format, "broker", "events", "deliveries", "duplicates", "effects",
        "doubled", "missing", "events/s", receipts ? "receipts" : "", receipts ? "r-doubled" : "",
        receipts ? "r-missing" : "", "result"));
    for (Ledger l : ledgers) {
      Receipts r = l.receipts;
      out.append(String.format(Locale.ROOT, format, l.broker, l.published, l.deliveriesAtLeast(), l.duplicatesAtLeast(),
          l.effects, l.doubled, notYet(l, l.missing), String.format(Locale.ROOT, "%.0f", l.eventsPerSecond()),
          !receipts ? "" : r == null ? "-" : Long.toString(r.applied()),
          !receipts ? "" : r == null ? "-" : Long.toString(r.doubled()),
          !receipts ? "" : r == null ? "-" : notYet(l, r.missing()),
          l.result()));
    }
    return out.toString();
  }

  /** A missing figure of a run that timed out is shown in parentheses: not yet applied or received. */
  private static String notYet(Ledger l, long n) {
    return l.timedOut() && n > 0 ? "(" + n + ")" : Long.toString(n);
  }
}
