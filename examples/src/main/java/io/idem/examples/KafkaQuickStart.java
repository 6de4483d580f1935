package io.idem.examples;

import io.idem.kafka.KafkaConsumerConfig;
import io.idem.kafka.KafkaIdempotentConsumer;
import javax.sql.DataSource;

/**
 * Consumes a topic ({@code orders} from {@code main}) idempotently: each record's offset is committed only after its
 * PostgreSQL transaction committed. Producers put the business id in the {@code idempotency-key}
 * header. Dead letters go to {@code <topic>.DLT}, which must exist unless the broker creates
 * topics on first use ({@code auto.create.topics.enable}).
 *
 * <p>{@code java io.idem.examples.KafkaQuickStart [bootstrap-servers] [jdbc-url] [user] [password]}
 */
public final class KafkaQuickStart {
  private KafkaQuickStart() {}

  /** Builds the pipeline and starts consuming; close the consumer to stop. */
  public static KafkaIdempotentConsumer start(String bootstrapServers, String topic, DataSource dataSource) {
    var pipeline = Billing.pipeline(Billing.sqlSessionFactory(dataSource));
    KafkaConsumerConfig config = KafkaConsumerConfig.builder(bootstrapServers, topic).build();
    KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, pipeline);
    consumer.start();
    return consumer;
  }

  public static void main(String[] args) throws InterruptedException {
    String bootstrapServers = Billing.arg(args, 0, "localhost:9092");
    Billing.runUntilShutdown(start(bootstrapServers, "orders", Billing.dataSource(args, 1)));
  }
}
