package io.idem;

import java.util.Objects;

/**
 * One new message of a batch with the idempotency key the store claimed for it, as a {@link
 * BatchMessageHandler} receives it. Immutable.
 *
 * @param key the key claimed in the batch's transaction, exactly as stored (also when it came from
 *     CloudEvents headers or a JSON Pointer, or was hashed)
 * @param message the delivery
 */
public record KeyedMessage(IdempotencyKey key, InboundMessage message) {
  public KeyedMessage {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(message, "message");
  }
}
