package io.idem.testkit;

import io.idem.DeadLetterReason;
import java.util.Arrays;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A message read back from a dead-letter destination.
 *
 * @param headers its headers (the original ones plus {@link DeadLetterReason#toHeaders()})
 * @param payload its body
 */
public record DeadLetteredMessage(Map<String, String> headers, byte[] payload) {

  /** The {@link DeadLetterReason#HEADER_CAUSE} header, or {@code null}. */
  public @Nullable String cause() {
    return headers.get(DeadLetterReason.HEADER_CAUSE);
  }

  /** The {@link DeadLetterReason#HEADER_DETAIL} header, or {@code null}. */
  public @Nullable String detail() {
    return headers.get(DeadLetterReason.HEADER_DETAIL);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DeadLetteredMessage other
        && headers.equals(other.headers)
        && Arrays.equals(payload, other.payload);
  }

  @Override
  public int hashCode() {
    return headers.hashCode() * 31 + Arrays.hashCode(payload);
  }

  @Override
  public String toString() {
    return "DeadLetteredMessage[headers=" + headers + ", payload=" + payload.length + " bytes]";
  }
}
