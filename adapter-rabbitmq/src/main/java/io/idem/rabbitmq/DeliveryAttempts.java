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
 * Delivery attempts: RabbitMQ's {@code x-delivery-count} where the queue keeps one (quorum), else
 * counted here per message identity ({@code message-id} + SHA-256 of the payload) in a bounded,
 * least-recently-used map. Thread-safe.
 */
final class DeliveryAttempts {
  static final String DELIVERY_COUNT_HEADER = "x-delivery-count";
  /** Most identities remembered; older ones are forgotten (their next attempt counts as 2). */
  static final int CAPACITY = 10_000;

  private final Map<String, Integer> seen;

  DeliveryAttempts(int capacity) {
    this.seen = new LinkedHashMap<>(64, 0.75f, true) {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
        return size() > capacity;
      }
    };
  }

  /** The attempt of this delivery, from 1. */
  int attemptOf(Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
    Integer counted = brokerCount(properties.getHeaders());
    if (counted != null) {
      return counted + 1;
    }
    String id = identity(properties, body);
    synchronized (seen) {
      if (!envelope.isRedeliver()) {
        seen.put(id, 1);
        return 1;
      }
      int attempt = Math.max(2, seen.getOrDefault(id, 1) + 1);
      seen.put(id, attempt);
      return attempt;
    }
  }

  /** The message was settled for good (acked or dead-lettered): stop counting it. */
  void forget(AMQP.BasicProperties properties, byte[] body) {
    if (brokerCount(properties.getHeaders()) == null) {
      String id = identity(properties, body);
      synchronized (seen) {
        seen.remove(id);
      }
    }
  }

  int tracked() {
    synchronized (seen) {
      return seen.size();
    }
  }

  private static @Nullable Integer brokerCount(@Nullable Map<String, Object> headers) {
    if (headers != null && headers.get(DELIVERY_COUNT_HEADER) instanceof Number n && n.longValue() >= 0) {
      return (int) Math.min(n.longValue(), Integer.MAX_VALUE - 1);
    }
    return null;
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
