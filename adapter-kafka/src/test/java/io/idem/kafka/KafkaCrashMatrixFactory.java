package io.idem.kafka;

import io.idem.BrokerConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;
import io.idem.testkit.CrashPoint;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The adapter kit's crash matrix consumer ({@link KafkaAdapterCompatibilityIT#crashConsumerFactory}),
 * run in the child JVM: the kit's pipeline on the MyBatis store and a {@link
 * KafkaIdempotentConsumer} on the point's topic. Properties {@code bootstrap}, {@code
 * group-protocol} ({@code classic} or {@code consumer}, KIP-848) and {@code max-batch-size} (a
 * number, or {@code default}: the builder's default, batch mode). On the classic protocol the
 * session timeout is the broker's minimum (6 s), so that the next life gets the crashed member's
 * partitions soon; the consumer protocol refuses client-side session settings, so there the
 * broker's {@code group.consumer.session.timeout.ms} (45 s by default) passes before the next life
 * gets them. The consumer's {@code commitSync} calls {@link CrashInjector#atBrokerOperation} with
 * DURING_ACK once the broker took the offsets; the producer's {@code send} of a dead-letter copy
 * waits for the broker's acknowledgement, then calls it with DEAD_LETTER_COPY_STORED (the copy is
 * in the {@code .DLT} topic, the record's offset not committed). Offsets are committed after every
 * poll of at most 5 records, so that a point's 25 deliveries make enough commits for the crash to
 * land while records are left.
 */
public final class KafkaCrashMatrixFactory implements CrashMatrixConsumerFactory {

  @Override
  public BrokerConsumer start(CrashMatrixContext context) {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(context.sessions()).build();
    String protocol = context.property("group-protocol");
    KafkaConsumerConfig.Builder config = KafkaConsumerConfig
        .builder(context.property("bootstrap"), context.destination())
        .maxPollRecords(5)
        .commitInterval(Duration.ZERO)
        .consumerProperty("group.protocol", protocol);
    String maxBatchSize = context.property("max-batch-size");
    if (!maxBatchSize.equals("default")) {
      config.maxBatchSize(Integer.parseInt(maxBatchSize));
    }
    if (protocol.equals("classic")) {
      config.consumerProperty("session.timeout.ms", 6000).consumerProperty("heartbeat.interval.ms", 500);
    }
    CrashInjector crashes = context.crashInjector();
    KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config.build(), context.kitPipeline(store),
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
        },
        properties -> new KafkaProducer<byte[], byte[]>(properties) {
          @Override
          public Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> copy) {
            Future<RecordMetadata> acknowledged = super.send(copy);
            try {
              acknowledged.get(); // the consumer's producer sends dead-letter copies only
            } catch (ExecutionException e) {
              return acknowledged; // not stored: the adapter sees the failure
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              return acknowledged;
            }
            crashes.atBrokerOperation(CrashPoint.DEAD_LETTER_COPY_STORED, "send " + copy.topic());
            return acknowledged;
          }
        });
    consumer.start();
    return consumer;
  }
}
