package io.idem.deadletters;

import io.idem.DeadLetterReason;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One dead letter as read from its dead-letter destination, without removing it. Immutable (the
 * payload and record key are copied in and out).
 *
 * @param id the dead letter's id in its destination, as the tool selects it: Kafka {@code
 *     <topic>-<partition>@<offset>}, SQS {@code MessageId}, JMS {@code JMSMessageID}, RabbitMQ the
 *     {@code message-id} property (or {@code sha256:<16 hex>} of body and headers when the
 *     publisher set none; two copies of one message then share the id)
 * @param broker {@code kafka}, {@code rabbitmq}, {@code sqs} or {@code jms}
 * @param destination the dead-letter destination (topic, queue name or URL)
 * @param source the topic or queue the original was consumed from, when known (Kafka's {@code
 *     idem-original-topic}, JMS's {@code idem-original-queue}, the source queue configured or found
 *     for RabbitMQ and SQS), else {@code null}
 * @param headers the dead letter's headers that are text (strict UTF-8), under the broker's own
 *     names (JMS: {@code idem_dead_letter_cause}), in the broker's order
 * @param payload the body as stored
 * @param recordKey the Kafka record key, else {@code null}
 * @param deadLetteredAt when the copy was stored (Kafka record timestamp, SQS {@code
 *     SentTimestamp}, JMS {@code JMSTimestamp}); {@code null} when the broker does not say
 *     (RabbitMQ keeps no arrival time)
 * @param reason the Idem reason read back from the headers ({@link DeadLetterHeaders#reason}), or
 *     {@code null} for a dead letter the broker made itself
 * @param replayCount the {@link DeadLetterHeaders#REPLAY_COUNT} the dead letter carries: how many
 *     times its message was replayed before it was dead-lettered again (0 for a first dead letter)
 */
public record DeadLetter(
    String id,
    String broker,
    String destination,
    @Nullable String source,
    Map<String, String> headers,
    byte[] payload,
    byte @Nullable [] recordKey,
    @Nullable Instant deadLetteredAt,
    @Nullable DeadLetterReason reason,
    int replayCount) {

  public DeadLetter {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(broker, "broker");
    Objects.requireNonNull(destination, "destination");
    headers = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(headers, "headers")));
    payload = Objects.requireNonNull(payload, "payload").clone();
    recordKey = recordKey == null ? null : recordKey.clone();
  }

  /** The payload, a copy. */
  @Override
  public byte[] payload() {
    return payload.clone();
  }

  /** The Kafka record key, a copy, or {@code null}. */
  @Override
  public byte @Nullable [] recordKey() {
    return recordKey == null ? null : recordKey.clone();
  }

  /** Whether Idem dead-lettered it (its headers carry an Idem reason). */
  public boolean isIdems() {
    return reason != null;
  }

  /** The idempotency key of the Idem reason, or {@code null} (broker-made, or keyless). */
  public @Nullable String key() {
    return reason == null ? null : reason.key();
  }

  /** The consumer group of the Idem reason, or {@code null}. */
  public @Nullable String consumerGroup() {
    return reason == null ? null : reason.consumerGroup();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DeadLetter d && id.equals(d.id) && broker.equals(d.broker)
        && destination.equals(d.destination) && Objects.equals(source, d.source)
        && headers.equals(d.headers) && Arrays.equals(payload, d.payload)
        && Arrays.equals(recordKey, d.recordKey) && Objects.equals(deadLetteredAt, d.deadLetteredAt)
        && Objects.equals(reason, d.reason) && replayCount == d.replayCount;
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, destination, Arrays.hashCode(payload));
  }

  @Override
  public String toString() {
    return "DeadLetter[" + id + " in " + destination + " (" + broker + ")"
        + (reason == null ? ", not Idem's" : ", " + reason.cause() + ", key " + reason.key()) + "]";
  }
}
