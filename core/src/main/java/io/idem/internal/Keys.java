package io.idem.internal;

import io.idem.DeadLetterCause;
import io.idem.EnvelopeFormat;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.KeySource;
import io.idem.OversizedKeyPolicy;
import io.idem.Unwrapping;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pipeline's keys: extraction with the oversized-key policy (docs/DESIGN.md, "Keys"), and the
 * announcement of a found key ({@code onKey}, the broker-id fallback counted and logged).
 * Thread-safe.
 */
final class Keys {
  // the pipeline's logger, so that its lines keep one category whichever class writes them
  private static final Logger LOG = LoggerFactory.getLogger(IdempotentConsumer.class);

  private final String consumerGroup;
  private final IdempotencyKeyExtractor extractor;
  private final @Nullable EnvelopeFormat envelopes;
  private final OversizedKeyPolicy oversizedKeys;
  private final IdempotencyListener listener;
  private final AtomicLong brokerIdFallbacks = new AtomicLong();

  Keys(String consumerGroup, @Nullable EnvelopeFormat envelopes, IdempotencyKeyExtractor extractor,
      OversizedKeyPolicy oversizedKeys, IdempotencyListener listener) {
    this.consumerGroup = consumerGroup;
    this.envelopes = envelopes;
    this.extractor = extractor;
    this.oversizedKeys = oversizedKeys;
    this.listener = listener;
  }

  /**
   * The event inside the delivery's envelopes (the delivery itself when it has none) and its key,
   * or why it has none (NO_KEY / INVALID_KEY, an envelope that cannot be opened included). Key
   * extraction, the fingerprint and the handler all see {@link KeyOrReason#message()}.
   */
  KeyOrReason key(InboundMessage delivery) {
    InboundMessage message = delivery;
    String opened = ""; // names the envelopes in a keyless reason: the key was looked for inside
    if (envelopes != null) {
      Unwrapping unwrapping = ChainedEnvelopeFormat.open(envelopes, delivery);
      if (unwrapping instanceof Unwrapping.Rejected rejected) {
        return KeyOrReason.reason(delivery, DeadLetterCause.INVALID_KEY, rejected.reason());
      }
      if (unwrapping instanceof Unwrapping.Unwrapped unwrapped) {
        message = unwrapped.message();
        opened = " (in the event inside the " + unwrapped.format() + ")";
      }
    }
    KeyExtraction extraction = ChainedKeyExtractor.extractSafely(extractor, message);
    if (extraction instanceof KeyExtraction.Absent absent) {
      return KeyOrReason.reason(message, DeadLetterCause.NO_KEY, absent.detail() + opened);
    }
    if (extraction instanceof KeyExtraction.Rejected rejected) {
      return KeyOrReason.reason(message, DeadLetterCause.INVALID_KEY, rejected.reason() + opened);
    }
    KeyExtraction.Found found = (KeyExtraction.Found) extraction;
    String value = found.value();
    if (value.length() > IdempotencyKey.MAX_LENGTH && oversizedKeys == OversizedKeyPolicy.HASH) {
      // the content rules (no NUL, no unpaired surrogate) hold for a key about to be hashed too
      String problem = IdempotencyKey.problemWithContent(value);
      if (problem != null) {
        return KeyOrReason.reason(message, DeadLetterCause.INVALID_KEY, found.origin() + ": " + problem);
      }
      value = Fingerprints.hashedKey(value);
    }
    String problem = IdempotencyKey.problemWith(value);
    if (problem != null) {
      return KeyOrReason.reason(message, DeadLetterCause.INVALID_KEY, found.origin() + ": " + problem);
    }
    return KeyOrReason.key(message, new IdempotencyKey(consumerGroup, value, found.source()));
  }

  /** The key is known: {@code onKey}, and the broker-id fallback noted. */
  void announce(InboundMessage message, IdempotencyKey key) {
    listener.onKey(message, key);
    if (key.source() == KeySource.BROKER_ID) {
      noteFallback(message, key);
    }
  }

  /** Number of keys taken from broker message ids since this pipeline was built. */
  long brokerIdFallbacks() {
    return brokerIdFallbacks.get();
  }

  private void noteFallback(InboundMessage message, IdempotencyKey key) {
    long count = brokerIdFallbacks.incrementAndGet();
    if (count == 1 || Long.bitCount(count) == 1) {
      // powers of two: visible in the log without flooding it
      LOG.warn(
          "consumer group '{}' keyed {} message(s) by broker message id (fallback), latest {} on"
              + " {}: a producer retry or re-publish carries a new broker id and will be applied"
              + " again; have producers set a business key",
          consumerGroup, count, key.value(), message.source());
    } else {
      LOG.debug("broker-id fallback key {} on {}", key.value(), message.source());
    }
  }

  /**
   * A message (unwrapped from its envelopes) and its key, or (when {@code key} is {@code null})
   * the cause and reason it has none.
   */
  record KeyOrReason(
      InboundMessage message, @Nullable IdempotencyKey key, DeadLetterCause cause, String reason) {
    static KeyOrReason key(InboundMessage message, IdempotencyKey key) {
      return new KeyOrReason(message, key, DeadLetterCause.NO_KEY, "");
    }

    static KeyOrReason reason(InboundMessage message, DeadLetterCause cause, String reason) {
      return new KeyOrReason(message, null, cause, reason);
    }
  }
}
