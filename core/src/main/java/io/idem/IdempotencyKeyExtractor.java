package io.idem;

import io.idem.internal.BrokerIdKeyExtractor;
import io.idem.internal.ChainedKeyExtractor;
import io.idem.internal.CloudEventsKeyExtractor;
import io.idem.internal.HeaderKeyExtractor;
import io.idem.internal.JsonPointerKeyExtractor;
import java.util.List;

/**
 * Finds the idempotency key of a message. Extractors are combined with {@link #firstOf}: the
 * first one that {@link KeyExtraction.Found finds} a key or {@link KeyExtraction.Rejected
 * rejects} the message decides; {@link KeyExtraction.Absent} passes on to the next.
 *
 * <p>Prefer keys the producer sets from the business event (an order id, a payment id): they are
 * the same on a producer retry, on a re-publish and on another broker. Broker ids are not, so
 * {@link #brokerMessageId()} is an explicit, counted fallback.
 *
 * <p>Implementations must be thread-safe and must not throw; a failure to read the message is a
 * {@link KeyExtraction.Rejected} with the reason.
 */
@FunctionalInterface
public interface IdempotencyKeyExtractor {

  /** The header every Idem producer example sets: {@value}. */
  String DEFAULT_HEADER = "idempotency-key";

  /**
   * Extracts the key from one message.
   *
   * @return never {@code null} (the pipeline and {@link #firstOf} treat a {@code null}, like an
   *     exception, as a {@link KeyExtraction.Rejected} naming this extractor)
   */
  KeyExtraction extract(InboundMessage message);

  /**
   * The default chain: header {@value #DEFAULT_HEADER}, then CloudEvents {@code source}+{@code id}.
   * No broker-id fallback: a message with neither is dead-lettered. It reads the event inside
   * an envelope the pipeline opened ({@link EnvelopeFormat}): an SNS notification's message
   * attributes, a structured CloudEvent's attributes. Other producers' ids are one extractor
   * away: Debezium's outbox event router {@code header("id")}, a webhook's top-level event id
   * {@code jsonPointer("/id")} (docs/KEYS.md).
   */
  static IdempotencyKeyExtractor defaults() {
    return firstOf(header(DEFAULT_HEADER), cloudEvents());
  }

  /**
   * A producer-set header (case-sensitive name). Absent when the header is missing; rejected when
   * it is blank or not valid UTF-8.
   */
  static IdempotencyKeyExtractor header(String name) {
    return new HeaderKeyExtractor(name);
  }

  /**
   * The CloudEvents {@code source} and {@code id} attributes in binary content mode, as the
   * protocol bindings name them: {@code ce_id}/{@code ce_source} (Kafka, JMS, RabbitMQ via the
   * AMQP binding's {@code cloudEvents_} or {@code cloudEvents:} prefixes) and
   * {@code ce-id}/{@code ce-source} (HTTP-style). The key is {@code source + " " + id}: the
   * CloudEvents spec makes that pair unique per event, and a URI-reference has no space, so the
   * value cannot be ambiguous. Rejected when {@code id} is present without {@code source}, and
   * when {@code source} holds whitespace or a control character (it is then no URI-reference,
   * and {@code "urn:a b"+"1"} would make the same key as {@code "urn:a"+"b 1"}). Structured mode
   * reaches this extractor as these same {@code ce_} headers: the pipeline opens it first
   * ({@link EnvelopeFormat#cloudEventsStructured()}).
   */
  static IdempotencyKeyExtractor cloudEvents() {
    return new CloudEventsKeyExtractor();
  }

  /**
   * A string or number field of a JSON payload (RFC 6901 pointer, for example {@code /orderId}),
   * read with Jackson; numbers keep their exact digits ({@code 1.0000000000000001} is not
   * {@code 1.0}). Absent when the field is missing or JSON {@code null}; rejected when the payload
   * is not valid JSON (trailing content included) or the field is an object, array or boolean.
   *
   * @throws IllegalArgumentException if {@code pointer} is not a valid JSON Pointer
   */
  static IdempotencyKeyExtractor jsonPointer(String pointer) {
    return new JsonPointerKeyExtractor(pointer);
  }

  /**
   * The broker's message id ({@link InboundMessage#brokerMessageId()}), as an explicit last
   * resort. Every key found this way is counted ({@code idem.key.fallback}) and logged, because a
   * producer retry or a re-publish gets a new broker id and is then applied again.
   */
  static IdempotencyKeyExtractor brokerMessageId() {
    return new BrokerIdKeyExtractor();
  }

  /** Tries the extractors in order; see the class description. */
  static IdempotencyKeyExtractor firstOf(IdempotencyKeyExtractor... extractors) {
    return new ChainedKeyExtractor(List.of(extractors));
  }

  /** This extractor, then {@code next} when this one finds nothing. */
  default IdempotencyKeyExtractor orElse(IdempotencyKeyExtractor next) {
    return firstOf(this, next);
  }
}
