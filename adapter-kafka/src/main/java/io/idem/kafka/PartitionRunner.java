package io.idem.kafka;

import io.idem.BatchOrder;
import io.idem.BatchResult;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.spi.Acknowledgement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the records of one partition through the pipeline, in partition order, one record at a time
 * ({@link IdempotentConsumer#process}) or one run of up to {@link KafkaConsumerConfig#maxBatchSize()}
 * records per transaction ({@link IdempotentConsumer#processBatch(List, List, BatchOrder)} with
 * {@link BatchOrder#ORDERED}), and turns each acknowledgement's decision into partition progress:
 * settled records move the offset to commit; the first record not settled is sought back to (and
 * its partition paused for the backoff), so it and every record behind it come again in order.
 * Runs on the consumer loop's thread, the only one touching the {@code KafkaConsumer}; not
 * thread-safe.
 */
final class PartitionRunner {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaIdempotentConsumer.class);

  /** How a run of records ended. */
  enum Ending {
    /** Every record was settled: the partition goes on with its next record. */
    SETTLED,
    /** A record was handed back (sought back to, maybe paused): the rest of the partition waits. */
    STOPPED,
    /** close() interrupted a handler: the record was handed back and the loop ends. */
    RELEASED
  }

  private final Consumer<byte[], byte[]> consumer;
  private final DeadLetterPublisher deadLetters;
  private final IdempotentConsumer<?> pipeline;
  private final PartitionProgress progress;
  private final Runnable commitSettled;
  private final BooleanSupplier closing;
  private final String groupId;

  /**
   * @param commitSettled commits what is settled (before a retry seeks back)
   * @param closing whether close() was called
   */
  PartitionRunner(
      Consumer<byte[], byte[]> consumer,
      DeadLetterPublisher deadLetters,
      IdempotentConsumer<?> pipeline,
      PartitionProgress progress,
      Runnable commitSettled,
      BooleanSupplier closing,
      String groupId) {
    this.consumer = consumer;
    this.deadLetters = deadLetters;
    this.pipeline = pipeline;
    this.progress = progress;
    this.commitSettled = commitSettled;
    this.closing = closing;
    this.groupId = groupId;
  }

  /** Processes one record in its own transaction. */
  Ending one(TopicPartition partition, ConsumerRecord<byte[], byte[]> record) {
    int attempt = progress.attemptFor(partition, record.offset());
    KafkaInboundMessage message = KafkaInboundMessage.of(record, attempt, Instant.now());
    KafkaAcknowledgement acknowledgement = new KafkaAcknowledgement(record, deadLetters);
    Throwable thrown = null;
    try {
      pipeline.process(message, acknowledgement);
    } catch (VirtualMachineError e) {
      // out of memory, a broken VM: stop the loop (run() logs it); this record stays uncommitted
      throw e;
    } catch (Throwable e) {
      thrown = e;
    }
    return settle(partition, record, attempt, acknowledgement, thrown);
  }

  /**
   * Processes {@code records} (consecutive records of {@code partition}, at least two) in one
   * transaction. Records the pipeline did not start ({@link BatchResult#notStarted}) are handed
   * back like a retry but without counting an attempt: the partition is sought back to the first
   * of them.
   */
  Ending batch(TopicPartition partition, List<ConsumerRecord<byte[], byte[]>> records) {
    List<InboundMessage> messages = new ArrayList<>(records.size());
    List<Acknowledgement> acks = new ArrayList<>(records.size());
    int[] attempts = new int[records.size()];
    Instant receivedAt = Instant.now();
    for (int i = 0; i < records.size(); i++) {
      ConsumerRecord<byte[], byte[]> record = records.get(i);
      attempts[i] = progress.attemptFor(partition, record.offset());
      messages.add(KafkaInboundMessage.of(record, attempts[i], receivedAt));
      acks.add(new KafkaAcknowledgement(record, deadLetters));
    }
    Throwable thrown = null;
    int started = records.size();
    try {
      BatchResult result = pipeline.processBatch(messages, acks, BatchOrder.ORDERED);
      started = result.stoppedAt();
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      // an acknowledgement threw (the first record it left undecided is the one), or a listener or
      // the key extractor threw what the pipeline does not catch
      thrown = e;
    }
    for (int i = 0; i < records.size(); i++) {
      ConsumerRecord<byte[], byte[]> record = records.get(i);
      KafkaAcknowledgement ack = (KafkaAcknowledgement) acks.get(i);
      if (ack.decision() == KafkaAcknowledgement.Decision.NONE && thrown == null && i >= started) {
        // not started: handed back as if never fetched, the attempt it had kept
        progress.failed(partition, record.offset(), attempts[i] - 1);
        seek(partition, record);
        return Ending.STOPPED;
      }
      boolean undecided = ack.decision() == KafkaAcknowledgement.Decision.NONE;
      Ending ending = settle(partition, record, attempts[i], ack, undecided ? thrown : null);
      if (ending != Ending.SETTLED) {
        return ending;
      }
    }
    return Ending.SETTLED;
  }

  /**
   * Turns the decision of {@code acknowledgement} into progress; {@code thrown} is what processing
   * threw, if anything.
   */
  private Ending settle(
      TopicPartition partition,
      ConsumerRecord<byte[], byte[]> record,
      int attempt,
      KafkaAcknowledgement acknowledgement,
      @Nullable Throwable thrown) {
    String id = record.topic() + "-" + record.partition() + "@" + record.offset();
    if (thrown != null) {
      // the acknowledgement failed (e.g. the dead-letter send), or a listener or the key extractor
      // threw something the pipeline does not catch: a failure of this record, never of the loop
      if (acknowledgement.decision() == KafkaAcknowledgement.Decision.NONE) {
        Duration delay = pipeline.retryPolicy().backoff(attempt);
        LOG.error("record {} could not be settled; it stays uncommitted and comes back in {} ms",
            id, delay.toMillis(), thrown);
        deliverAgain(partition, record, attempt, delay);
        return Ending.STOPPED;
      }
      // thrown after the acknowledgement decided (e.g. by a listener's onOutcome): the decision
      // stands — processing the record again would repeat its dead-letter copy
      LOG.error("record {} was settled ({}), then processing threw; the decision stands",
          id, acknowledgement.decision(), thrown);
    }
    switch (acknowledgement.decision()) {
      case ACK, DEAD_LETTERED -> {
        progress.settled(partition, record.offset(), record.leaderEpoch());
        return Ending.SETTLED;
      }
      case RELEASED -> {
        // close() interrupted the handler: not the record's failure and not an attempt. Nothing is
        // committed for it (no commit either while the interrupt flag is set: the client would
        // throw); the loop ends and shutdown() commits what was settled before it.
        progress.failed(partition, record.offset(), attempt - 1);
        seek(partition, record);
        if (closing.getAsBoolean()) {
          return Ending.RELEASED;
        }
        if (Thread.interrupted()) {
          // not close(): a handler that restored an interrupt it caught. The flag would fail the
          // next poll and end the loop; the record comes back, not counted
          LOG.warn("record {} was handed back because processing left the consumer thread of group {}"
              + " interrupted; the flag is cleared: the consumer is stopped by close()", id, groupId);
        }
        return Ending.STOPPED;
      }
      case RETRY -> {
        // a store outage is not the record's failure: it comes back with the same attempt
        int used = acknowledgement.countsAsAttempt() ? attempt : attempt - 1;
        deliverAgain(partition, record, used, acknowledgement.delay());
        return Ending.STOPPED;
      }
      default -> {
        Duration delay = pipeline.retryPolicy().backoff(attempt);
        LOG.error("the pipeline settled record {} neither way; it stays uncommitted and comes back in {} ms",
            id, delay.toMillis());
        deliverAgain(partition, record, attempt, delay);
        return Ending.STOPPED;
      }
    }
  }

  /** Commits what is settled, seeks back to {@code record} and pauses its partition for {@code delay}. */
  private void deliverAgain(
      TopicPartition partition, ConsumerRecord<byte[], byte[]> record, int attempt, Duration delay) {
    commitSettled.run();
    seek(partition, record);
    progress.failed(partition, record.offset(), attempt);
    if (!delay.isZero()) {
      consumer.pause(List.of(partition));
      progress.pauseUntil(partition, System.nanoTime() + delay.toNanos());
    }
  }

  /** The next poll of {@code partition} starts at {@code record}. */
  void seek(TopicPartition partition, ConsumerRecord<byte[], byte[]> record) {
    consumer.seek(partition, new OffsetAndMetadata(record.offset(), record.leaderEpoch(), ""));
  }
}
