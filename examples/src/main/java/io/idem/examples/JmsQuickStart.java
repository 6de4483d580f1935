package io.idem.examples;

import io.idem.jms.JmsConsumerConfig;
import io.idem.jms.JmsIdempotentConsumer;
import jakarta.jms.ConnectionFactory;
import javax.sql.DataSource;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;

/**
 * Consumes JMS queue {@code orders} idempotently with four workers, each on a transacted session
 * committed only after the PostgreSQL transaction committed; dead letters go to {@code
 * orders.dlq}, which must exist. JMS property names cannot contain '-': producers set the key in
 * property {@code idempotency_key} ({@code JmsHeaderNames.DEFAULT_KEY_PROPERTY}). Any Jakarta
 * Messaging 3.1 {@link ConnectionFactory} works; this one is ActiveMQ Artemis'.
 *
 * <p>{@code java io.idem.examples.JmsQuickStart [broker-url] [jdbc-url] [user] [password]}
 */
public final class JmsQuickStart {
  private JmsQuickStart() {}

  /** Builds the pipeline and starts consuming; close the consumer to stop. */
  public static JmsIdempotentConsumer start(ConnectionFactory connectionFactory, DataSource dataSource) {
    var pipeline = Billing.pipeline(Billing.sqlSessionFactory(dataSource));
    JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(
        JmsConsumerConfig.builder(connectionFactory, "orders", "orders.dlq").concurrency(4).build(),
        pipeline);
    consumer.start();
    return consumer;
  }

  public static void main(String[] args) throws InterruptedException {
    ConnectionFactory connectionFactory =
        new ActiveMQConnectionFactory(Billing.arg(args, 0, "tcp://localhost:61616"));
    Billing.runUntilShutdown(start(connectionFactory, Billing.dataSource(args, 1)));
  }
}
