package io.idem.internal;

import io.idem.InboundMessage;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The event inside an envelope: its own headers and payload, the delivery's everything else
 * (source, broker id, attempt, attempt limit, received-at, native record). {@code typed}: the
 * envelope gave the payload a content type, explicit or implied (a CloudEvent's {@code data} is
 * JSON without a {@code datacontenttype}), so no envelope may be recognized in it by its shape.
 */
public record UnwrappedMessage(
    InboundMessage delivery,
    Map<String, String> headers,
    Set<String> undecodableHeaders,
    byte[] payload,
    boolean typed)
    implements InboundMessage {

  public UnwrappedMessage {
    Objects.requireNonNull(delivery, "delivery");
    Objects.requireNonNull(headers, "headers");
    Objects.requireNonNull(undecodableHeaders, "undecodableHeaders");
    Objects.requireNonNull(payload, "payload");
  }

  public static InboundMessage of(InboundMessage delivery, Map<String, String> headers,
      Set<String> undecodableHeaders, byte[] payload) {
    return new UnwrappedMessage(delivery, headers, undecodableHeaders, payload, false);
  }

  /** Whether {@code message} is an envelope's payload whose content type the envelope implies. */
  public static boolean typed(InboundMessage message) {
    return message instanceof UnwrappedMessage unwrapped && unwrapped.typed;
  }

  @Override
  public String source() {
    return delivery.source();
  }

  @Override
  public @Nullable String brokerMessageId() {
    return delivery.brokerMessageId();
  }

  @Override
  public int deliveryAttempt() {
    return delivery.deliveryAttempt();
  }

  @Override
  public int brokerAttemptLimit() {
    return delivery.brokerAttemptLimit();
  }

  @Override
  public boolean unaccountedRedelivery() {
    return delivery.unaccountedRedelivery();
  }

  @Override
  public Instant receivedAt() {
    return delivery.receivedAt();
  }

  /** The delivery itself for its own type (an adapter's message class), else its native objects. */
  @Override
  public <T> Optional<T> unwrap(Class<T> type) {
    return type.isInstance(delivery) ? Optional.of(type.cast(delivery)) : delivery.unwrap(type);
  }

  @Override
  public String toString() {
    return "UnwrappedMessage[of " + delivery + ", headers=" + headers.keySet()
        + ", payload=" + payload.length + " bytes]";
  }
}
