package io.idem.examples.spring;

import io.idem.IdempotencyKey;
import io.idem.InboundMessage;
import io.idem.KeyedMessageHandler;
import java.nio.charset.StandardCharsets;
import org.apache.ibatis.session.SqlSession;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * {@code idem.consumers.payments.handler}: books a payment (RabbitMQ message body {@code
 * <order id> <amount in cents>}) against its order's balance, in the same transaction as Idem's
 * marker. Booking twice would be wrong: the marker is what prevents it on redelivery. A body that
 * does not parse fails every attempt and ends in {@code payments.dlq}. Thread-safe.
 */
@Component("paymentHandler")
public class PaymentHandler implements KeyedMessageHandler<SqlSession> {
  private final JdbcTemplate jdbc;

  public PaymentHandler(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  @Override
  public void handle(IdempotencyKey key, InboundMessage message, SqlSession session) {
    String[] fields = new String(message.payload(), StandardCharsets.UTF_8).trim().split(" ");
    if (fields.length != 2) {
      throw new IllegalArgumentException("a payment is '<order id> <amount in cents>'");
    }
    long amount = Long.parseLong(fields[1]);
    jdbc.update("INSERT INTO payments (id, order_id, amount_cents) VALUES (?, ?, ?)",
        key.value(), fields[0], amount);
    jdbc.update("INSERT INTO balances (order_id, paid_cents) VALUES (?, ?)"
        + " ON CONFLICT (order_id) DO UPDATE SET paid_cents = balances.paid_cents + EXCLUDED.paid_cents",
        fields[0], amount);
  }
}
