package io.idem.kafka;

import io.idem.BrokerConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;

/**
 * The adapter kit's crash matrix consumer ({@link KafkaAdapterCompatibilityIT#crashConsumerFactory}),
 * run in the child JVM: the kit's pipeline on the MyBatis store and a {@link
 * KafkaIdempotentConsumer} on the point's topic. Property {@code bootstrap}. The session timeout
 * is the broker's minimum (6 s), so that the next life gets the crashed member's partitions soon.
 */
public final class KafkaCrashMatrixFactory implements CrashMatrixConsumerFactory {

  @Override
  public BrokerConsumer start(CrashMatrixContext context) {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(context.sessions()).build();
    KafkaConsumerConfig config = KafkaConsumerConfig
        .builder(context.property("bootstrap"), context.destination())
        .consumerProperty("session.timeout.ms", 6000)
        .consumerProperty("heartbeat.interval.ms", 500)
        .build();
    KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, context.kitPipeline(store));
    consumer.start();
    return consumer;
  }
}
