package io.idem.spring;

import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.springframework.core.log.LogAccessor;
import org.springframework.kafka.KafkaException;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.TopicPartitionOffset;

/**
 * The error handler of a Spring Kafka container running {@link Idempotent} methods: what Idem
 * handed back ({@link IdempotentRetryException} — a record whose backoff outlasts the call's
 * {@link KafkaBudget}, a store outage, a dead letter the DLT did not take, a shutdown) is sought
 * back and its partition paused for the rest of the backoff ({@link
 * MessageListenerContainer#pausePartition}, resumed by a scheduled task), never counted against a
 * back-off and never "recovered" (skipped); for a batch, the records Idem settled are committed
 * first. Anything else — a failure outside Idem's call, such as a deserialization error — goes to
 * the application's handler (Spring Boot's default {@code DefaultErrorHandler} when it has none),
 * as it would without Idem.
 *
 * <p>Thread-safe as the handlers it wraps: the container calls it on its consumer threads.
 */
final class IdemKafkaErrorHandler implements CommonErrorHandler {
  private static final LogAccessor LOG = new LogAccessor(IdemKafkaErrorHandler.class);

  private final CommonErrorHandler application;
  private final ScheduledExecutorService scheduler;

  IdemKafkaErrorHandler(CommonErrorHandler application, ScheduledExecutorService scheduler) {
    this.application = application;
    this.scheduler = scheduler;
  }

  /** The application's own handler, for failures that are not Idem's. */
  CommonErrorHandler application() {
    return application;
  }

  /** Always: Idem seeks what it hands back; the application's handler is emulated when it does not. */
  @Override
  public boolean seeksAfterHandling() {
    return true;
  }

  @Override
  public void handleRemaining(Exception thrown, List<ConsumerRecord<?, ?>> records, Consumer<?, ?> consumer,
      MessageListenerContainer container) {
    IdempotentRetryException retry = IdempotentRetryException.find(thrown);
    if (retry != null) {
      Map<TopicPartition, Long> seeks = firstOffsets(records);
      ConsumerRecord<?, ?> first = records.get(0);
      seekAndPause(consumer, container, seeks,
          Map.of(new TopicPartition(first.topic(), first.partition()), retry.remaining()));
      throw handedBack(retry);
    }
    if (application.seeksAfterHandling()) {
      application.handleRemaining(thrown, records, consumer, container);
      return;
    }
    // the application's handler retries in memory (or skips): the container would keep the
    // rest of the poll; Idem seeks it back instead, which Kafka then delivers again
    boolean handled = application.handleOne(thrown, records.get(0), consumer, container);
    List<ConsumerRecord<?, ?>> rest = handled ? records.subList(1, records.size()) : records;
    if (!rest.isEmpty()) {
      seekAndPause(consumer, container, firstOffsets(rest), Map.of());
    }
    if (!handled) {
      throw new KafkaException("redelivering " + org.springframework.kafka.support.KafkaUtils.format(records.get(0)),
          KafkaException.Level.DEBUG, thrown);
    }
  }

  @Override
  public void handleBatch(Exception thrown, ConsumerRecords<?, ?> data, Consumer<?, ?> consumer,
      MessageListenerContainer container, Runnable invokeListener) {
    IdempotentRetryException retry = IdempotentRetryException.find(thrown);
    if (retry instanceof KafkaBatchHandBack batch) {
      Map<TopicPartition, OffsetAndMetadata> commits = new LinkedHashMap<>();
      for (TopicPartition partition : data.partitions()) {
        List<? extends ConsumerRecord<?, ?>> records = data.records(partition);
        Long unsettled = batch.firstUnsettled().get(partition);
        long next = unsettled != null ? unsettled : records.get(records.size() - 1).offset() + 1;
        if (next > records.get(0).offset()) {
          commits.put(partition, new OffsetAndMetadata(next));
        }
      }
      if (!commits.isEmpty()) {
        Duration timeout = container.getContainerProperties().getSyncCommitTimeout();
        if (timeout == null) {
          consumer.commitSync(commits);
        } else {
          consumer.commitSync(commits, timeout);
        }
      }
      seekAndPause(consumer, container, batch.firstUnsettled(), batch.pauses());
      throw handedBack(batch);
    }
    if (retry != null) {
      // a batch call handed back as a whole (a store outage before anything settled, a shutdown)
      Map<TopicPartition, Duration> pauses = new LinkedHashMap<>();
      data.partitions().forEach(partition -> pauses.put(partition, retry.remaining()));
      Map<TopicPartition, Long> seeks = new LinkedHashMap<>();
      data.partitions().forEach(partition -> seeks.put(partition, data.records(partition).get(0).offset()));
      seekAndPause(consumer, container, seeks, pauses);
      throw handedBack(retry);
    }
    if (application.seeksAfterHandling()) {
      application.handleBatch(thrown, data, consumer, container, invokeListener);
      return;
    }
    ConsumerRecords<?, ?> remaining =
        application.handleBatchAndReturnRemaining(thrown, data, consumer, container, invokeListener);
    if (remaining != null && !remaining.isEmpty()) {
      Map<TopicPartition, Long> seeks = new LinkedHashMap<>();
      remaining.partitions().forEach(partition -> seeks.put(partition, remaining.records(partition).get(0).offset()));
      seekAndPause(consumer, container, seeks, Map.of());
      throw new KafkaException("redelivering the rest of the batch", KafkaException.Level.DEBUG, thrown);
    }
  }

  @Override
  public boolean handleOne(Exception thrown, ConsumerRecord<?, ?> record, Consumer<?, ?> consumer,
      MessageListenerContainer container) {
    return application.handleOne(thrown, record, consumer, container);
  }

  @Override
  public void handleOtherException(Exception thrown, Consumer<?, ?> consumer, MessageListenerContainer container,
      boolean batchListener) {
    application.handleOtherException(thrown, consumer, container, batchListener);
  }

  @Override
  public <K, V> ConsumerRecords<K, V> handleBatchAndReturnRemaining(Exception thrown, ConsumerRecords<?, ?> data,
      Consumer<?, ?> consumer, MessageListenerContainer container, Runnable invokeListener) {
    return application.handleBatchAndReturnRemaining(thrown, data, consumer, container, invokeListener);
  }

  @Override
  public boolean deliveryAttemptHeader() {
    return application.deliveryAttemptHeader();
  }

  @Override
  public int deliveryAttempt(TopicPartitionOffset topicPartitionOffset) {
    return application.deliveryAttempt(topicPartitionOffset);
  }

  @Override
  public void clearThreadState() {
    application.clearThreadState();
  }

  @Override
  public boolean isAckAfterHandle() {
    return application.isAckAfterHandle();
  }

  @Override
  public void setAckAfterHandle(boolean ack) {
    application.setAckAfterHandle(ack);
  }

  @Override
  public void onPartitionsAssigned(Consumer<?, ?> consumer, Collection<TopicPartition> partitions,
      Runnable publishPause) {
    application.onPartitionsAssigned(consumer, partitions, publishPause);
  }

  /** Thrown back to the container: not committed, logged by it at DEBUG only (Idem logged it). */
  private static KafkaException handedBack(IdempotentRetryException retry) {
    return new KafkaException(retry.getMessage(), KafkaException.Level.DEBUG, retry);
  }

  private static Map<TopicPartition, Long> firstOffsets(List<? extends ConsumerRecord<?, ?>> records) {
    Map<TopicPartition, Long> first = new LinkedHashMap<>();
    for (ConsumerRecord<?, ?> record : records) {
      first.putIfAbsent(new TopicPartition(record.topic(), record.partition()), record.offset());
    }
    return first;
  }

  private void seekAndPause(Consumer<?, ?> consumer, MessageListenerContainer container,
      Map<TopicPartition, Long> seeks, Map<TopicPartition, Duration> pauses) {
    seeks.forEach(consumer::seek);
    pauses.forEach((partition, pause) -> {
      if (pause.isZero() || pause.isNegative()) {
        return;
      }
      container.pausePartition(partition);
      LOG.debug(() -> "paused " + partition + " for " + pause.toMillis() + " ms (Idem's backoff)");
      scheduler.schedule(() -> container.resumePartition(partition), pause.toNanos(), TimeUnit.NANOSECONDS);
    });
  }
}
