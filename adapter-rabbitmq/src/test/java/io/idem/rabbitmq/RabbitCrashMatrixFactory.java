package io.idem.rabbitmq;

import io.idem.BrokerConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;
import java.time.Duration;

/**
 * The adapter kit's crash matrix consumer ({@link RabbitAdapterCompatibilityIT#crashConsumerFactory}),
 * run in the child JVM: the kit's pipeline on the MyBatis store, a RabbitMQ consumer configured
 * as {@link TestQueue#configBuilder()} configures the kit's own. Properties: {@code uri}, {@code
 * queue-type}, {@code max-batch-size} (a number, or {@code default}: the builder's default,
 * batch mode). Its channels call {@link CrashInjector#atBrokerOperation} with DURING_ACK once
 * {@code basicAck} returned, and with DEAD_LETTER_COPY_STORED once the confirm wait of a published
 * copy returned (the consumer publishes dead-letter copies only; the copy is confirmed in the
 * dead-letter queue, the original not acked).
 */
public final class RabbitCrashMatrixFactory implements CrashMatrixConsumerFactory {

  @Override
  public BrokerConsumer start(CrashMatrixContext context) throws Exception {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(context.sessions()).build();
    RabbitQueueType type = RabbitQueueType.valueOf(context.property("queue-type"));
    RabbitConsumerConfig.Builder config = RabbitConsumerConfig.builder(context.destination())
        .uri(context.property("uri"))
        .queueType(type)
        .concurrency(2)
        .connectionName("idem-test-crash-" + context.destination())
        .recoveryInterval(Duration.ofMillis(300))
        .shutdownTimeout(Duration.ofSeconds(20));
    if (type == RabbitQueueType.QUORUM) {
      config.deliveryLimit(TestQueue.DELIVERY_LIMIT);
    }
    String maxBatchSize = context.property("max-batch-size");
    if (!maxBatchSize.equals("default")) {
      config.maxBatchSize(Integer.parseInt(maxBatchSize));
    }
    RecordingConnectionFactory connections = new RecordingConnectionFactory().crashingAt(context.crashInjector());
    connections.setUri(context.property("uri"));
    RabbitIdempotentConsumer consumer =
        RabbitIdempotentConsumer.create(config.build(), context.kitPipeline(store), connections);
    consumer.start();
    return consumer;
  }
}
