package io.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Delivery attempts — handler runs, from 1 — from whichever counter the broker keeps, corrected by
 * what this consumer saw happen to the message.
 *
 * <p>The broker's counter is {@code x-delivery-count} where present, else {@code x-acquired-count}
 * (RabbitMQ 4.x quorum queues), else none (classic queues, streams). What moves them differs by
 * version (docs/BROKERS.md has the table): before 4.3 a quorum queue's {@code x-delivery-count}
 * counts every return; from 4.3 only {@code basic.reject} and a lost consumer, not
 * {@code basic.nack(requeue)}; {@code x-acquired-count} counts every hand-out. So the adapter also
 * remembers, per message identity ({@code message-id} + SHA-256 of the payload), the attempt it
 * gave the last delivery, the counter it read then, and how that delivery ended:
 *
 * <ul>
 *   <li>{@linkplain #failed handler failed}: the next delivery is at least one attempt later, even
 *       when the counter did not move — so a message can never loop at a constant attempt number
 *       (a nack that a 4.3+ broker does not count, a publisher-set constant {@code x-delivery-count},
 *       a counter that policy changes stopped);
 *   <li>{@linkplain #handedBack handed back} unrun (a delivery held past {@code maxHold}): the next
 *       delivery keeps the attempt; a counter that moved by one for the hand-back itself (before
 *       4.3, or {@code x-acquired-count}) is not counted;
 *   <li>otherwise (channel lost, returned unsettled): the counter's move is added; without a
 *       counter, one more when RabbitMQ flags the delivery as redelivered.
 * </ul>
 *
 * A delivery RabbitMQ does not flag as redelivered is a first delivery: counter + 1, or 1. An
 * identity not remembered (another instance ran it, a restart, more than {@link #CAPACITY}
 * messages since) gets counter + 1, or 2 when flagged redelivered without a counter. Thread-safe.
 */
final class DeliveryAttempts {
  static final String DELIVERY_COUNT_HEADER = "x-delivery-count";
  static final String ACQUIRED_COUNT_HEADER = "x-acquired-count";
  /** Most identities remembered; older ones are forgotten (least recently used first). */
  static final int CAPACITY = 10_000;

  private enum End { SEEN, FAILED, HANDED_BACK }

  /** What was seen of a message: its last attempt, the broker counter then (-1: none), how it ended. */
  private record Seen(int attempt, long counter, End end) {}

  private final Map<String, Seen> seen;

  DeliveryAttempts(int capacity) {
    this.seen = new LinkedHashMap<>(64, 0.75f, true) {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Seen> eldest) {
        return size() > capacity;
      }
    };
  }

  /**
   * A delivery's attempt, and whether it is an unaccounted redelivery ({@link
   * io.idem.InboundMessage#unaccountedRedelivery()}): RabbitMQ says it was delivered before
   * ({@code redelivered}, or a broker counter above 0) and this consumer does not remember how that
   * delivery ended — not seen at all, or seen and never settled, failed or handed back (its
   * handler may have killed the process, or an Error the worker).
   */
  record Attempt(int number, boolean unaccounted) {}

  /** The attempt of this delivery, from 1; remembered until {@link #forget}. */
  int attemptOf(Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
    return attempt(envelope, properties, body).number();
  }

  /** {@link #attemptOf}, with whether the redelivery is unaccounted ({@link Attempt}). */
  Attempt attempt(Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
    long counter = brokerCounter(properties.getHeaders());
    String id = identity(properties, body);
    synchronized (seen) {
      Seen before = envelope.isRedeliver() ? seen.get(id) : null;
      int attempt = before == null ? firstSeen(envelope, counter) : next(before, counter);
      boolean deliveredBefore = envelope.isRedeliver() || counter > 0;
      boolean unaccounted = deliveredBefore && (before == null || before.end == End.SEEN);
      seen.put(id, new Seen(attempt, counter, End.SEEN));
      return new Attempt(attempt, unaccounted);
    }
  }

  private static int firstSeen(Envelope envelope, long counter) {
    if (counter >= 0) {
      return saturated(counter + 1);
    }
    return envelope.isRedeliver() ? 2 : 1;
  }

  private static int next(Seen before, long counter) {
    // without a counter now or then, the move is unknown: count the redelivery as one
    long moved = counter < 0 ? 1 : Math.max(0, counter - Math.max(0, before.counter));
    long attempt = switch (before.end) {
      case FAILED -> before.attempt + Math.max(1, moved);
      case HANDED_BACK -> before.attempt + (counter < 0 ? 0 : Math.max(0, moved - 1));
      case SEEN -> before.attempt + moved;
    };
    return saturated(attempt);
  }

  /** The handler failed on the delivery that had {@code attempt}; its return counts as one. */
  void failed(AMQP.BasicProperties properties, byte[] body, int attempt) {
    ended(properties, body, attempt, End.FAILED);
  }

  /** The delivery was returned without a handler run (held too long); the next keeps the attempt. */
  void handedBack(AMQP.BasicProperties properties, byte[] body, int attempt) {
    ended(properties, body, attempt, End.HANDED_BACK);
  }

  private void ended(AMQP.BasicProperties properties, byte[] body, int attempt, End end) {
    String id = identity(properties, body);
    long counter = brokerCounter(properties.getHeaders());
    synchronized (seen) {
      Seen last = seen.get(id);
      seen.put(id, new Seen(attempt, last != null ? last.counter : counter, end));
    }
  }

  /** The message was settled for good (acked or dead-lettered): stop remembering it. */
  void forget(AMQP.BasicProperties properties, byte[] body) {
    String id = identity(properties, body);
    synchronized (seen) {
      seen.remove(id);
    }
  }

  int tracked() {
    synchronized (seen) {
      return seen.size();
    }
  }

  /** {@code x-delivery-count} where present, else {@code x-acquired-count}, else -1. */
  static long brokerCounter(@Nullable Map<String, Object> headers) {
    if (headers == null) {
      return -1;
    }
    for (String name : new String[] {DELIVERY_COUNT_HEADER, ACQUIRED_COUNT_HEADER}) {
      if (headers.get(name) instanceof Number n && n.longValue() >= 0) {
        return n.longValue();
      }
    }
    return -1;
  }

  private static int saturated(long attempt) {
    return (int) Math.min(attempt, Integer.MAX_VALUE - 1);
  }

  private static String identity(AMQP.BasicProperties properties, byte[] body) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      String messageId = properties.getMessageId();
      if (messageId != null) {
        sha.update(messageId.getBytes(StandardCharsets.UTF_8));
      }
      sha.update((byte) 0);
      sha.update(body);
      return HexFormat.of().formatHex(sha.digest());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
