package io.idem.demo;

import io.idem.DeadLetterReason;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One message found in a run's dead-letter destination, as {@link DeadLetterBrowser} read it.
 *
 * @param headers header name → text value, under Idem's header names (JMS property names such
 *     as {@code idem_dead_letter_cause} are given back as {@code idem-dead-letter-cause}); values
 *     that are not valid UTF-8 are left out
 * @param payload the body bytes, as the consumer saw them
 */
public record DeadLetter(Map<String, String> headers, byte[] payload) {

  public DeadLetter {
    headers = Map.copyOf(Objects.requireNonNull(headers, "headers"));
    Objects.requireNonNull(payload, "payload");
  }

  /** The {@link DeadLetterReason#HEADER_CAUSE} header (e.g. {@code NO_KEY}), or {@code null}. */
  public @Nullable String cause() {
    return headers.get(DeadLetterReason.HEADER_CAUSE);
  }
}
