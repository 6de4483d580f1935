package io.idem.kafka;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes dead-letter copies with the adapter's idempotent {@code acks=all} producer and waits
 * for each. Used from the consumer loop's thread and, with {@link KafkaConsumerConfig#concurrency()}
 * above 1, from its workers at the same time: thread-safe, as the {@code KafkaProducer} is.
 */
final class DeadLetterPublisher {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaIdempotentConsumer.class);

  private final Producer<byte[], byte[]> producer;
  private final KafkaConsumerConfig config;

  DeadLetterPublisher(Producer<byte[], byte[]> producer, KafkaConsumerConfig config) {
    this.producer = producer;
    this.config = config;
  }

  /**
   * Sends the dead-letter copy of {@code record} and blocks until the broker acknowledged it (the
   * producer's {@code delivery.timeout.ms} bounds the wait).
   *
   * @throws IdempotencyException when the send failed or was interrupted
   */
  void publish(ConsumerRecord<byte[], byte[]> record, DeadLetterReason reason) {
    ProducerRecord<byte[], byte[]> copy =
        deadLetterRecord(config.deadLetterTopic(record.topic()), record, reason);
    String id = KafkaInboundMessage.brokerId(record.topic(), record.partition(), record.offset());
    try {
      RecordMetadata written = producer.send(copy).get();
      LOG.info("record {} dead-lettered to {}-{}@{}: {}",
          id, written.topic(), written.partition(), written.offset(), reason);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RecordTooLargeException) {
        throw new IdempotencyException("could not dead-letter record " + id + " to " + copy.topic()
            + ": the copy (the record plus its reason headers) is larger than the dead-letter topic"
            + " or the producer accepts; raise the topic's max.message.bytes and the producer's"
            + " max.request.size above the source topic's limit. The record stays uncommitted and is"
            + " retried: " + e.getCause(), e.getCause());
      }
      throw new IdempotencyException(
          "could not dead-letter record " + id + " to " + copy.topic() + ": " + e.getCause(), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IdempotencyException("interrupted while dead-lettering record " + id + " to " + copy.topic(), e);
    } catch (RuntimeException e) {
      throw new IdempotencyException("could not dead-letter record " + id + " to " + copy.topic() + ": " + e, e);
    }
  }

  /**
   * The copy of {@code record} for {@code topic}: same key and value, the original headers with
   * their raw bytes (earlier Idem reason headers replaced), then the reason's headers and the
   * original topic, partition, offset and timestamp. Partitioned by key (the producer's
   * partitioner), so the dead-letter topic may have any number of partitions.
   */
  static ProducerRecord<byte[], byte[]> deadLetterRecord(
      String topic, ConsumerRecord<byte[], byte[]> record, DeadLetterReason reason) {
    Map<String, String> reasonHeaders = reason.toHeaders();
    RecordHeaders headers = new RecordHeaders();
    for (Header header : record.headers()) {
      if (!reasonHeaders.containsKey(header.key()) && !isProvenance(header.key())) {
        headers.add(header.key(), header.value());
      }
    }
    // a record dead-lettered twice (re-published from a DLT) keeps only the latest reason
    for (String name : new String[] {DeadLetterReason.HEADER_KEY, DeadLetterReason.HEADER_EXCEPTION}) {
      headers.remove(name);
    }
    reasonHeaders.forEach((name, value) -> headers.add(name, utf8(value)));
    headers.add(KafkaIdempotentConsumer.HEADER_ORIGINAL_TOPIC, utf8(record.topic()));
    headers.add(KafkaIdempotentConsumer.HEADER_ORIGINAL_PARTITION, utf8(Integer.toString(record.partition())));
    headers.add(KafkaIdempotentConsumer.HEADER_ORIGINAL_OFFSET, utf8(Long.toString(record.offset())));
    headers.add(KafkaIdempotentConsumer.HEADER_ORIGINAL_TIMESTAMP, utf8(Long.toString(record.timestamp())));
    return new ProducerRecord<>(topic, null, null, record.key(), record.value(), headers);
  }

  private static boolean isProvenance(String name) {
    return name.equals(KafkaIdempotentConsumer.HEADER_ORIGINAL_TOPIC)
        || name.equals(KafkaIdempotentConsumer.HEADER_ORIGINAL_PARTITION)
        || name.equals(KafkaIdempotentConsumer.HEADER_ORIGINAL_OFFSET)
        || name.equals(KafkaIdempotentConsumer.HEADER_ORIGINAL_TIMESTAMP);
  }

  private static byte[] utf8(String value) {
    return value.getBytes(StandardCharsets.UTF_8);
  }

  void close(Duration timeout) {
    producer.close(timeout);
  }
}
