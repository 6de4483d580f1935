package io.idem.kafka;

import io.idem.IdempotentConsumer;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The thread that owns the {@code KafkaConsumer} (which is not thread-safe): polls, runs each
 * record through the pipeline in partition order, commits settled offsets, pauses partitions for
 * retry backoffs, and commits on revocation and on close. Every consumer call happens on this
 * thread except {@link Consumer#wakeup()}, which Kafka documents as safe from any thread.
 */
final class ConsumerLoop implements Runnable, ConsumerRebalanceListener {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaIdempotentConsumer.class);
  private static final Duration POLL_FAILURE_PAUSE = Duration.ofSeconds(1);
  /**
   * How long the loop may still spend committing and leaving the group once close() interrupted
   * it; close() waits {@link KafkaIdempotentConsumer#AFTER_INTERRUPT} for it.
   */
  static final Duration AFTER_INTERRUPT_GRACE = Duration.ofSeconds(3);

  private final Consumer<byte[], byte[]> consumer;
  private final DeadLetterPublisher deadLetters;
  private final IdempotentConsumer<?> pipeline;
  private final KafkaConsumerConfig config;
  private final String groupId;
  private final long batchBudgetNanos;
  private final PartitionProgress progress = new PartitionProgress();
  private final CountDownLatch stopped = new CountDownLatch(1);

  private volatile boolean closing;
  /** A record was handed back because close() interrupted its handler: the loop ends. */
  private boolean released;
  /** Set as soon as the loop ends, before the clients are closed (which may take a while). */
  private volatile boolean exited;
  private volatile long closeDeadlineNanos;
  private long lastCommitNanos = System.nanoTime();
  /** When shutdown() found the interrupt flag of close() set; 0 when it did not. */
  private long interruptedAtNanos;

  ConsumerLoop(
      Consumer<byte[], byte[]> consumer,
      DeadLetterPublisher deadLetters,
      IdempotentConsumer<?> pipeline,
      KafkaConsumerConfig config,
      String groupId) {
    this.consumer = consumer;
    this.deadLetters = deadLetters;
    this.pipeline = pipeline;
    this.config = config;
    this.groupId = groupId;
    // Half of max.poll.interval.ms for one batch leaves room for the commit and the next poll.
    this.batchBudgetNanos = config.maxPollInterval().toNanos() / 2;
  }

  @Override
  public void run() {
    try {
      consumer.subscribe(config.topics(), this);
      while (!closing && !released) {
        resumeDuePartitions();
        ConsumerRecords<byte[], byte[]> records;
        try {
          records = consumer.poll(nextPollTimeout());
        } catch (WakeupException e) {
          continue; // close() woke the poll; the loop condition decides
        } catch (InterruptException e) {
          throw e;
        } catch (KafkaException e) {
          LOG.error("poll failed for group {}; polling again in {} ms", groupId, POLL_FAILURE_PAUSE.toMillis(), e);
          Thread.sleep(POLL_FAILURE_PAUSE.toMillis());
          continue;
        }
        if (!records.isEmpty()) {
          handle(records);
        }
        if (System.nanoTime() - lastCommitNanos >= config.commitInterval().toNanos()) {
          commitSettled("batch");
        }
      }
      if (released) {
        LOG.info("consumer loop of group {} stopped by close(): the record in hand was interrupted and"
            + " handed back uncommitted, not counted as an attempt", groupId);
      }
    } catch (InterruptException | InterruptedException e) {
      Thread.currentThread().interrupt();
      LOG.warn("consumer loop of group {} interrupted; records not yet committed will be delivered again", groupId);
    } catch (Throwable e) {
      // a VirtualMachineError from processing, or a failure of the loop itself (commit, rebalance)
      LOG.error("consumer loop of group {} stopped by an unexpected error; records not yet committed"
          + " will be delivered again", groupId, e);
    } finally {
      exited = true;
      shutdown();
    }
  }

  /** Runs the records through the pipeline, partition by partition, within the batch budget. */
  private void handle(ConsumerRecords<byte[], byte[]> records) {
    long deadline = System.nanoTime() + batchBudgetNanos;
    boolean stop = false;
    for (TopicPartition partition : records.partitions()) {
      List<ConsumerRecord<byte[], byte[]>> list = records.records(partition);
      for (ConsumerRecord<byte[], byte[]> record : list) {
        if (closing || released) {
          return; // finish only the in-flight record; the rest stays uncommitted for the next owner
        }
        if (stop || System.nanoTime() - deadline > 0) {
          // bounded work per poll: fetch the rest again after polling
          stop = true;
          consumer.seek(partition, new OffsetAndMetadata(record.offset(), record.leaderEpoch(), ""));
          break;
        }
        if (!process(partition, record)) {
          break; // retried or unsettled: the partition was seeked back; later records come again
        }
      }
    }
  }

  /** Processes one record; returns whether it was settled. */
  private boolean process(TopicPartition partition, ConsumerRecord<byte[], byte[]> record) {
    int attempt = progress.attemptFor(partition, record.offset());
    KafkaInboundMessage message = KafkaInboundMessage.of(record, attempt, Instant.now());
    KafkaAcknowledgement acknowledgement = new KafkaAcknowledgement(record, deadLetters);
    try {
      pipeline.process(message, acknowledgement);
    } catch (VirtualMachineError e) {
      // out of memory, a broken VM: stop the loop (run() logs it); this record stays uncommitted
      throw e;
    } catch (Throwable e) {
      // the acknowledgement failed (e.g. the dead-letter send), or a listener or the key extractor
      // threw something the pipeline does not catch: a failure of this record, never of the loop
      if (acknowledgement.decision() == KafkaAcknowledgement.Decision.NONE) {
        Duration delay = pipeline.retryPolicy().backoff(attempt);
        LOG.error("record {} could not be settled; it stays uncommitted and comes back in {} ms",
            message.brokerMessageId(), delay.toMillis(), e);
        deliverAgain(partition, record, attempt, delay);
        return false;
      }
      // thrown after the acknowledgement decided (e.g. by a listener's onOutcome): the decision
      // stands — processing the record again would repeat its dead-letter copy
      LOG.error("record {} was settled ({}), then processing threw; the decision stands",
          message.brokerMessageId(), acknowledgement.decision(), e);
    }
    switch (acknowledgement.decision()) {
      case ACK, DEAD_LETTERED -> {
        progress.settled(partition, record.offset(), record.leaderEpoch());
        return true;
      }
      case RELEASED -> {
        // close() interrupted the handler: not the record's failure and not an attempt. Nothing is
        // committed for it (no commit either while the interrupt flag is set: the client would
        // throw); the loop ends and shutdown() commits what was settled before it.
        progress.failed(partition, record.offset(), attempt - 1);
        consumer.seek(partition, new OffsetAndMetadata(record.offset(), record.leaderEpoch(), ""));
        if (closing) {
          released = true;
        } else if (Thread.interrupted()) {
          // not close(): a handler that restored an interrupt it caught. The flag would fail the
          // next poll and end the loop; the record comes back, not counted
          LOG.warn("record {} was handed back because processing left the consumer thread of group {}"
              + " interrupted; the flag is cleared: the consumer is stopped by close()",
              message.brokerMessageId(), groupId);
        }
        return false;
      }
      case RETRY -> {
        // a store outage is not the record's failure: it comes back with the same attempt
        int used = acknowledgement.countsAsAttempt() ? attempt : attempt - 1;
        deliverAgain(partition, record, used, acknowledgement.delay());
        return false;
      }
      default -> {
        Duration delay = pipeline.retryPolicy().backoff(attempt);
        LOG.error("the pipeline settled record {} neither way; it stays uncommitted and comes back in {} ms",
            message.brokerMessageId(), delay.toMillis());
        deliverAgain(partition, record, attempt, delay);
        return false;
      }
    }
  }

  /** Commits what is settled, seeks back to {@code record} and pauses its partition for {@code delay}. */
  private void deliverAgain(
      TopicPartition partition, ConsumerRecord<byte[], byte[]> record, int attempt, Duration delay) {
    commitSettled("retry");
    consumer.seek(partition, new OffsetAndMetadata(record.offset(), record.leaderEpoch(), ""));
    progress.failed(partition, record.offset(), attempt);
    if (!delay.isZero()) {
      consumer.pause(List.of(partition));
      progress.pauseUntil(partition, System.nanoTime() + delay.toNanos());
    }
  }

  private void resumeDuePartitions() {
    List<TopicPartition> due = progress.dueForResume(System.nanoTime());
    if (!due.isEmpty()) {
      Set<TopicPartition> owned = consumer.assignment();
      List<TopicPartition> resume = due.stream().filter(owned::contains).toList();
      if (!resume.isEmpty()) {
        consumer.resume(resume);
      }
    }
  }

  private Duration nextPollTimeout() {
    long max = config.pollTimeout().toNanos();
    long untilResume = progress.nanosUntilNextResume(System.nanoTime()).orElse(max);
    return Duration.ofNanos(Math.min(max, untilResume));
  }

  /** Commits settled offsets of every owned partition. */
  private void commitSettled(String why) {
    commit(progress.toCommit(consumer.assignment()), why);
    lastCommitNanos = System.nanoTime();
  }

  private void commit(Map<TopicPartition, OffsetAndMetadata> offsets, String why) {
    if (offsets.isEmpty()) {
      return;
    }
    for (int tries = 1; ; tries++) {
      try {
        if (closing) {
          consumer.commitSync(offsets, remaining()); // close() is bounded by shutdownTimeout
        } else {
          consumer.commitSync(offsets); // bounded by default.api.timeout.ms
        }
        progress.committed(offsets);
        LOG.debug("committed {} ({})", offsets, why);
        return;
      } catch (WakeupException e) {
        // close() called wakeup() while we were not polling; the flag is cleared now
        if (tries >= 2) {
          LOG.warn("offsets {} not committed ({}): woken up twice; will retry", offsets, why);
          return;
        }
      } catch (InterruptException e) {
        throw e;
      } catch (KafkaException e) {
        LOG.warn("offsets {} not committed ({}): {}; their records will be delivered again and"
            + " skipped as duplicates unless a later commit covers them", offsets, why, e.toString());
        return;
      }
    }
  }

  // ---- rebalance callbacks: called by the consumer on this thread, inside poll/close ----------

  @Override
  public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
    commit(progress.toCommit(partitions), "revoke");
    progress.forget(partitions);
    if (!partitions.isEmpty()) {
      LOG.info("group {}: partitions revoked {}", groupId, partitions);
    }
  }

  @Override
  public void onPartitionsLost(Collection<TopicPartition> partitions) {
    LOG.warn("group {}: partitions lost {} (settled offsets not committed will be delivered again)",
        groupId, partitions);
    progress.forget(partitions);
  }

  @Override
  public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
    progress.forget(partitions);
    if (partitions.isEmpty()) {
      return;
    }
    LOG.info("group {}: partitions assigned {}", groupId, partitions);
    try {
      Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new HashSet<>(partitions));
      committed.forEach((partition, offset) -> {
        if (offset != null) {
          progress.knownCommitted(partition, offset.offset());
        }
      });
    } catch (WakeupException | InterruptException e) {
      throw e;
    } catch (KafkaException e) {
      LOG.debug("committed offsets of {} not read: {}", partitions, e.toString());
    }
  }

  // ---- shutdown ----------------------------------------------------------------------------------

  /** Asks the loop to stop after the in-flight record; safe from any thread. */
  void requestClose(long deadlineNanos) {
    closeDeadlineNanos = deadlineNanos;
    closing = true;
    consumer.wakeup();
  }

  /** True once the loop ended, for whatever reason, even while its clients are still closing. */
  boolean hasExited() {
    return exited;
  }

  /** Waits for the loop to finish; returns whether it did within {@code timeout}. */
  boolean awaitStopped(Duration timeout) throws InterruptedException {
    return stopped.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  private void shutdown() {
    // close() interrupts the loop after shutdownTimeout: the Kafka clients refuse to work while
    // the flag is set, so it is cleared to commit what was settled and leave the group, within
    // the grace close() still waits, and set again at the end
    boolean interrupted = Thread.interrupted();
    if (interrupted) {
      interruptedAtNanos = System.nanoTime();
    }
    try {
      try {
        commitSettled("close");
      } catch (RuntimeException e) {
        LOG.warn("final offset commit of group {} failed: {}", groupId, e.toString());
      }
      try {
        consumer.close(CloseOptions.timeout(remaining()));
      } catch (RuntimeException e) {
        LOG.warn("closing the Kafka consumer of group {} failed: {}", groupId, e.toString());
      }
      try {
        deadLetters.close(remaining());
      } catch (RuntimeException e) {
        LOG.warn("closing the dead-letter producer of group {} failed: {}", groupId, e.toString());
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      stopped.countDown();
    }
  }

  private Duration remaining() {
    if (!closing) {
      return config.shutdownTimeout();
    }
    long left = closeDeadlineNanos - System.nanoTime();
    if (interruptedAtNanos != 0) {
      // past shutdownTimeout: close() waits AFTER_INTERRUPT more for the clients to close
      left = Math.max(left, interruptedAtNanos + AFTER_INTERRUPT_GRACE.toNanos() - System.nanoTime());
    }
    return Duration.ofNanos(Math.max(0, left));
  }
}
