package io.idem.examples;

import io.idem.IdempotentConsumer;
import io.idem.kafka.KafkaOutboxPublisher;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxRelay;
import java.util.Map;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;

/**
 * The README's transactional-outbox example (docs/OUTBOX.md): the billing handler charges the order
 * and enqueues a receipt in the same transaction as the processed-events marker; an
 * {@link OutboxRelay} publishes each receipt to the Kafka topic {@code receipts} after the commit,
 * carrying the order event's idempotency key, so the receipts' consumer deduplicates a re-publish.
 * The main job does the same on every broker, with the relay killed (docs/MAIN-JOB.md).
 */
public final class Receipts {
  private Receipts() {}

  /**
   * Starts a relay publishing {@code sqlSessionFactory}'s outbox rows to Kafka; close it at
   * shutdown (it finishes the batch in flight), then close its publisher.
   *
   * @return the billing pipeline, whose handler writes the outbox rows the relay publishes
   */
  public static IdempotentConsumer<SqlSession> pipelineWithRelay(
      SqlSessionFactory sqlSessionFactory, String bootstrapServers) {
    var store = MyBatisProcessedEventStore.builder(sqlSessionFactory).createTableIfMissing(true).build();
    // README: begin
    Outbox outbox = Outbox.ofDefaults();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store).consumerGroup("billing")
        .handler((key, message, session) -> {        // one transaction: marker, charge, outbox row
          session.getMapper(Payments.class).charge(key.value());
          outbox.enqueue(session, key, "receipts", message.payload(), Map.of("type", "receipt"));
        })
        .build();
    OutboxRelay relay = OutboxRelay.builder(sqlSessionFactory, KafkaOutboxPublisher.create(
        Map.of("bootstrap.servers", bootstrapServers))).createTableIfMissing(true).build();
    relay.start();                 // publishes each row after its commit, keyed; relay.close() at shutdown
    // README: end
    return pipeline;
  }
}
