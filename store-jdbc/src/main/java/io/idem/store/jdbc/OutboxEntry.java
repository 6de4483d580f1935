package io.idem.store.jdbc;

import io.idem.IdempotencyKey;
import io.idem.spi.OutboxMessage;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One side effect to enqueue with {@link Outbox#enqueue(org.apache.ibatis.session.SqlSession,
 * OutboxEntry)}. Immutable.
 *
 * @param idempotencyKey the key every published copy carries; usually the consumed message's
 *     {@link IdempotencyKey#value()}. One (destination, key) pair is one row: two effects of one
 *     event sent to the same destination need two keys (for example {@code key + ":email"});
 *     1 to {@value IdempotencyKey#MAX_LENGTH} characters, the rules of {@link
 *     IdempotencyKey#problemWith}
 * @param destination where the publisher sends it (topic, exchange or queue, queue URL, API
 *     path); 1 to {@value Outbox#MAX_DESTINATION_LENGTH} characters
 * @param orderingKey rows with the same ordering key (an aggregate id, the key itself) are
 *     published one at a time in enqueue order, a failing one holding those behind it; {@code
 *     null}: no order; at most {@value Outbox#MAX_ORDERING_KEY_LENGTH} characters
 * @param payload the body (not copied)
 * @param headers extra headers, copied; must not hold {@value OutboxMessage#KEY_HEADER} (the
 *     publisher sets it from the key)
 */
public record OutboxEntry(
    String idempotencyKey,
    String destination,
    @Nullable String orderingKey,
    byte[] payload,
    Map<String, String> headers) {

  /** @throws IllegalArgumentException naming the field and value that break a rule above */
  public OutboxEntry {
    Objects.requireNonNull(idempotencyKey, "idempotencyKey");
    Objects.requireNonNull(destination, "destination");
    Objects.requireNonNull(payload, "payload");
    headers = Map.copyOf(Objects.requireNonNull(headers, "headers"));
    String problem = IdempotencyKey.problemWith(idempotencyKey);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    requireLength("destination", destination, Outbox.MAX_DESTINATION_LENGTH);
    if (orderingKey != null) {
      requireLength("orderingKey", orderingKey, Outbox.MAX_ORDERING_KEY_LENGTH);
    }
    for (String name : headers.keySet()) {
      if (name.equalsIgnoreCase(OutboxMessage.KEY_HEADER)) {
        throw new IllegalArgumentException("headers must not hold '" + name
            + "': the publisher sets it from idempotencyKey");
      }
    }
  }

  /** An unordered entry without extra headers, keyed by {@code key.value()}. */
  public static OutboxEntry of(IdempotencyKey key, String destination, byte[] payload) {
    return new OutboxEntry(key.value(), destination, null, payload, Map.of());
  }

  /** This entry, published in order with the other rows of {@code value}. */
  public OutboxEntry orderedBy(String value) {
    return new OutboxEntry(idempotencyKey, destination, value, payload, headers);
  }

  /** This entry with {@code value} as its extra headers. */
  public OutboxEntry withHeaders(Map<String, String> value) {
    return new OutboxEntry(idempotencyKey, destination, orderingKey, payload, value);
  }

  private static void requireLength(String name, String value, int max) {
    if (value.isBlank() || value.length() > max || value.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(name + " must be 1 to " + max
          + " characters, not blank, without NUL, but was '" + value + "'");
    }
  }
}
