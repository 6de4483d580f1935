package io.idem.internal;

import io.idem.InboundMessage;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** The {@link InboundMessage} built by {@link InboundMessage#builder(String, byte[])}. */
public record SimpleInboundMessage(
    String source,
    Map<String, String> headers,
    Set<String> undecodableHeaders,
    byte[] payload,
    @Nullable String brokerMessageId,
    int deliveryAttempt,
    int brokerAttemptLimit,
    boolean unaccountedRedelivery,
    Instant receivedAt,
    @Nullable Object nativeMessage)
    implements InboundMessage {

  @Override
  public <T> Optional<T> unwrap(Class<T> type) {
    return type.isInstance(nativeMessage) ? Optional.of(type.cast(nativeMessage)) : Optional.empty();
  }

  @Override
  public String toString() {
    return "InboundMessage[source=" + source + ", brokerMessageId=" + brokerMessageId
        + ", attempt=" + deliveryAttempt + (unaccountedRedelivery ? ", unaccountedRedelivery" : "")
        + ", headers=" + headers.keySet()
        + ", payload=" + payload.length + " bytes]";
  }
}
