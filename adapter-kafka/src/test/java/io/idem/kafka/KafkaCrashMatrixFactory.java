package io.idem.kafka;

import io.idem.BrokerConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;
import io.idem.testkit.CrashPoint;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;

/**
 * The adapter kit's crash matrix consumer ({@link KafkaAdapterCompatibilityIT#crashConsumerFactory}),
 * run in the child JVM: the kit's pipeline on the MyBatis store and a {@link
 * KafkaIdempotentConsumer} on the point's topic. Property {@code bootstrap}. The session timeout
 * is the broker's minimum (6 s), so that the next life gets the crashed member's partitions soon.
 * The consumer's {@code commitSync} calls {@link CrashInjector#atBrokerOperation}, so that
 * DURING_ACK halts inside the offset commit once the broker took it (the kit runs it with
 * intercepted broker calls); offsets are committed after every poll of at most 5 records, so that
 * a point's 25 deliveries make enough commits for the crash to land while records are left.
 */
public final class KafkaCrashMatrixFactory implements CrashMatrixConsumerFactory {

  @Override
  public BrokerConsumer start(CrashMatrixContext context) {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(context.sessions()).build();
    KafkaConsumerConfig config = KafkaConsumerConfig
        .builder(context.property("bootstrap"), context.destination())
        .maxPollRecords(5)
        .commitInterval(Duration.ZERO)
        .consumerProperty("session.timeout.ms", 6000)
        .consumerProperty("heartbeat.interval.ms", 500)
        .build();
    CrashInjector crashes = context.crashInjector();
    KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, context.kitPipeline(store),
        properties -> new KafkaConsumer<byte[], byte[]>(properties) {
          @Override
          public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
            super.commitSync(offsets);
            crashes.atBrokerOperation(CrashPoint.DURING_ACK, "commitSync");
          }

          @Override
          public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
            super.commitSync(offsets, timeout);
            crashes.atBrokerOperation(CrashPoint.DURING_ACK, "commitSync");
          }
        }, KafkaProducer::new);
    consumer.start();
    return consumer;
  }
}
