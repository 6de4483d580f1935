package io.idem.deadletters;

import io.idem.DeadLetterReason;
import io.idem.KeySource;
import io.idem.deadletters.ActionResult.Outcome;
import io.idem.deadletters.spi.DeadLetterDestination;
import io.idem.store.jdbc.DeadLetterActions;
import io.idem.store.jdbc.DeadLetterActions.Action;
import io.idem.store.jdbc.DeadLetterActions.Kind;
import io.idem.store.jdbc.DeadLetterDecisions;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operator's actions on one dead-letter destination: {@link #list} (and {@link
 * DeadLetterGroup#of} to group), {@link #show}, {@link #replay} and {@link #discard}. Safe by
 * construction (docs/DEAD-LETTERS.md):
 *
 * <ol>
 *   <li>a replay first releases the key's dead-letter decision in the processed-events store
 *       ({@link DeadLetterDecisions#release}): the republished copy is then claimed anew and its
 *       handler runs — unless the key was applied meanwhile, whose processed marker is never
 *       released, so the copy is a {@code DUPLICATE} with no second effect;
 *   <li>then republishes the dead letter to its source with its payload, key and headers, plus
 *       {@value DeadLetterHeaders#REPLAY_COUNT} (one more than it carried) and {@value
 *       DeadLetterHeaders#REPLAYED_AT}, and waits until the broker stored the copy;
 *   <li>then records the action ({@link DeadLetterActions}), and only then removes the dead letter.
 * </ol>
 *
 * A crash anywhere loses no dead letter and applies nothing twice: before the copy is stored the
 * dead letter is still there; after, the copy and the dead letter may both exist, and replaying the
 * dead letter again republishes a copy the store answers as a duplicate. Refused, and never
 * touched: a dead letter the broker made itself (no Idem reason: no decision to release, no key to
 * dedup by), one whose message was replayed {@link ReplayOptions#maxReplays()} times already (the
 * loop guard), and one whose key came from the broker message id (a republished copy gets a new
 * broker id, so each replay would be a new key) unless {@link ReplayOptions#force()}.
 *
 * <p>Not thread-safe (one operation at a time, as its destination). Build with {@link
 * #builder(DeadLetterDestination)}; the destination is the caller's to close.
 */
public final class DeadLetterOperations {
  private static final Logger LOG = LoggerFactory.getLogger(DeadLetterOperations.class);

  /** Default {@link Builder#maxScan(int)}: {@value} dead letters read per operation. */
  public static final int DEFAULT_MAX_SCAN = 10_000;

  private final DeadLetterDestination destination;
  private final @Nullable DeadLetterDecisions decisions;
  private final @Nullable DeadLetterActions actions;
  private final String operator;
  private final DeadLetterListener listener;
  private final int maxScan;
  private long nextRepublishNanos;

  private DeadLetterOperations(Builder b) {
    this.destination = b.destination;
    this.decisions = b.decisions;
    this.actions = b.actions;
    this.operator = b.operator;
    this.listener = b.listener;
    this.maxScan = b.maxScan;
    if (actions != null) {
      DeadLetterActions record = actions;
      destination.settledBy(ids -> record.settled(destination.name(), ids));
    }
  }

  public static Builder builder(DeadLetterDestination destination) {
    return new Builder(destination);
  }

  /** The destination operated on. */
  public DeadLetterDestination destination() {
    return destination;
  }

  /** The most dead letters an operation reads ({@link Builder#maxScan(int)}). */
  public int maxScan() {
    return maxScan;
  }

  /**
   * The selected dead letters, in the destination's order, read without removing any (at most
   * {@link #maxScan()} are read).
   *
   * @throws DeadLetterException when the destination does not exist or cannot be read
   */
  public List<DeadLetter> list(DeadLetterSelection selection) {
    return destination.browse(maxScan).stream().filter(selection::matches).toList();
  }

  /**
   * The dead letters with {@code id}, usually one (several when a crash stored a copy twice and
   * the broker gives both the same id).
   *
   * @throws DeadLetterException when the destination does not exist or cannot be read
   */
  public List<DeadLetter> show(String id) {
    return destination.browse(maxScan).stream().filter(d -> d.id().equals(id)).toList();
  }

  /**
   * Replays the selected dead letters, as the class documentation says, pacing the republishes to
   * {@link ReplayOptions#ratePerSecond()}.
   *
   * @throws IllegalStateException without the store's decisions ({@link Builder#decisions})
   * @throws DeadLetterException when the destination does not exist or cannot be read
   * @throws io.idem.StoreUnavailableException when the store cannot be reached before the first
   *     replay (later, such a dead letter is reported as failed and left where it is)
   */
  public ActionReport replay(DeadLetterSelection selection, ReplayOptions options) {
    Objects.requireNonNull(selection, "selection");
    Objects.requireNonNull(options, "options");
    if (decisions == null) {
      throw new IllegalStateException("replay needs the processed-events store (decisions): each key's"
          + " dead-letter decision is released before its message is republished");
    }
    List<ActionResult> results = new ArrayList<>();
    Consumer<ActionResult> add = r -> {
      results.add(r);
      notify(l -> l.onResult(r));
    };
    if (options.dryRun()) {
      for (DeadLetter d : list(selection)) {
        add.accept(dryReplay(d, options));
      }
    } else {
      destination.process(maxScan, held -> {
        if (selection.matches(held.deadLetter())) {
          add.accept(replay(held, options));
        }
      });
    }
    return new ActionReport("replay", destination.name(), selection.describe(), options.dryRun(), results);
  }

  /**
   * Discards the selected dead letters: each is recorded ({@link DeadLetterActions}: who, why)
   * and then removed. The key's dead-letter decision, if any, stays in the store.
   *
   * @param reason why, recorded with each; not blank
   * @throws IllegalStateException without the record ({@link Builder#actions})
   * @throws IllegalArgumentException for a blank reason
   * @throws DeadLetterException when the destination does not exist or cannot be read
   */
  public ActionReport discard(DeadLetterSelection selection, String reason, boolean dryRun) {
    Objects.requireNonNull(selection, "selection");
    if (reason == null || reason.isBlank()) {
      throw new IllegalArgumentException("reason must say why the dead letters are discarded, but was blank");
    }
    if (actions == null) {
      throw new IllegalStateException("discard needs the record of dead-letter actions (who discarded what,"
          + " and why): give DeadLetterActions");
    }
    List<ActionResult> results = new ArrayList<>();
    Consumer<ActionResult> add = r -> {
      results.add(r);
      notify(l -> l.onResult(r));
    };
    if (dryRun) {
      for (DeadLetter d : list(selection)) {
        add.accept(result(d, Outcome.WOULD_DISCARD, null, "would be discarded: " + reason));
      }
    } else {
      destination.process(maxScan, held -> {
        DeadLetter d = held.deadLetter();
        if (!selection.matches(d)) {
          return;
        }
        try {
          actions.record(action(Kind.DISCARDED, d, null, reason));
          held.remove();
          notify(l -> l.onRemoved(d));
          add.accept(result(d, Outcome.DISCARDED, null, "discarded: " + reason));
        } catch (RuntimeException e) {
          add.accept(result(d, Outcome.FAILED, null, "not discarded, it stays: " + oneLine(e)));
        }
      });
    }
    return new ActionReport("discard", destination.name(), selection.describe(), dryRun, results);
  }

  /** Where {@code d} may be replayed to, or why not: a target, or a REFUSED or FAILED result. */
  private record Checked(@Nullable String target, @Nullable ActionResult stop) {}

  private Checked check(DeadLetter d, ReplayOptions options) {
    String refusal = refusal(d, options);
    if (refusal != null) {
      return new Checked(null, result(d, Outcome.REFUSED, null, refusal));
    }
    try {
      return new Checked(destination.target(d), null);
    } catch (DeadLetterException e) {
      return new Checked(null, result(d, Outcome.FAILED, null, String.valueOf(e.getMessage())));
    }
  }

  private ActionResult dryReplay(DeadLetter d, ReplayOptions options) {
    Checked checked = check(d, options);
    if (checked.stop() != null) {
      return checked.stop();
    }
    String target = Objects.requireNonNull(checked.target());
    return result(d, Outcome.WOULD_REPLAY, target, "would be " + (options.keep() ? "copied" : "replayed")
        + " to " + target + ": " + storeSays(d));
  }

  private ActionResult replay(DeadLetterDestination.Held held, ReplayOptions options) {
    DeadLetter d = held.deadLetter();
    Checked checked = check(d, options);
    if (checked.stop() != null) {
      return checked.stop();
    }
    String target = Objects.requireNonNull(checked.target());
    pace(options.ratePerSecond());
    DeadLetterReason reason = Objects.requireNonNull(d.reason());
    boolean released = false;
    try {
      if (reason.key() != null) {
        released = Objects.requireNonNull(decisions).release(reason.consumerGroup(), reason.key());
        boolean wasReleased = released;
        notify(l -> l.onReleased(d, wasReleased));
      }
    } catch (RuntimeException e) {
      return result(d, Outcome.FAILED, target, "not replayed, it stays: the store could not release the key's"
          + " decision: " + oneLine(e));
    }
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put(DeadLetterHeaders.REPLAY_COUNT, Integer.toString(d.replayCount() + 1));
    headers.put(DeadLetterHeaders.REPLAYED_AT, Instant.now().truncatedTo(ChronoUnit.MILLIS).toString());
    try {
      held.republish(target, headers);
    } catch (RuntimeException e) {
      return result(d, Outcome.FAILED, target, "not republished, it stays: " + oneLine(e));
    }
    notify(l -> l.onRepublished(d, target));
    String said = released ? "decision released" : reason.key() == null ? "keyless" : afterNoRelease(reason);
    Kind kind = options.keep() ? Kind.COPIED : Kind.REPLAYED;
    try {
      if (actions != null) {
        actions.record(action(kind, d, target, null));
      }
      if (options.keep()) {
        return result(d, Outcome.COPIED, target, "copied to " + target + ", kept; " + said);
      }
      held.remove();
    } catch (RuntimeException e) {
      return result(d, Outcome.FAILED, target, "republished to " + target + " but not removed, it stays"
          + " (replaying it again is a duplicate the store skips): " + oneLine(e));
    }
    notify(l -> l.onRemoved(d));
    return result(d, Outcome.REPLAYED, target, "replayed to " + target + "; " + said);
  }

  /** Why {@code d} must not be replayed, or {@code null}. */
  private @Nullable String refusal(DeadLetter d, ReplayOptions options) {
    DeadLetterReason reason = d.reason();
    if (reason == null) {
      return "not dead-lettered by Idem (no idem-dead-letter-cause and idem-consumer-group headers: the broker"
          + " moved it itself), so there is no decision to release and no key to deduplicate a replay by;"
          + " discard it, or move it with the broker's own tools";
    }
    if (d.replayCount() >= options.maxReplays() && !options.force()) {
      return "loop guard: replayed " + d.replayCount() + " time" + (d.replayCount() == 1 ? "" : "s")
          + " already and dead-lettered again (limit " + options.maxReplays() + "); fix the cause first, or"
          + " replay with --force";
    }
    if (reason.key() != null && !options.force()) {
      DeadLetterDecisions.Marker marker = Objects.requireNonNull(decisions).marker(reason.consumerGroup(), reason.key());
      if (marker != null && marker.keySource() == KeySource.BROKER_ID) {
        return "its idempotency key came from the broker message id, and a republished copy gets a new one:"
            + " the store could not tell two replays apart; replay with --force if it must run once more";
      }
    }
    return null;
  }

  /** What the store said of a key whose decision was not there to release. */
  private String afterNoRelease(DeadLetterReason reason) {
    try {
      DeadLetterDecisions.Marker marker =
          Objects.requireNonNull(decisions).marker(reason.consumerGroup(), Objects.requireNonNull(reason.key()));
      return marker != null && marker.outcome() == DeadLetterDecisions.Outcome.PROCESSED
          ? "the key is applied already: the copy is a duplicate, no second effect"
          : "no decision was recorded for the key: the copy is processed";
    } catch (RuntimeException e) {
      return "no decision to release";
    }
  }

  /** What the store holds for the key, for a dry run. */
  private String storeSays(DeadLetter d) {
    DeadLetterReason reason = Objects.requireNonNull(d.reason());
    if (reason.key() == null) {
      return "keyless, nothing in the store";
    }
    DeadLetterDecisions.Marker marker = Objects.requireNonNull(decisions).marker(reason.consumerGroup(), reason.key());
    if (marker == null) {
      return "no marker for the key: it will be processed";
    }
    return marker.outcome() == DeadLetterDecisions.Outcome.DEAD_LETTERED
        ? "its decision would be released and it processed"
        : "the key was applied meanwhile: a duplicate, no second effect";
  }

  private void pace(double ratePerSecond) {
    if (ratePerSecond <= 0) {
      return;
    }
    long now = System.nanoTime();
    long wait = nextRepublishNanos - now;
    if (wait > 0) {
      try {
        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new DeadLetterException("interrupted while pacing the replay");
      }
    }
    nextRepublishNanos = Math.max(now, nextRepublishNanos) + (long) (1e9 / ratePerSecond);
  }

  private Action action(Kind kind, DeadLetter d, @Nullable String target, @Nullable String why) {
    DeadLetterReason r = d.reason();
    return new Action(kind, destination.broker(), destination.name(), d.id(), r == null ? null : r.consumerGroup(),
        r == null ? null : r.key(), r == null ? null : r.cause().name(), target, operator, why, null);
  }

  private static ActionResult result(DeadLetter d, Outcome outcome, @Nullable String target, String detail) {
    return new ActionResult(d.id(), d.consumerGroup(), d.key(), outcome, target, detail);
  }

  private void notify(Consumer<DeadLetterListener> call) {
    try {
      call.accept(listener);
    } catch (RuntimeException e) {
      LOG.warn("dead-letter listener failed (ignored): {}", oneLine(e));
    }
  }

  static String oneLine(Throwable e) {
    String text = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }

  /** Builder of {@link DeadLetterOperations}. Not thread-safe. */
  public static final class Builder {
    private final DeadLetterDestination destination;
    private @Nullable DeadLetterDecisions decisions;
    private @Nullable DeadLetterActions actions;
    private String operator = defaultOperator();
    private DeadLetterListener listener = new DeadLetterListener() {};
    private int maxScan = DEFAULT_MAX_SCAN;

    private Builder(DeadLetterDestination destination) {
      this.destination = Objects.requireNonNull(destination, "destination");
    }

    /** The processed-events store's decisions: needed to replay. */
    public Builder decisions(@Nullable DeadLetterDecisions value) {
      this.decisions = value;
      return this;
    }

    /** The record of actions: needed to discard; a replay is recorded when given. */
    public Builder actions(@Nullable DeadLetterActions value) {
      this.actions = value;
      return this;
    }

    /** Who acts, as recorded; default {@code user@host} of this process. */
    public Builder operator(String value) {
      if (value == null || value.isBlank()) {
        throw new IllegalArgumentException("operator must name who acts, but was blank");
      }
      this.operator = value;
      return this;
    }

    public Builder listener(DeadLetterListener value) {
      this.listener = Objects.requireNonNull(value, "listener");
      return this;
    }

    /** The most dead letters an operation reads, 1 to 1,000,000; default {@value #DEFAULT_MAX_SCAN}. */
    public Builder maxScan(int value) {
      if (value < 1 || value > 1_000_000) {
        throw new IllegalArgumentException("maxScan must be in [1, 1000000], but was " + value);
      }
      this.maxScan = value;
      return this;
    }

    public DeadLetterOperations build() {
      return new DeadLetterOperations(this);
    }

    private static String defaultOperator() {
      String user = System.getProperty("user.name", "unknown");
      String host = System.getenv("HOSTNAME");
      if (host == null || host.isBlank()) {
        try {
          host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException | RuntimeException e) {
          host = "localhost";
        }
      }
      return user + "@" + host;
    }
  }
}
