package io.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import java.time.Instant;

/** One delivery as received, with the session (connection + channel) it belongs to. */
record Delivery(
    Session session,
    Envelope envelope,
    AMQP.BasicProperties properties,
    byte[] body,
    Instant receivedAt) {

  long tag() {
    return envelope.getDeliveryTag();
  }
}
