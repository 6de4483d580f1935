package io.idem.spi;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A dead-letter decision a {@link ProcessedEventStore} recorded for a key, before the adapter
 * stored the copy ({@link ProcessedEventStore#recordDeadLetter}): enough to store the same copy
 * again when the original comes back after a crash (or a failed offset commit) between the copy
 * and the removal of the original. Immutable.
 *
 * @param cause why the message was dead-lettered: {@link DeadLetterCause#MAX_ATTEMPTS_EXCEEDED} or
 *     {@link DeadLetterCause#NON_RETRYABLE} (keyless and conflicting messages are not recorded)
 * @param detail the reason's detail, as in {@link DeadLetterReason#detail()}
 * @param exceptionClass the handler's exception class, or {@code null}
 * @param brokerMessageId the dead-lettered delivery's {@link io.idem.InboundMessage#brokerMessageId()},
 *     or {@code null} when it had none
 */
public record DeadLetterDecision(
    DeadLetterCause cause,
    String detail,
    @Nullable String exceptionClass,
    @Nullable String brokerMessageId) {

  private static final byte[] MARKER_FINGERPRINT = markerFingerprint("idem:dead-letter-marker");

  public DeadLetterDecision {
    Objects.requireNonNull(cause, "cause");
    Objects.requireNonNull(detail, "detail");
  }

  /**
   * The payload fingerprint a store writes in a dead-letter marker instead of the payload's: the
   * SHA-256 of {@code "idem:dead-letter-marker"}, which no payload's fingerprint equals, so that
   * every later {@link ProcessedEventStore#claim} of the key answers {@link ClaimResult#CONFLICT}
   * and the pipeline asks for the decision only then, never on the hot duplicate path. A new array
   * on each call.
   */
  public static byte[] markerFingerprint() {
    return MARKER_FINGERPRINT.clone();
  }

  private static byte[] markerFingerprint(String text) {
    try {
      return java.security.MessageDigest.getInstance("SHA-256")
          .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e); // every JVM has it
    }
  }

  /** The decision of {@code reason} for the delivery {@code brokerMessageId}. */
  public static DeadLetterDecision of(DeadLetterReason reason, @Nullable String brokerMessageId) {
    return new DeadLetterDecision(
        reason.cause(), reason.detail(), reason.exceptionClass(), brokerMessageId);
  }

  /**
   * Whether a delivery with {@code brokerMessageId} is the dead-lettered one come back (a
   * redelivery after a crash: settled by storing the copy again) rather than a new message with
   * the same key (a replay from the dead-letter destination: processed anew). The broker ids tell
   * them apart where the broker gives every send its own id (a Kafka offset, an SQS or JMS message
   * id); when either id is missing the delivery is taken as the same one, so a message already
   * dead-lettered is never applied by a redelivery.
   */
  public boolean sameDelivery(@Nullable String brokerMessageId) {
    return this.brokerMessageId == null || brokerMessageId == null
        || this.brokerMessageId.equals(brokerMessageId);
  }
}
