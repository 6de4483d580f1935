package io.idem.examples;

import io.idem.rabbitmq.RabbitConsumerConfig;
import io.idem.rabbitmq.RabbitIdempotentConsumer;
import io.idem.rabbitmq.RabbitQueueType;
import javax.sql.DataSource;

/**
 * Consumes quorum queue {@code orders} idempotently: {@code basicAck} only after the PostgreSQL
 * transaction committed. Declares {@code orders}, {@code orders.dlx} and {@code orders.dlq} (or
 * verifies them if they exist). Producers put the business id in the {@code idempotency-key}
 * header.
 *
 * <p>{@code java io.idem.examples.RabbitQuickStart [amqp-uri] [jdbc-url] [user] [password]}
 */
public final class RabbitQuickStart {
  private RabbitQuickStart() {}

  /** Builds the pipeline and starts consuming; close the consumer to stop. */
  public static RabbitIdempotentConsumer start(String amqpUri, DataSource dataSource) {
    var pipeline = Billing.pipeline(Billing.sqlSessionFactory(dataSource));
    RabbitConsumerConfig config = RabbitConsumerConfig.builder("orders")
        .uri(amqpUri)
        .queueType(RabbitQueueType.QUORUM).deliveryLimit(20)
        .declareTopology(true)
        .build();
    RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline);
    consumer.start();
    return consumer;
  }

  public static void main(String[] args) throws InterruptedException {
    String amqpUri = Billing.arg(args, 0, "amqp://guest:guest@localhost:5672/%2F");
    Billing.runUntilShutdown(start(amqpUri, Billing.dataSource(args, 1)));
  }
}
