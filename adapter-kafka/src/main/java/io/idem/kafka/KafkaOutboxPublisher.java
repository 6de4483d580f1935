package io.idem.kafka;

import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;

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
   * Sends the record and waits for its acknowledgement (one row; the relay calls {@link
   * #publishAll}).
   *
   * @throws ExecutionException carrying Kafka's exception when the broker refused it or the
   *     producer gave up (a Kafka {@code TimeoutException} when metadata is not available)
   * @throws java.util.concurrent.TimeoutException when no acknowledgement came within the timeout
   * @throws org.apache.kafka.common.errors.TimeoutException when the topic's metadata did not
   *     come within {@code max.block.ms}
   */
  @Override
  public void publish(OutboxMessage message) throws Exception {
    producer.send(record(message)).get(sendTimeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /**
   * Sends every row of the batch, then waits once for their acknowledgements (all of them within
   * one send timeout from the last send): one {@code acks=all} round trip for the batch instead of
   * one per row. Per row: sent when acknowledged; failed with Kafka's exception (the {@code
   * ExecutionException} unwrapped) or a {@code java.util.concurrent.TimeoutException} when no
   * acknowledgement came in time; skipped behind an earlier failure of its ordering key.
   *
   * <p>Order: one ordering key is one record key, so one partition, and the idempotent producer
   * keeps the partition's order. A row the producer refuses at {@code send} ({@code
   * RecordTooLargeException}, a serializer's failure, no metadata in {@code max.block.ms}) stops
   * its key there: the key's later rows are not sent. A refusal only the broker gives, after later
   * records of the key were sent, leaves those as they ended (acknowledged ones are sent). A
   * metadata timeout at {@code send} (the broker unreachable) ends the batch: the rows not sent
   * yet are skipped, not each waiting {@code max.block.ms} again.
   *
   * @throws org.apache.kafka.common.KafkaException when the producer itself is unusable (closed,
   *     fenced): nothing of the batch is charged
   */
  @Override
  public List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws Exception {
    List<Future<RecordMetadata>> futures = new ArrayList<>(messages.size());
    Map<Integer, Throwable> refused = new HashMap<>();
    Set<String> stoppedKeys = new HashSet<>();
    boolean ended = false;
    for (OutboxMessage message : messages) {
      String orderingKey = message.orderingKey();
      if (ended || (orderingKey != null && stoppedKeys.contains(orderingKey))) {
        futures.add(null);
        continue;
      }
      Future<RecordMetadata> future = null;
      Throwable failedAtSend;
      try {
        future = producer.send(record(message));
        failedAtSend = failedAlready(future); // the producer's refusals come as a failed future
      } catch (SerializationException e) { // this record's, thrown by send
        failedAtSend = e;
      }
      futures.add(future);
      if (failedAtSend != null) {
        refused.put(futures.size() - 1, failedAtSend);
        if (orderingKey != null) {
          stoppedKeys.add(orderingKey);
        }
        if (failedAtSend instanceof RetriableException) {
          ended = true; // no metadata within max.block.ms: every later send would wait as long
        }
      }
    }
    long deadline = System.nanoTime() + sendTimeout.toNanos();
    List<OutboxPublishResult> results = new ArrayList<>(messages.size());
    stoppedKeys.clear();
    for (int i = 0; i < messages.size(); i++) {
      OutboxMessage message = messages.get(i);
      String orderingKey = message.orderingKey();
      Throwable failure = refused.get(i);
      Future<RecordMetadata> future = futures.get(i);
      if (failure == null && future == null) {
        results.add(OutboxPublishResult.skipped(message));
        continue;
      }
      if (failure == null) {
        failure = await(future, deadline);
      }
      if (failure == null) {
        results.add(OutboxPublishResult.sent(message));
      } else if (orderingKey != null && !stoppedKeys.add(orderingKey)) {
        results.add(OutboxPublishResult.skipped(message)); // behind its key's first failure
      } else {
        results.add(OutboxPublishResult.failed(message, failure));
      }
    }
    return results;
  }

  /** The failure of a future that failed at once (in {@code send}), else {@code null}. */
  private static @Nullable Throwable failedAlready(Future<RecordMetadata> future) {
    if (!future.isDone()) {
      return null;
    }
    try {
      future.get();
      return null;
    } catch (ExecutionException e) {
      return e.getCause() != null ? e.getCause() : e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /** Waits for the acknowledgement until {@code deadline}; its failure, or {@code null}. */
  private @Nullable Throwable await(Future<RecordMetadata> future, long deadline) throws InterruptedException {
    try {
      future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      return null;
    } catch (ExecutionException e) {
      return e.getCause() != null ? e.getCause() : e;
    } catch (java.util.concurrent.TimeoutException e) {
      return new java.util.concurrent.TimeoutException(
          "no acknowledgement from Kafka within " + sendTimeout + " (a batch's send timeout)");
    }
  }

  private static ProducerRecord<byte[], byte[]> record(OutboxMessage message) {
    String key = message.orderingKey() != null ? message.orderingKey() : message.idempotencyKey();
    ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(message.destination(),
        key.getBytes(StandardCharsets.UTF_8), message.payload());
    message.headers().forEach((name, value) -> record.headers().add(name, value.getBytes(StandardCharsets.UTF_8)));
    record.headers().add(OutboxMessage.KEY_HEADER, message.idempotencyKey().getBytes(StandardCharsets.UTF_8));
    return record;
  }

  /** Closes the producer, waiting up to the send timeout for records in flight. */
  @Override
  public void close() {
    producer.close(sendTimeout);
  }
}
