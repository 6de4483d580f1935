package io.idem.kafka;

import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Publishes outbox rows to Kafka: the row's destination is the topic, its ordering key (or, when
 * it has none, its idempotency key) the record key — so one key's records share a partition and
 * keep their order — and the idempotency key travels in the {@value OutboxMessage#KEY_HEADER}
 * header (UTF-8), where the next Idem consumer's default extractor finds it.
 *
 * <p>The producer is forced to {@code enable.idempotence=true} and {@code acks=all}: {@link
 * #publish} returns once every in-sync replica has the record, and the producer's own retries
 * never write it twice. A publish that timed out may still have been written: the relay then
 * publishes it again, with the same key. {@code max.block.ms} defaults to the send timeout.
 *
 * <p>What the relay makes of its failures ({@code io.idem.store.jdbc.OutboxFailures} unwraps the
 * {@code ExecutionException}): a timeout, Kafka's {@code RetriableException} family (metadata or
 * broker not available, network, not enough replicas) and {@code BrokerNotAvailableException}
 * are a destination outage, charged to no row; {@code RecordTooLargeException}, {@code
 * InvalidTopicException}, {@code TopicAuthorizationException}, {@code SerializationException} park
 * the row at once; anything else is one failed attempt of the row. Thread-safe (KafkaProducer is).
 */
public final class KafkaOutboxPublisher implements OutboxPublisher {
  /** Default wait for the broker's acknowledgement of one record: 30 s. */
  public static final Duration DEFAULT_SEND_TIMEOUT = Duration.ofSeconds(30);

  private final Producer<byte[], byte[]> producer;
  private final Duration sendTimeout;

  private KafkaOutboxPublisher(Producer<byte[], byte[]> producer, Duration sendTimeout) {
    this.producer = producer;
    this.sendTimeout = sendTimeout;
  }

  /**
   * A publisher with a producer of its own, built from {@code producerConfig} ({@code
   * bootstrap.servers} at least) with the enforced settings above and byte-array serializers.
   *
   * @throws IllegalArgumentException when {@code producerConfig} sets {@code acks} to other than
   *     {@code all}/{@code -1} or {@code enable.idempotence} to false
   */
  public static KafkaOutboxPublisher create(Map<String, Object> producerConfig) {
    return create(producerConfig, DEFAULT_SEND_TIMEOUT);
  }

  /** As {@link #create(Map)}, waiting at most {@code sendTimeout} (> 0) per record. */
  public static KafkaOutboxPublisher create(Map<String, Object> producerConfig, Duration sendTimeout) {
    Objects.requireNonNull(sendTimeout, "sendTimeout");
    if (sendTimeout.isZero() || sendTimeout.isNegative()) {
      throw new IllegalArgumentException("sendTimeout must be > 0, but was " + sendTimeout);
    }
    Map<String, Object> config = new HashMap<>(Objects.requireNonNull(producerConfig, "producerConfig"));
    Object acks = config.get(ProducerConfig.ACKS_CONFIG);
    if (acks != null && !"all".equals(String.valueOf(acks)) && !"-1".equals(String.valueOf(acks))) {
      throw new IllegalArgumentException("acks must be all for the outbox, but was " + acks);
    }
    Object idempotence = config.get(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG);
    if (idempotence != null && !Boolean.parseBoolean(String.valueOf(idempotence))) {
      throw new IllegalArgumentException("enable.idempotence must be true for the outbox, but was " + idempotence);
    }
    // send() itself blocks while the topic's metadata is unknown (broker down): at most the send
    // timeout, not the producer's 60 s default, so that an outage is seen and reported quickly.
    config.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, sendTimeout.toMillis());
    config.put(ProducerConfig.ACKS_CONFIG, "all");
    config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    return new KafkaOutboxPublisher(new KafkaProducer<>(config), sendTimeout);
  }

  /**
   * Sends the record and waits for its acknowledgement.
   *
   * @throws ExecutionException carrying Kafka's exception when the broker refused it or the
   *     producer gave up (a Kafka {@code TimeoutException} when metadata is not available)
   * @throws java.util.concurrent.TimeoutException when no acknowledgement came within the timeout
   * @throws org.apache.kafka.common.errors.TimeoutException when the topic's metadata did not
   *     come within {@code max.block.ms}
   */
  @Override
  public void publish(OutboxMessage message) throws Exception {
    String key = message.orderingKey() != null ? message.orderingKey() : message.idempotencyKey();
    ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(message.destination(),
        key.getBytes(StandardCharsets.UTF_8), message.payload());
    message.headers().forEach((name, value) -> record.headers().add(name, value.getBytes(StandardCharsets.UTF_8)));
    record.headers().add(OutboxMessage.KEY_HEADER, message.idempotencyKey().getBytes(StandardCharsets.UTF_8));
    producer.send(record).get(sendTimeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Closes the producer, waiting up to the send timeout for records in flight. */
  @Override
  public void close() {
    producer.close(sendTimeout);
  }
}
