package io.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import java.time.Instant;

/**
 * One delivery as received, with the session (connection + channel) it belongs to.
 *
 * @param attempt the delivery attempt once counted, for a delivery run through the pipeline again
 *     after a store outage (it keeps its attempt); 0 when not counted yet
 */
record Delivery(
    Session session,
    Envelope envelope,
    AMQP.BasicProperties properties,
    byte[] body,
    Instant receivedAt,
    int attempt) {

  /** The same delivery (same channel, same tag), its attempt fixed at {@code counted}. */
  Delivery withAttempt(int counted) {
    return new Delivery(session, envelope, properties, body, receivedAt, counted);
  }

  long tag() {
    return envelope.getDeliveryTag();
  }

  /** Identifies the delivery in logs; the body is left out. */
  @Override
  public String toString() {
    return "delivery " + tag() + " of session " + session.generation + " (message-id "
        + properties.getMessageId() + ", redelivered " + envelope.isRedeliver() + ")";
  }
}
