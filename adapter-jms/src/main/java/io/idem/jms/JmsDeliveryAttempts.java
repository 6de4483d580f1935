package io.idem.jms;

import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link JmsIdempotentConsumer} saw happen to the deliveries it handed to a handler, so that
 * a redelivery is flagged as {@linkplain io.idem.InboundMessage#unaccountedRedelivery()
 * unaccounted} exactly when this consumer cannot tell how the earlier delivery ended (docs/FAILURES.md,
 * "Attempts that survive the process").
 *
 * <p>Per message ({@code JMSMessageID}, which a JMS provider keeps across redeliveries) it
 * remembers the attempt of this consumer's life and how the delivery ended:
 *
 * <ul>
 *   <li>a delivery the broker marks as delivered before ({@code JMSRedelivered}, or
 *       {@code JMSXDeliveryCount} above 1) that this consumer never saw, or saw and never saw end
 *       (its process died in the handler, an {@code Error} stopped the worker, the session was
 *       rolled back for whatever escaped the pipeline, the connection broke): <b>unaccounted</b>.
 *       Its attempt is the broker's count ({@code JMSXDeliveryCount}); the pipeline takes the
 *       attempt from the store's count instead, since that count also rises for the messages
 *       prefetched with a process-killing one at each of its deaths (Artemis);
 *   <li>a delivery whose handler failed here and was rolled back (or recovered) by this consumer:
 *       the consumer's own in-life retry, never flagged; its attempt is one more than the failed
 *       one's — counted here, not from {@code JMSXDeliveryCount} (which may be raised by deaths of
 *       another message), and from 1 after an unaccounted delivery, whose runs the store counted;
 *   <li>a delivery the broker does not mark: a first delivery, attempt 1.
 * </ul>
 *
 * A settled message (committed or acknowledged, dead-lettered) is forgotten. At most {@link
 * #CAPACITY} messages are remembered (least recently used forgotten first); a forgotten one is
 * flagged on its next redelivery, which costs two store round trips and no wrong outcome. A
 * message without a {@code JMSMessageID} is never remembered. Thread-safe: shared by the workers of
 * one consumer, since a message rolled back by one may be redelivered to another.
 */
final class JmsDeliveryAttempts {
  /** Most messages remembered; older ones are forgotten (least recently used first). */
  static final int CAPACITY = 10_000;

  private enum End { SEEN, FAILED }

  /** The attempt this consumer's life counted for a message, and how its last delivery ended. */
  private record Seen(int attempt, End end) {}

  /**
   * A delivery's attempt and whether it is an unaccounted redelivery.
   *
   * @param number the attempt from 1: the broker's count for an unaccounted redelivery, else this
   *     consumer's
   * @param unaccounted {@link io.idem.InboundMessage#unaccountedRedelivery()}
   */
  record Attempt(int number, boolean unaccounted) {}

  private final Map<String, Seen> seen;

  JmsDeliveryAttempts(int capacity) {
    this.seen = new LinkedHashMap<>(64, 0.75f, true) {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Seen> eldest) {
        return size() > capacity;
      }
    };
  }

  /**
   * The attempt of a delivery about to be handed to the pipeline; remembered (as not yet ended)
   * until {@link #failed} or {@link #forget}.
   *
   * @param messageId its {@code JMSMessageID}, or {@code null} (then never remembered)
   * @param brokerCount its {@code JMSXDeliveryCount}, from 1 (2 for a provider that only sets
   *     {@code JMSRedelivered})
   * @param redelivered its {@code JMSRedelivered}
   */
  Attempt attempt(@Nullable String messageId, int brokerCount, boolean redelivered) {
    boolean deliveredBefore = redelivered || brokerCount > 1;
    if (messageId == null) {
      return new Attempt(deliveredBefore ? Math.max(2, brokerCount) : 1, deliveredBefore);
    }
    synchronized (seen) {
      Seen before = deliveredBefore ? seen.get(messageId) : null;
      if (!deliveredBefore) {
        seen.put(messageId, new Seen(1, End.SEEN));
        return new Attempt(1, false);
      }
      if (before != null && before.end == End.FAILED) {
        int next = before.attempt == Integer.MAX_VALUE ? before.attempt : before.attempt + 1;
        seen.put(messageId, new Seen(next, End.SEEN));
        return new Attempt(next, false);
      }
      // never seen, or seen without an end: it may have run in a handler that nobody counted. The
      // store counts this run; this life's own retries of it count from 1
      seen.put(messageId, new Seen(1, End.SEEN));
      return new Attempt(Math.max(2, brokerCount), true);
    }
  }

  /**
   * The handler failed on the delivery and this consumer hands it back for a retry (rollback or
   * recover): its redelivery is this life's next attempt, not flagged. Call before the hand-back,
   * as another worker may receive the redelivery at once.
   */
  void failed(@Nullable String messageId) {
    if (messageId == null) {
      return;
    }
    synchronized (seen) {
      Seen last = seen.get(messageId);
      seen.put(messageId, new Seen(last == null ? 1 : last.attempt, End.FAILED));
    }
  }

  /**
   * This life's attempt of a delivery: its attempt, or 1 for an unaccounted redelivery (the store
   * counted the runs before it; this life counts its own from there).
   */
  static int inLife(int attempt, boolean unaccounted) {
    return unaccounted ? 1 : attempt;
  }

  /** The message was settled for good (committed or acknowledged, dead-lettered): forget it. */
  void forget(@Nullable String messageId) {
    if (messageId == null) {
      return;
    }
    synchronized (seen) {
      seen.remove(messageId);
    }
  }

  /** How many messages are remembered (tests). */
  int tracked() {
    synchronized (seen) {
      return seen.size();
    }
  }
}
