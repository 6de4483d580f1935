package io.idem.examples.spring;

import io.idem.IdempotencyKey;
import io.idem.InboundMessage;
import io.idem.KeyedMessageHandler;
import java.nio.charset.StandardCharsets;
import org.apache.ibatis.session.SqlSession;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * {@code idem.consumers.orders.handler}: records an order whose Kafka record value is its amount
 * in cents. The write joins Idem's transaction (the connection Spring bound to the thread), so the
 * order and Idem's marker commit together. A value that is not a number fails every attempt
 * ({@link NumberFormatException}) and ends in {@code orders.DLT}. Thread-safe.
 */
@Component("orderHandler")
public class OrderHandler implements KeyedMessageHandler<SqlSession> {
  private final JdbcTemplate jdbc;

  public OrderHandler(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  @Override
  public void handle(IdempotencyKey key, InboundMessage message, SqlSession session) {
    long amount = Long.parseLong(new String(message.payload(), StandardCharsets.UTF_8).trim());
    jdbc.update("INSERT INTO orders (id, amount_cents) VALUES (?, ?)", key.value(), amount);
  }
}
