package io.idem;

/** Where an {@link IdempotencyKey}'s value came from; stored with each processed-events row. */
public enum KeySource {
  /** A producer-set header such as {@code idempotency-key}: the preferred source. */
  HEADER,
  /** The CloudEvents {@code source} and {@code id} attributes (binary content mode headers, or structured mode once {@link EnvelopeFormat#cloudEventsStructured() unwrapped}). */
  CLOUDEVENTS,
  /** A field of a JSON payload, addressed by a JSON Pointer. */
  PAYLOAD,
  /**
   * The broker's message id (Kafka offset, SQS MessageId, AMQP message-id, JMSMessageID): an
   * explicit fallback only, counted and logged, because a producer retry gets a new broker id
   * and is then not recognised as a duplicate.
   */
  BROKER_ID
}
